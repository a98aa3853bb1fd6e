"""anthropic Messages (`messages.create` / `stream` / `parse`, sync and async, beta) → the normalized model.

Only translation lives here; the recorder (`recorder/calls.py`) owns the wrapper and the spans.
`system` becomes a system message; an assistant's `tool_use` blocks its tool calls (input as JSON
text); a user message's `tool_result` blocks become tool messages answering those ids (an
`is_error` result reads as an error: its text is prefixed `Error:` unless it already says so),
its other blocks a user message. Thinking blocks are not stored: a request re-sending them hashes
like one without them, and their tokens are in the output tokens.

`Messages.stream` returns a manager whose request is sent on `with`: the manager is proxied so
that the chat span is current while it sends (the SDK's own `anthropic.messages.create` span
nests under it) and stopped from the SDK's message snapshot when the `with` block is left.
"""

from __future__ import annotations

import json
from typing import Any

import wrapt

from otel_agent_trace._failopen import safely
from otel_agent_trace.detectors import classify_result
from otel_agent_trace.messages import ChatRequest, ChatResponse, Message, ToolCall
from otel_agent_trace.vocabulary import Outcome
from otel_agent_trace.providers._translate import (
    awaited_parse, content_text, get as _get, is_omitted, plain, plain_tools, proxied_parse, tokens,
)
from otel_agent_trace.providers import anthropic_replay
from otel_agent_trace.recorder.calls import chat_wrapper
from otel_agent_trace.recorder.stream import wrap_stream
from otel_agent_trace.integration import Integration, patches

MODULES = ("anthropic.resources.messages.messages", "anthropic.resources.beta.messages.messages")
TARGETS = ("Messages.create", "AsyncMessages.create", "Messages.stream", "AsyncMessages.stream",
           "Messages.parse", "AsyncMessages.parse")

DECISION_PARAMS = ("temperature", "top_p", "top_k", "tool_choice", "max_tokens", "stop_sequences", "thinking",
                   "output_config")
_NOT_STORED = frozenset({"thinking", "redacted_thinking"})


def _blocks(content: Any) -> list[Any]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content)


def _tool_call(block: Any) -> ToolCall:
    arguments = _get(block, "input")
    text = arguments if isinstance(arguments, str) else json.dumps(plain(arguments) or {}, separators=(",", ":"))
    return ToolCall(id=_get(block, "id") or "", name=_get(block, "name") or "", arguments=text)


def _result_text(block: Any) -> str | None:
    text = content_text(_get(block, "content"))
    if _get(block, "is_error") and classify_result(text or "") is not Outcome.ERROR_RESULT:
        return f"Error: {text}" if text else "Error"
    return text


def to_messages(raw: Any) -> list[Message]:
    """One request message → messages: a user turn's tool results first (one tool message
    each), then the rest of its blocks; an assistant turn's text and tool_use blocks as one."""
    role = _get(raw, "role") or "user"
    blocks = _blocks(_get(raw, "content"))
    out = [Message(role="tool", content=_result_text(b), tool_call_id=_get(b, "tool_use_id"))
           for b in blocks if _get(b, "type") == "tool_result"]
    rest = [b for b in blocks if _get(b, "type") not in ("tool_result", "tool_use", *_NOT_STORED)]
    calls = tuple(_tool_call(b) for b in blocks if _get(b, "type") == "tool_use")
    if rest or calls or not out:
        out.append(Message(role=role, content=content_text(rest) if rest else None, tool_calls=calls))
    return out


def parse_request(kwargs: dict[str, Any]) -> ChatRequest:
    messages: list[Message] = []
    system = kwargs.get("system")
    if system is not None and not is_omitted(system):
        messages.append(Message(role="system", content=content_text(system if isinstance(system, str) else list(system))))
    raw = kwargs.get("messages")
    for message in raw if isinstance(raw, (list, tuple)) else ():
        messages += to_messages(message)
    tools = kwargs.get("tools")
    params = {k: plain(kwargs[k]) for k in DECISION_PARAMS if k in kwargs and not is_omitted(kwargs[k])}
    return ChatRequest(
        model=kwargs.get("model") if isinstance(kwargs.get("model"), str) else None,
        messages=messages,
        tools=plain_tools(tools) if isinstance(tools, (list, tuple)) else [],
        params=params,
        stream=bool(kwargs.get("stream") is True),
        provider="anthropic",
    )


def parse_response(message: Any) -> ChatResponse:
    blocks = _blocks(_get(message, "content"))
    texts = [_get(b, "text") or "" for b in blocks if _get(b, "type") == "text"]
    usage = _get(message, "usage")
    stop = _get(message, "stop_reason")
    return ChatResponse(
        model=_get(message, "model"),
        id=_get(message, "id"),
        content="".join(texts) or None,
        tool_calls=[_tool_call(b) for b in blocks if _get(b, "type") == "tool_use"],
        finish_reasons=[str(stop)] if stop else [],
        **tokens(usage, "input_tokens", "output_tokens", cache_read=("cache_read_input_tokens",),
                 cache_write=("cache_creation_input_tokens",), input_excludes_cache=True),
    )


_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


