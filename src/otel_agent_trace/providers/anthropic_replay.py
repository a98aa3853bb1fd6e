"""Replay for anthropic Messages (and beta Messages): the SDK objects a recorded `ChatResponse`
stands for.

`create` gets a real `Message` (the text as one `text` block, then a `tool_use` block per tool
call with the recorded ids, so the agent's `tool_result` blocks answer them); `parse` a
`ParsedMessage` from the SDK's own parser; `create(stream=True)` a stream of real
`RawMessageStreamEvent`s, made by the same expansion as the scripted server's
(`testing/scripted_anthropic.stream_events`); `messages.stream(...)` the SDK's own
`MessageStreamManager` over those events, so `text_stream`, `get_final_message()` and the event
helpers work as live. Thinking blocks are not recorded, so they are not replayed.
"""

from __future__ import annotations

import json
from typing import Any

from otel_agent_trace.model import ChatRequest, ChatResponse
from otel_agent_trace.providers._replayed import answer, is_async_client, is_raw, stream


def build(response: ChatResponse, request: ChatRequest, instance: Any, kwargs: dict[str, Any], method: str) -> Any:
    if is_raw(kwargs):
        return None
    from anthropic._models import construct_type
    from anthropic._types import not_given

    is_async = is_async_client(instance)
    types = _Beta if "beta" in type(instance).__module__.split(".") else _Plain
    body = message_dict(response)
    if method == "stream" or kwargs.get("stream") is True:
        from otel_agent_trace.testing.scripted_anthropic import stream_events

        events = stream(
            [construct_type(type_=types.event(), value=e) for e in stream_events(body)], is_async)
        if method != "stream":
            return answer(events, is_async)
        manager = types.manager(is_async)
        request_it = answer(events, True) if is_async else (lambda: events)
        return manager(request_it, output_format=kwargs.get("output_format", not_given))
    result = construct_type(type_=types.message(), value=body)
    if method == "parse":
        result = types.parse(output_format=kwargs.get("output_format", not_given), response=result)
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


class _Plain:
    @staticmethod
    def message() -> Any:
        from anthropic.types import Message

        return Message

    @staticmethod
    def event() -> Any:
        from anthropic.types import RawMessageStreamEvent

        return RawMessageStreamEvent

    @staticmethod
    def manager(is_async: bool) -> Any:
        from anthropic.lib.streaming import AsyncMessageStreamManager, MessageStreamManager

        return AsyncMessageStreamManager if is_async else MessageStreamManager

    @staticmethod
    def parse(**kwargs: Any) -> Any:
        from anthropic.lib._parse._response import parse_response

        return parse_response(**kwargs)


class _Beta:
    @staticmethod
    def message() -> Any:
        from anthropic.types.beta import BetaMessage

        return BetaMessage

    @staticmethod
    def event() -> Any:
        from anthropic.types.beta import BetaRawMessageStreamEvent

        return BetaRawMessageStreamEvent

    @staticmethod
    def manager(is_async: bool) -> Any:
        from anthropic.lib.streaming import BetaAsyncMessageStreamManager, BetaMessageStreamManager

        return BetaAsyncMessageStreamManager if is_async else BetaMessageStreamManager

    @staticmethod
    def parse(**kwargs: Any) -> Any:
        from anthropic.lib._parse._response import parse_beta_response

        return parse_beta_response(**kwargs)
