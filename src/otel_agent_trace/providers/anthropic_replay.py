"""Replay for anthropic Messages (and beta Messages): the SDK objects a recorded `ChatResponse`
stands for.

`create` gets a real `Message` (the text as one `text` block, then a `tool_use` block per tool
call with the recorded ids, so the agent's `tool_result` blocks answer them); `parse` a
`ParsedMessage` from the SDK's own parser; `create(stream=True)` a stream of real
`RawMessageStreamEvent`s, made by the same expansion as the scripted server's
(`providers/wire_streams.anthropic_stream_events`); `messages.stream(...)` the SDK's own
`MessageStreamManager` over those events, so `text_stream`, `get_final_message()` and the event
helpers work as live; `with_raw_response` the same bodies as HTTP (JSON, or server-sent events)
through the SDK's own method. Thinking blocks are not recorded, so they are not replayed.
"""

from __future__ import annotations

import json
from typing import Any

from otel_agent_trace.messages import ChatRequest, ChatResponse
from otel_agent_trace.providers._replayed import answer, is_async_client, is_raw, stream
from otel_agent_trace.replay.wire import json_answer, sse_answer
from otel_agent_trace.providers.wire_streams import anthropic_stream_events, sse


def build(response: ChatResponse, request: ChatRequest, instance: Any, kwargs: dict[str, Any], method: str) -> Any:
    from anthropic._models import construct_type
    from anthropic._types import not_given

    is_async = is_async_client(instance)
    body = message_dict(response)
    if is_raw(kwargs):
        return sse_answer(sse(anthropic_stream_events(body)), is_async) if kwargs.get("stream") is True \
            else json_answer(body, is_async)
    message_type, event_type, managers, parse = _sdk("beta" in type(instance).__module__.split("."))
    if method == "stream" or kwargs.get("stream") is True:
        events = stream(
            [construct_type(type_=event_type, value=e) for e in anthropic_stream_events(body)], is_async)
        if method != "stream":
            return answer(events, is_async)
        request_it = answer(events, True) if is_async else (lambda: events)
        return managers[is_async](request_it, output_format=kwargs.get("output_format", not_given))
    result = construct_type(type_=message_type, value=body)
    if method == "parse":
        result = parse(output_format=kwargs.get("output_format", not_given), response=result)
    return answer(result, is_async)


def message_dict(response: ChatResponse) -> dict[str, Any]:
    """The recorded answer as a `message` body."""
    content: list[dict[str, Any]] = []
    if response.content:
        content.append({"type": "text", "text": response.content})
    for call in response.tool_calls:
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError:
            arguments = {}
        content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    stop = response.finish_reasons[0] if response.finish_reasons else ("tool_use" if response.tool_calls else "end_turn")
    return {"id": response.id or "msg_replayed", "type": "message", "role": "assistant",
            "model": response.model or "replayed", "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": response.input_tokens or 0, "output_tokens": response.output_tokens or 0}}


def _sdk(beta: bool) -> tuple[Any, Any, tuple[Any, Any], Any]:
    """(message type, stream event type, (sync, async) stream manager, parser) of the Messages
    API or of its beta."""
    import anthropic.lib.streaming as streaming
    import anthropic.types as types
    import anthropic.types.beta as beta_types
    from anthropic.lib._parse import _response as parsing

    if beta:
        return (beta_types.BetaMessage, beta_types.BetaRawMessageStreamEvent,
                (streaming.BetaMessageStreamManager, streaming.BetaAsyncMessageStreamManager),
                parsing.parse_beta_response)
    return (types.Message, types.RawMessageStreamEvent,
            (streaming.MessageStreamManager, streaming.AsyncMessageStreamManager), parsing.parse_response)
