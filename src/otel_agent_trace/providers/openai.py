"""OpenAI Chat Completions: request/response → the normalized model, and the `create` wrappers.

Only translation and wiring live here; spans are the recorder's. Messages may be dicts or the
SDK's pydantic objects (agents often append `response.choices[0].message` as is), content a
string or a list of parts; both normalize to the same `Message`, hence the same hash.
"""

from __future__ import annotations

from typing import Any, Iterable

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_agent_trace import hashing
from otel_agent_trace._failopen import safely
from otel_agent_trace.model import ChatRequest, ChatResponse, Message, ToolCall
from otel_agent_trace.recorder.core import get_recorder
from otel_agent_trace.recorder.steps import ChatInvocation, start_chat
from otel_agent_trace.recorder.stream import wrap_stream

MODULE = "openai.resources.chat.completions.completions"
TARGETS = (("Completions.create", False), ("AsyncCompletions.create", True))

# request parameters that change what the model decides: part of the context hash
DECISION_PARAMS = (
    "temperature", "top_p", "tool_choice", "response_format", "parallel_tool_calls", "seed", "stop",
    "max_tokens", "max_completion_tokens", "frequency_penalty", "presence_penalty", "n", "reasoning_effort",
    "functions", "function_call",
)


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _plain(value: Any) -> Any:
    """A JSON-able copy of an SDK value (pydantic models, NotGiven/Omit sentinels dropped)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(exclude_none=True)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if not _is_omitted(v)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _is_omitted(value: Any) -> bool:
    return type(value).__name__ in ("NotGiven", "Omit")


def content_text(content: Any) -> str | None:
    """Text of a message content: a string, or the text parts of a list joined by newlines."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        texts = []
        for part in content:
            kind = _get(part, "type")
            if kind in ("text", "input_text", "output_text"):
                texts.append(_get(part, "text") or "")
            elif kind:
                texts.append(f"[{kind}]")
        return "\n".join(texts)
    return str(content)


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


_MESSAGE_CACHE: dict[int, tuple[Any, Any, Any, Message, str]] = {}


def _normalized(raw: Any) -> tuple[Message, str]:
    """(Message, full hash) of a request message, cached by identity: an agent re-sends the same
    message objects every turn. A hit needs the same object with the same `content` and
    `tool_calls` objects, so replacing a message's content is seen; a message edited deeper in
    place (a tool call's arguments) keeps its former hash until it is replaced."""
    content, calls = _get(raw, "content"), _get(raw, "tool_calls")
    hit = _MESSAGE_CACHE.get(id(raw))
    if hit is not None and hit[0] is raw and hit[1] is content and hit[2] is calls:
        return hit[3], hit[4]
    message = to_message(raw)
    digest = hashing.message_hash(message)
    if len(_MESSAGE_CACHE) >= 2048:  # holds the message objects: keep it small
        _MESSAGE_CACHE.clear()
    _MESSAGE_CACHE[id(raw)] = (raw, content, calls, message, digest)
    return message, digest


_TOOLS_CACHE: dict[tuple[int, ...], tuple[Any, list[Any]]] = {}


def _plain_tools(tools: Any) -> list[Any]:
    """Tool definitions as plain JSON, cached by identity: agents pass the same list every call.

    The key holds the ids of the list and of each definition (and the cache a reference to the
    list, so the ids stay valid); a list rebuilt or edited by replacement misses the cache.
    """
    key = (id(tools), *map(id, tools))
    hit = _TOOLS_CACHE.get(key)
    if hit is not None and hit[0] is tools:
        return hit[1]
    plain = _plain(list(tools))
    if len(_TOOLS_CACHE) >= 64:
        _TOOLS_CACHE.clear()
    _TOOLS_CACHE[key] = (tools, plain)
    return plain


def parse_request(kwargs: dict[str, Any]) -> ChatRequest:
    messages = kwargs.get("messages")
    pairs = [_normalized(m) for m in messages] if isinstance(messages, (list, tuple)) else []
    tools = kwargs.get("tools")
    params = {k: _plain(kwargs[k]) for k in DECISION_PARAMS if k in kwargs and not _is_omitted(kwargs[k])}
    return ChatRequest(
        model=kwargs.get("model") if isinstance(kwargs.get("model"), str) else None,
        messages=[m for m, _ in pairs],
        message_hashes=[h for _, h in pairs],
        tools=_plain_tools(tools) if isinstance(tools, (list, tuple)) else [],
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
        input_tokens=_get(usage, "prompt_tokens") if usage is not None else None,
        output_tokens=_get(usage, "completion_tokens") if usage is not None else None,
    )


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
            input_tokens=_get(usage, "prompt_tokens") if usage is not None else None,
            output_tokens=_get(usage, "completion_tokens") if usage is not None else None,
        )


def _begin(kwargs: dict[str, Any]) -> ChatInvocation | None:
    recorder = get_recorder()
    if not recorder.enabled or not is_instrumentation_enabled():
        return None
    invocation = start_chat(recorder, parse_request(kwargs))
    invocation.attach()
    return invocation


def _end(invocation: ChatInvocation, result: Any, is_async: bool) -> Any:
    """Finish the invocation (or hand a stream to a proxy that will); return what the caller gets."""
    if _get(result, "choices") is None and hasattr(result, "__iter__" if not is_async else "__aiter__"):
        return wrap_stream(result, invocation, StreamAccumulator(), is_async)
    invocation.finish(parse_response(result))
    return result


def wrap_create_sync(wrapped: Any, instance: Any, args: Iterable[Any], kwargs: dict[str, Any]) -> Any:
    invocation = safely("openai.begin", _begin, kwargs)
    if invocation is None:
        return wrapped(*args, **kwargs)
    try:
        result = wrapped(*args, **kwargs)
    except BaseException as exc:
        safely("openai.detach", invocation.detach)
        safely("openai.fail", invocation.fail, exc)
        raise
    safely("openai.detach", invocation.detach)
    wrapped_result = safely("openai.end", _end, invocation, result, False)
    return result if wrapped_result is None else wrapped_result


async def wrap_create_async(wrapped: Any, instance: Any, args: Iterable[Any], kwargs: dict[str, Any]) -> Any:
    invocation = safely("openai.begin", _begin, kwargs)
    if invocation is None:
        return await wrapped(*args, **kwargs)
    try:
        result = await wrapped(*args, **kwargs)
    except BaseException as exc:
        safely("openai.detach", invocation.detach)
        safely("openai.fail", invocation.fail, exc)
        raise
    safely("openai.detach", invocation.detach)
    wrapped_result = safely("openai.end", _end, invocation, result, True)
    return result if wrapped_result is None else wrapped_result