class StreamAccumulator:
    """Rebuilds the message from `RawMessageStreamEvent`s (`create(stream=True)`): tool input
    arrives as `input_json_delta` text."""

    def __init__(self) -> None:
        self.message: dict[str, Any] = {"content": []}
        self.blocks: dict[int, dict[str, Any]] = {}

    def add(self, event: Any) -> None:
        kind = _get(event, "type")
        if kind == "message_start":
            start = _get(event, "message")
            self.message.update(id=_get(start, "id"), model=_get(start, "model"), usage={})
            self._usage(_get(start, "usage"))
        elif kind == "content_block_start":
            block = _get(event, "content_block")
            self.blocks[_get(event, "index", 0)] = {"type": _get(block, "type"), "id": _get(block, "id"),
                                                     "name": _get(block, "name"), "text": "", "input": ""}
        elif kind == "content_block_delta":
            slot = self.blocks.get(_get(event, "index", 0))
            delta = _get(event, "delta")
            if slot is not None:
                slot["text"] += _get(delta, "text") or ""
                slot["input"] += _get(delta, "partial_json") or ""
        elif kind == "message_delta":
            self.message["stop_reason"] = _get(_get(event, "delta"), "stop_reason")
            self._usage(_get(event, "usage"))

    def _usage(self, usage: Any) -> None:
        """message_start's usage, updated by message_delta's (cumulative counts where given)."""
        kept = self.message.setdefault("usage", {})
        for key in _USAGE_KEYS:
            value = _get(usage, key)
            if value is not None:
                kept[key] = value

    def response(self) -> ChatResponse:
        blocks = [{**b, "input": b["input"] or "{}"} for _, b in sorted(self.blocks.items())]
        return parse_response({**self.message, "content": blocks})


class _StreamManagerProxy(wrapt.ObjectProxy):  # type: ignore[misc]
    """`messages.stream(...)`'s manager: sends inside our chat span, stops it on leaving `with`."""

    def __init__(self, manager: Any, invocation: Any):
        super().__init__(manager)
        self._self_invocation = invocation
        self._self_stream: Any = None

    def __enter__(self) -> Any:
        self._self_stream = self._self_send(self.__wrapped__.__enter__)
        return self._self_stream

    async def __aenter__(self) -> Any:
        self._self_stream = await self._self_send(self.__wrapped__.__aenter__)
        return self._self_stream

    def _self_send(self, enter: Any) -> Any:
        """Enter the manager (the request is sent) with our chat span current; an async
        manager's coroutine is created here and sent when awaited, so it is wrapped alike."""
        invocation = self._self_invocation
        safely("anthropic.stream.activate", invocation.activate)
        try:
            entered = enter()
        except BaseException as exc:
            invocation.fail(exc)
            raise
        finally:
            safely("anthropic.stream.deactivate", invocation.deactivate)
        if hasattr(entered, "__await__"):
            return self._self_awaited(entered)
        return entered

    async def _self_awaited(self, awaitable: Any) -> Any:
        invocation = self._self_invocation
        safely("anthropic.stream.activate", invocation.activate)
        try:
            return await awaitable
        except BaseException as exc:
            invocation.fail(exc)
            raise
        finally:
            safely("anthropic.stream.deactivate", invocation.deactivate)

    def __exit__(self, *exc_info: Any) -> Any:
        try:
            return self.__wrapped__.__exit__(*exc_info)
        finally:
            self._self_end(exc_info[1])

    async def __aexit__(self, *exc_info: Any) -> Any:
        try:
            return await self.__wrapped__.__aexit__(*exc_info)
        finally:
            self._self_end(exc_info[1])

    def _self_end(self, exc: BaseException | None) -> None:
        invocation = self._self_invocation
        if invocation.settled:
            return
        if exc is not None:
            safely("anthropic.stream.fail", invocation.fail, exc)
            return
        snapshot = safely("anthropic.stream.snapshot", _snapshot, self._self_stream)
        safely("anthropic.stream.finish", invocation.finish,
               parse_response(snapshot) if snapshot is not None else ChatResponse())


def _snapshot(stream: Any) -> Any:
    """The message the SDK accumulated so far (None before its first event)."""
    current = getattr(stream, "_current_snapshot_or_none", None)
    return current() if callable(current) else stream.current_message_snapshot


def _request(instance: Any, args: tuple, kwargs: dict[str, Any]) -> ChatRequest:
    return parse_request(kwargs)


def _response(invocation: Any, result: Any) -> Any:
    """Stop the invocation with the parsed message, or defer it to a stream (raw events), a
    stream manager (`messages.stream`) or a raw response's stream (`with_raw_response`)."""
    message = result
    if _get(result, "content") is None and hasattr(result, "http_response") and hasattr(result, "parse"):
        if getattr(result, "_is_sse_stream", False) or getattr(result, "_stream", False):
            invocation.defer()
            result.parse = proxied_parse(result.parse, invocation, StreamAccumulator)
            return result
        if not awaited_parse(result, invocation, lambda parsed: invocation.stop(parse_response(parsed))):
            invocation.stop(parse_response(result.parse()))
        return result
    if _get(message, "content") is None:
        if hasattr(message, "__iter__") or hasattr(message, "__aiter__"):
            invocation.defer()
            return wrap_stream(message, invocation, StreamAccumulator(), hasattr(message, "__aiter__"))
        if hasattr(message, "__enter__") or hasattr(message, "__aenter__"):
            invocation.defer()
            return _StreamManagerProxy(message, invocation)
    invocation.stop(parse_response(message))
    return result


wrapper = chat_wrapper(_request, _response, "anthropic", anthropic_replay.build)
INTEGRATION = Integration("anthropic", tuple(p for module in MODULES for p in patches(module, TARGETS, wrapper)))
