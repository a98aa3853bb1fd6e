"""Replay for the OpenAI Responses API: the SDK objects a recorded `ChatResponse` stands for.

`create` gets a real `Response` (its output: the text as one `message` item, then a
`function_call` item per tool call, with the recorded call ids, so the agent's
`function_call_output` items answer them and `previous_response_id` chains on the recorded id);
`parse` a `ParsedResponse` from the SDK's own parser; `stream=True` (and `responses.stream`,
which calls `create` so) a stream of real `ResponseStreamEvent`s, made by the same expansion as
the scripted server's (`providers/wire_streams.responses_stream_events`). `with_raw_response` gets
the same bodies as HTTP (JSON, or server-sent events) through the SDK's own method.
"""

from __future__ import annotations

import time
from typing import Any

from otel_agent_trace.messages import ChatRequest, ChatResponse
from otel_agent_trace.providers._replayed import answer, is_async_client, is_raw, stream
from otel_agent_trace.providers._translate import is_omitted
from otel_agent_trace.replay.wire import json_answer, sse_answer
from otel_agent_trace.providers.wire_streams import responses_stream_events, sse

_STATUSES = ("completed", "incomplete", "failed", "in_progress", "cancelled", "queued")


def build(response: ChatResponse, request: ChatRequest, instance: Any, kwargs: dict[str, Any], method: str) -> Any:
    from openai._models import construct_type

    is_async = is_async_client(instance)
    body = response_dict(response, kwargs)
    if is_raw(kwargs):
        return sse_answer(sse(responses_stream_events(body)), is_async) if kwargs.get("stream") is True \
            else json_answer(body, is_async)
    if kwargs.get("stream") is True:
        from openai.types.responses import ResponseStreamEvent

        events = [construct_type(type_=ResponseStreamEvent, value=e) for e in responses_stream_events(body)]
        return answer(stream(events, is_async), is_async)
    from openai.types.responses import Response

    result = construct_type(type_=Response, value=body)
    if method == "parse":
        from openai._types import omit
        from openai.lib._parsing._responses import parse_response

        result = parse_response(text_format=kwargs.get("text_format", omit), input_tools=kwargs.get("tools", omit),
                                response=result)
    return answer(result, is_async)


def response_dict(response: ChatResponse, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The recorded answer as a `response` body."""
    rid = response.id or "resp_replayed"
    output: list[dict[str, Any]] = []
    if response.content:
        output.append({"type": "message", "id": f"msg_{rid}", "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": response.content, "annotations": []}]})
    for call in response.tool_calls:
        output.append({"type": "function_call", "id": f"fc_{call.id}", "call_id": call.id, "status": "completed",
                       "name": call.name, "arguments": call.arguments})
    status = response.finish_reasons[0] if response.finish_reasons and response.finish_reasons[0] in _STATUSES \
        else "completed"
    given = {k: kwargs[k] for k in ("instructions", "previous_response_id", "tools")
             if k in kwargs and not is_omitted(kwargs[k])}
    usage = None
    if response.input_tokens is not None or response.output_tokens is not None:
        tokens_in, tokens_out = response.input_tokens or 0, response.output_tokens or 0
        usage = {"input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out,
                 "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}
    return {
        "id": rid, "object": "response", "created_at": int(time.time()), "status": status,
        "model": response.model or "replayed", "output": output, "error": None, "incomplete_details": None,
        "instructions": given.get("instructions"), "metadata": {}, "parallel_tool_calls": True,
        "temperature": None, "top_p": None, "tool_choice": "auto", "tools": list(given.get("tools") or []),
        "previous_response_id": given.get("previous_response_id"), "usage": usage,
    }
