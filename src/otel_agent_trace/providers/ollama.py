"""ollama's native client (`Client.chat` / `AsyncClient.chat`, `POST /api/chat`) → the normalized model.

Only translation lives here; the recorder (`recorder/calls.py`) owns the wrapper and the spans.
`options` carry the sampling parameters (`num_predict` is the output limit); `format` and `think`
are decision parameters. A streamed call (`stream=True`) returns a generator of `ChatResponse`
parts (newline-delimited JSON on the wire): its text parts are joined, its tool calls collected,
its last part (`done: true`) gives the finish reason and the token counts.

Ollama's tool calls carry no id, and a `role: tool` message names the tool (`tool_name`), not
the call. So that the recorder can pair each result with the call it answers (the inferred
`execute_tool` span, the `consumes` edge), a call's id is derived from what the model saw
before it: a digest of the hashes of the messages preceding the assistant message that carries
it, and its position there. The response's calls get the ids their assistant message will have
when the agent sends it back; a tool message answers the earliest unanswered call of the latest
assistant message with that tool name (else the earliest unanswered). Thinking text is not
stored, as for anthropic. Not replayed (docs/replay.md).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from otel_agent_trace import hashing
from otel_agent_trace.integration import Integration, patches
from otel_agent_trace.messages import ChatRequest, ChatResponse, Message, ToolCall
from otel_agent_trace.providers._translate import content_text, get as _get, plain, plain_tools
from otel_agent_trace.recorder.calls import chat_wrapper
from otel_agent_trace.recorder.stream import wrap_stream

MODULE = "ollama._client"
TARGETS = ("Client.chat", "AsyncClient.chat")

# options: Ollama's name -> the request parameter the recorder reads (chat.py writes temperature,
# top_p and max_tokens as gen_ai.request.*)
_OPTIONS = {"temperature": "temperature", "top_p": "top_p", "top_k": "top_k", "num_predict": "max_tokens",
            "seed": "seed", "stop": "stop"}
_DECISION_PARAMS = ("format", "think")


def _arguments(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(plain(arguments) or {}, separators=(",", ":"))


def _call_id(prefix: "hashlib._Hash", position: int) -> str:
    return f"call_{prefix.hexdigest()[:16]}_{position}"


def _calls(raw_calls: Any, prefix: "hashlib._Hash") -> tuple[ToolCall, ...]:
    calls = []
    for position, call in enumerate(raw_calls or ()):
        function = _get(call, "function")
        calls.append(ToolCall(id=_call_id(prefix, position), name=_get(function, "name") or "",
                              arguments=_arguments(_get(function, "arguments"))))
    return tuple(calls)


def parse_request(args: tuple, kwargs: dict[str, Any]) -> ChatRequest:
    model = args[0] if args else kwargs.get("model")
    raw = args[1] if len(args) > 1 else kwargs.get("messages")
    messages: list[Message] = []
    hashes: list[str] = []
    prefix = hashlib.sha256()
    open_calls: list[ToolCall] = []  # the latest assistant message's calls not yet answered
    for item in raw if isinstance(raw, (list, tuple)) else ():
        role = _get(item, "role") or "user"
        if role == "tool":
            call = _answered(open_calls, _get(item, "tool_name"))
            message = Message(role="tool", content=content_text(_get(item, "content")),
                              tool_call_id=call.id if call is not None else None)
        else:
            calls = _calls(_get(item, "tool_calls"), prefix.copy()) if role == "assistant" else ()
            if calls:
                open_calls = list(calls)
            message = Message(role=role, content=content_text(_get(item, "content")), tool_calls=calls)
        digest = hashing.message_hash(message)
        prefix.update(digest.encode())
        messages.append(message)
        hashes.append(digest)
    options = plain(kwargs.get("options")) or {}
    params = {name: options[key] for key, name in _OPTIONS.items() if isinstance(options, dict) and key in options}
    params.update({k: plain(kwargs[k]) for k in _DECISION_PARAMS if kwargs.get(k) is not None})
    tools = kwargs.get("tools")
    return ChatRequest(
        model=model if isinstance(model, str) and model else None,
        messages=messages,
        tools=_tools(tools) if isinstance(tools, (list, tuple)) and tools else [],
        params=params,
        stream=kwargs.get("stream") is True,
        provider="ollama",
        message_hashes=hashes,
    )


def _answered(open_calls: list[ToolCall], tool_name: Any) -> ToolCall | None:
    """The call a tool message answers (taken off `open_calls`): the earliest of its name, else the earliest."""
    if not open_calls:
        return None
    index = next((i for i, c in enumerate(open_calls) if c.name == tool_name), 0)
    return open_calls.pop(index)


_TOOLS_CACHE: dict[tuple[int, ...], tuple[Any, list[Any]]] = {}


def _tools(tools: Any) -> list[Any]:
    """Tool definitions as plain JSON; a Python function (ollama builds its schema from the
    docstring) through ollama's own conversion. Cached by identity like `plain_tools`."""
    if not any(callable(t) and not isinstance(t, dict) for t in tools):
        return plain_tools(tools)
    key = (id(tools), *map(id, tools))
    hit = _TOOLS_CACHE.get(key)
    if hit is not None and hit[0] is tools:
        return hit[1]
    from ollama._utils import convert_function_to_tool  # imported by the agent already

    copy = [plain(convert_function_to_tool(t)) if callable(t) and not isinstance(t, dict) else plain(t) for t in tools]
    if len(_TOOLS_CACHE) >= 64:
        _TOOLS_CACHE.clear()
    _TOOLS_CACHE[key] = (tools, copy)
    return copy


