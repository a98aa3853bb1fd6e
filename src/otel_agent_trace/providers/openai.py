"""OpenAI Chat Completions (`create`, `parse`, `with_raw_response`, streams) → the normalized model.

Only translation lives here; the recorder (`recorder/calls.py`) owns the wrapper and the spans.
Messages may be dicts or the SDK's pydantic objects (agents often append
`response.choices[0].message` as is), content a string or a list of parts; both normalize to the
same `Message`, hence the same hash.
"""

from __future__ import annotations

from typing import Any

from otel_agent_trace.messages import ChatRequest, ChatResponse, Message, ToolCall
from otel_agent_trace.providers._translate import (
    awaited_parse, content_text, get as _get, is_omitted, normalized, plain, plain_tools, proxied_parse, tokens,
)
from otel_agent_trace.providers import openai_replay
from otel_agent_trace.recorder.calls import chat_wrapper
from otel_agent_trace.recorder.stream import wrap_stream
from otel_agent_trace.integration import Integration, patches

MODULE = "openai.resources.chat.completions.completions"

# request parameters that change what the model decides: part of the context hash
DECISION_PARAMS = (
    "temperature", "top_p", "tool_choice", "response_format", "parallel_tool_calls", "seed", "stop",
    "max_tokens", "max_completion_tokens", "frequency_penalty", "presence_penalty", "n", "reasoning_effort",
    "functions", "function_call",
)


def tool_calls_of(raw: Any) -> tuple[ToolCall, ...]:
    calls = []
    for call in raw or ():
        function = _get(call, "function")
        if function is None:
            continue
        calls.append(ToolCall(id=_get(call, "id") or "", name=_get(function, "name") or "",
                              arguments=_get(function, "arguments") or ""))
    return tuple(calls)


def to_message(raw: Any) -> Message:
    return Message(
        role=_get(raw, "role") or "user",
        content=content_text(_get(raw, "content")),
        tool_calls=tool_calls_of(_get(raw, "tool_calls")),
        tool_call_id=_get(raw, "tool_call_id"),
        name=_get(raw, "name"),
    )


def parse_request(kwargs: dict[str, Any]) -> ChatRequest:
    messages = kwargs.get("messages")
    pairs = [normalized(m, to_message) for m in messages] if isinstance(messages, (list, tuple)) else []
    tools = kwargs.get("tools")
    params = {k: plain(kwargs[k]) for k in DECISION_PARAMS if k in kwargs and not is_omitted(kwargs[k])}
    return ChatRequest(
        model=kwargs.get("model") if isinstance(kwargs.get("model"), str) else None,
        messages=[m for m, _ in pairs],
        message_hashes=[h for _, h in pairs],
        tools=plain_tools(tools) if isinstance(tools, (list, tuple)) else [],
        params=params,
        stream=bool(kwargs.get("stream") is True),
    )


def parse_response(result: Any) -> ChatResponse:
    choices = _get(result, "choices") or []
    first = _get(choices[0], "message") if choices else None
    usage = _get(result, "usage")
    return ChatResponse(
        model=_get(result, "model"),
        id=_get(result, "id"),
        content=content_text(_get(first, "content")) if first is not None else None,
        tool_calls=list(tool_calls_of(_get(first, "tool_calls"))) if first is not None else [],
        finish_reasons=[str(_get(c, "finish_reason")) for c in choices if _get(c, "finish_reason")],
        **usage_tokens(usage),
    )


def usage_tokens(usage: Any) -> dict[str, int | None]:
    """Chat Completions usage: cached input in `prompt_tokens_details`, reasoning in
    `completion_tokens_details`."""
    return tokens(usage, "prompt_tokens", "completion_tokens", cache_read=("prompt_tokens_details", "cached_tokens"),
                  reasoning=("completion_tokens_details", "reasoning_tokens"))


class StreamAccumulator:
    """Rebuilds a `ChatResponse` from `ChatCompletionChunk`s (tool call deltas by index)."""

    def __init__(self) -> None:
        self.model: str | None = None
        self.id: str | None = None
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.finish: list[str] = []
        self.usage: Any = None

    def add(self, chunk: Any) -> None:
        self.model = self.model or _get(chunk, "model")
        self.id = self.id or _get(chunk, "id")
        if _get(chunk, "usage") is not None:
            self.usage = _get(chunk, "usage")
        for choice in _get(chunk, "choices") or ():
            if _get(choice, "index", 0) != 0:
                continue
            delta = _get(choice, "delta")
            if delta is not None:
                if _get(delta, "content"):
                    self.text.append(_get(delta, "content"))
                for tc in _get(delta, "tool_calls") or ():
                    slot = self.calls.setdefault(_get(tc, "index", 0), {"id": "", "name": "", "arguments": ""})
                    slot["id"] = slot["id"] or (_get(tc, "id") or "")
                    function = _get(tc, "function")
                    if function is not None:
                        slot["name"] += _get(function, "name") or ""
                        slot["arguments"] += _get(function, "arguments") or ""
            if _get(choice, "finish_reason"):
                self.finish.append(str(_get(choice, "finish_reason")))

    def response(self) -> ChatResponse:
        usage = self.usage
        return ChatResponse(
            model=self.model,
            id=self.id,
            content="".join(self.text) or None,
            tool_calls=[ToolCall(c["id"], c["name"], c["arguments"]) for _, c in sorted(self.calls.items())],
            finish_reasons=self.finish,
            **usage_tokens(usage),
        )


def _request(instance: Any, args: tuple, kwargs: dict[str, Any]) -> ChatRequest:
    return parse_request(kwargs)


def _response(invocation: Any, result: Any) -> Any:
    """Stop the invocation with the parsed response (or hand a stream to a proxy that will);
    return what the caller gets. `with_raw_response` gives a `LegacyAPIResponse`: its `parse()`
    is cached by the SDK, so reading it here costs the caller nothing."""
    completion = result
    if _get(result, "choices") is None and hasattr(result, "http_response") and hasattr(result, "parse"):
        if getattr(result, "_stream", False):  # the caller's parse() gets the stream: hand it our proxy
            invocation.defer()
            result.parse = proxied_parse(result.parse, invocation, StreamAccumulator)
            return result
        if awaited_parse(result, invocation, lambda parsed: invocation.stop(parse_response(parsed))):
            return result
        completion = result.parse()
    if _get(completion, "choices") is None and (hasattr(completion, "__aiter__") or hasattr(completion, "__iter__")):
        invocation.defer()
        return wrap_stream(completion, invocation, StreamAccumulator(), hasattr(completion, "__aiter__"))
    invocation.stop(parse_response(completion))
    return result


# (class.method, in MODULE): one wrapper body for all of them
TARGETS = ("Completions.create", "AsyncCompletions.create", "Completions.parse", "AsyncCompletions.parse")
wrapper = chat_wrapper(_request, _response, "openai", openai_replay.build)
INTEGRATION = Integration("openai", patches(MODULE, TARGETS, wrapper))
