"""Replay for OpenAI Chat Completions: the SDK objects a recorded `ChatResponse` stands for.

A whole call gets a real `ChatCompletion` (a `ParsedChatCompletion` through `parse`, parsed by the
SDK's own parser); `stream=True` gets an iterator of real `ChatCompletionChunk`s (the text, each
tool call, the finish reason, usage when asked for), which the recorder's stream proxy records
like a live stream. An async client gets the same, awaitable. The recording keeps the answer, not
its chunking: text comes back in one chunk.
"""

from __future__ import annotations

import time
from typing import Any

from otel_agent_trace.model import ChatRequest, ChatResponse

RAW_HEADER = "X-Stainless-Raw-Response"


def build(response: ChatResponse, request: ChatRequest, instance: Any, kwargs: dict[str, Any]) -> Any:
    """What `create`/`parse` would have returned for `response` (see module docstring)."""
    if RAW_HEADER in (kwargs.get("extra_headers") or {}):
        return None  # with_raw_response: an HTTP response object is not rebuilt; the call goes live
    is_async = type(instance).__name__.startswith("Async")
    if kwargs.get("stream") is True:
        chunks = _chunks(response, kwargs)
        result: Any = _AsyncChunks(chunks) if is_async else _Chunks(chunks)
    else:
        result = _completion(response)
        if _is_parse(kwargs):
            from openai._types import NOT_GIVEN
            from openai.lib._parsing._completions import parse_chat_completion

            result = parse_chat_completion(response_format=kwargs["response_format"],
                                           input_tools=kwargs.get("tools", NOT_GIVEN), chat_completion=result)
    return _ready(result) if is_async else result


def _is_parse(kwargs: dict[str, Any]) -> bool:
    """`parse(response_format=Model)`: the caller expects `.parsed` objects."""
    return isinstance(kwargs.get("response_format"), type)


async def _ready(value: Any) -> Any:
    return value


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


def _completion(response: ChatResponse) -> Any:
    from openai.types.chat import ChatCompletion

    message: dict[str, Any] = {"role": "assistant", "content": response.content}
    if response.tool_calls:
        message["tool_calls"] = _calls(response)
    return ChatCompletion.model_validate({
        "id": response.id or "replayed", "object": "chat.completion", "created": int(time.time()),
        "model": response.model or "replayed",
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(response), "logprobs": None}],
        "usage": _usage(response),
    })


def _chunks(response: ChatResponse, kwargs: dict[str, Any]) -> list[Any]:
    from openai.types.chat import ChatCompletionChunk

    head = {"id": response.id or "replayed", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": response.model or "replayed"}

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> Any:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}] if delta is not None else []
        return ChatCompletionChunk.model_validate({**head, "choices": choices, "usage": usage})

    out = [chunk({"role": "assistant", "content": response.content or ""})]
    for i, call in enumerate(_calls(response)):
        out.append(chunk({"tool_calls": [{"index": i, **call}]}))
    out.append(chunk({}, _finish(response)))
    options = kwargs.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage") and _usage(response):
        out.append(chunk(None, usage=_usage(response)))
    return out


class _Chunks:
    """A finished `Stream`'s surface: iteration, `with`, `close()`."""

    def __init__(self, chunks: list[Any]):
        self._chunks = iter(chunks)

    def __iter__(self) -> "_Chunks":
        return self

    def __next__(self) -> Any:
        return next(self._chunks)

    def __enter__(self) -> "_Chunks":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._chunks = iter(())


class _AsyncChunks:
    """An `AsyncStream`'s surface over recorded chunks."""

    def __init__(self, chunks: list[Any]):
        self._chunks = iter(chunks)

    def __aiter__(self) -> "_AsyncChunks":
        return self

    async def __anext__(self) -> Any:
        try:
            return next(self._chunks)
        except StopIteration:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> "_AsyncChunks":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        self._chunks = iter(())