def parse_response(response: Any, request: ChatRequest | None = None) -> ChatResponse:
    """A whole `ChatResponse` (or the parts of a stream folded into one)."""
    message = _get(response, "message")
    reason = _get(response, "done_reason")
    return ChatResponse(
        model=_get(response, "model"),
        content=_get(message, "content") or None,
        tool_calls=list(_calls(_get(message, "tool_calls"), _prefix(request))),
        finish_reasons=[str(reason)] if reason else [],
        input_tokens=_get(response, "prompt_eval_count"),
        output_tokens=_get(response, "eval_count"),
    )


def _prefix(request: ChatRequest | None) -> "hashlib._Hash":
    """The digest of the request's messages: the prefix the response's assistant message follows."""
    prefix = hashlib.sha256()
    for digest in (request.message_hashes or []) if request is not None else []:
        prefix.update(digest.encode())
    return prefix


class StreamAccumulator:
    """Folds the parts of a streamed chat: text joined, tool calls collected, the last part's rest."""

    def __init__(self, request: ChatRequest | None):
        self.request = request
        self.text: list[str] = []
        self.calls: list[Any] = []
        self.last: Any = None

    def add(self, part: Any) -> None:
        message = _get(part, "message")
        self.text.append(_get(message, "content") or "")
        self.calls.extend(_get(message, "tool_calls") or ())
        self.last = part

    def response(self) -> ChatResponse:
        last = self.last
        folded = {"model": _get(last, "model"), "done_reason": _get(last, "done_reason"),
                  "prompt_eval_count": _get(last, "prompt_eval_count"), "eval_count": _get(last, "eval_count"),
                  "message": {"content": "".join(self.text), "tool_calls": self.calls}}
        return parse_response(folded, self.request)


def _request(instance: Any, args: tuple, kwargs: dict[str, Any]) -> ChatRequest:
    return parse_request(args, kwargs)


def _response(invocation: Any, result: Any) -> Any:
    """Stop the invocation with the parsed response, or defer it to the stream of parts."""
    request = getattr(invocation, "request", None)
    if _get(result, "message") is None and (hasattr(result, "__next__") or hasattr(result, "__anext__")):
        invocation.defer()
        return wrap_stream(result, invocation, StreamAccumulator(request), hasattr(result, "__anext__"))
    invocation.stop(parse_response(result, request))
    return result


wrapper = chat_wrapper(_request, _response, "ollama")
INTEGRATION = Integration("ollama", patches(MODULE, TARGETS, wrapper))
