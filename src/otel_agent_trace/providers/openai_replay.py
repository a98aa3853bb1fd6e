"""Replay for the Chat Completions shapes: openai's SDK objects, and litellm's, that a recorded
`ChatResponse` stands for.

A whole call gets a real `ChatCompletion` (a `ParsedChatCompletion` through `parse`, parsed by the
SDK's own parser; litellm: a `ModelResponse`); `stream=True` gets a stream of real
`ChatCompletionChunk`s (litellm: `ModelResponseStream`s): the text, each tool call, the finish
reason, usage when asked for. The recorder's stream proxy records it like a live stream. The
recording keeps the answer, not its chunking: text comes back in one chunk.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from otel_agent_trace.messages import ChatRequest, ChatResponse
from otel_agent_trace.providers._replayed import answer, is_async_client, is_raw, stream
from otel_agent_trace.replay.wire import json_answer, sse_answer
from otel_agent_trace.providers.wire_streams import chat_sse as sse


def build(response: ChatResponse, request: ChatRequest, instance: Any, kwargs: dict[str, Any], method: str) -> Any:
    """What `create`/`parse` would have returned for `response` (see module docstring)."""
    is_async = is_async_client(instance)
    if is_raw(kwargs):
        if kwargs.get("stream") is True:
            return sse_answer(sse(chunk_dicts(response, kwargs)), is_async)
        return json_answer(completion_dict(response), is_async)
    if kwargs.get("stream") is True:
        from openai.types.chat import ChatCompletionChunk

        chunks = [ChatCompletionChunk.model_validate(c) for c in chunk_dicts(response, kwargs)]
        return answer(stream(chunks, is_async), is_async)
    from openai.types.chat import ChatCompletion

    result = ChatCompletion.model_validate(completion_dict(response))
    if _is_parse(kwargs):
        from openai._types import NOT_GIVEN
        from openai.lib._parsing._completions import parse_chat_completion

        result = parse_chat_completion(response_format=kwargs["response_format"],
                                       input_tools=kwargs.get("tools", NOT_GIVEN), chat_completion=result)
    return answer(result, is_async)


def litellm_build(is_async: bool) -> Callable[..., Any]:
    """`completion` / `acompletion`: the same answer as litellm's `ModelResponse` types."""

    def build_litellm(response: ChatResponse, request: ChatRequest, instance: Any, kwargs: dict[str, Any],
                      method: str) -> Any:
        import litellm

        if kwargs.get("stream") is True:
            chunks = [litellm.ModelResponseStream(**c) for c in chunk_dicts(response, kwargs)]
            return answer(stream(chunks, is_async), is_async)
        return answer(litellm.ModelResponse(**completion_dict(response)), is_async)

    return build_litellm


def _is_parse(kwargs: dict[str, Any]) -> bool:
    """`parse(response_format=Model)`: the caller expects `.parsed` objects."""
    return isinstance(kwargs.get("response_format"), type)


def _calls(response: ChatResponse) -> list[dict[str, Any]]:
    return [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in response.tool_calls]


def _usage(response: ChatResponse) -> dict[str, int] | None:
    if response.input_tokens is None and response.output_tokens is None:
        return None
    prompt, completion = response.input_tokens or 0, response.output_tokens or 0
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _finish(response: ChatResponse) -> str:
    return response.finish_reasons[0] if response.finish_reasons else ("tool_calls" if response.tool_calls else "stop")


def completion_dict(response: ChatResponse) -> dict[str, Any]:
    """The recorded answer as a `chat.completion` body."""
    message: dict[str, Any] = {"role": "assistant", "content": response.content}
    if response.tool_calls:
        message["tool_calls"] = _calls(response)
    return {
        "id": response.id or "replayed", "object": "chat.completion", "created": int(time.time()),
        "model": response.model or "replayed",
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(response), "logprobs": None}],
        "usage": _usage(response),
    }


def chunk_dicts(response: ChatResponse, kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    """The recorded answer as `chat.completion.chunk` bodies (usage last when the request asked)."""
    head = {"id": response.id or "replayed", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": response.model or "replayed"}

    def chunk(delta: dict[str, Any] | None, finish: str | None = None, usage: Any = None) -> dict[str, Any]:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}] if delta is not None else []
        return {**head, "choices": choices, "usage": usage}

    out = [chunk({"role": "assistant", "content": response.content or ""})]
    for i, call in enumerate(_calls(response)):
        out.append(chunk({"tool_calls": [{"index": i, **call}]}))
    out.append(chunk({}, _finish(response)))
    options = kwargs.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage") and _usage(response):
        out.append(chunk(None, usage=_usage(response)))
    return out
