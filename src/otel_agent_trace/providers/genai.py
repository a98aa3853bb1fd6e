"""google-genai (`models.generate_content` / `generate_content_stream`, sync and `aio`, `chats`) →
the normalized model.

The SDK's public methods loop (automatic function calling, automatic continuation) over one
private method per HTTP request, `Models._generate_content` / `_generate_content_stream` (and
`AsyncModels`'); those are patched, so each request to the model is one chat span, whichever
public method (or `Chat.send_message`) led to it. The request's `contents` are read through the
SDK's own `t_contents` (the same Contents it sends): a `model` content is the assistant (its
`function_call` parts are tool calls), a `user` content's `function_response` parts are tool
results (`{"result": x}` reads as `x`, `{"error": e}` as an error), `config.system_instruction`
the system message. Thought parts are not stored.

Call ids: Gemini's function calls often carry none. A call without one is named by its place,
`call_{content index}_{k}`, and a function response without one answers the first unanswered
call of its name in the model content before it, so a response's calls and the next request's
results meet under the same ids, as in every other client.

Automatic function calling: the SDK runs each function through
`_extra_utils.invoke_function_from_dict_args[_async]`; those are patched to run the function as
an explicit tool (`tool_decorator.wrap_tool`), so each execution is a real `execute_tool` span
(its time, its exception) matched to the model's pending call, and under replay with
`replay_tools=recorded` is answered from the recording. Replay: `genai_replay.py`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from otel_agent_trace.messages import ChatRequest, ChatResponse, Message, ToolCall
from otel_agent_trace.providers import genai_replay
from otel_agent_trace.providers._translate import get as _get, plain
from otel_agent_trace.recorder.calls import chat_wrapper
from otel_agent_trace.recorder.stream import wrap_stream
from otel_agent_trace.integration import Integration, patches

MODULE = "google.genai.models"
TOOLS_MODULE = "google.genai._extra_utils"
TARGETS = ("Models._generate_content", "AsyncModels._generate_content")
STREAM_TARGETS = ("Models._generate_content_stream", "AsyncModels._generate_content_stream")

DECISION_PARAMS = ("temperature", "top_p", "top_k", "max_output_tokens", "stop_sequences", "candidate_count",
                   "tool_config", "thinking_config", "response_mime_type", "seed")


@dataclass
class GenaiRequest(ChatRequest):
    """A chat request that knows how many Contents it sent: the index the answer will take."""

    turn: int = 0


def _text_of(value: Any) -> str | None:
    """Text of a system instruction: a string, a Part, a Content, or a list of them."""
    if value is None or isinstance(value, str):
        return value
    parts = _get(value, "parts")
    if parts is not None:
        return _text_of(list(parts))
    if isinstance(value, (list, tuple)):
        return "\n".join(filter(None, (_text_of(v) for v in value)))
    return _get(value, "text")


def _args_text(args: Any) -> str:
    return json.dumps(plain(args) or {}, separators=(",", ":"), sort_keys=False)


def _part_kind(part: Any) -> str | None:
    """A non-text part's kind (`inline_data`, `file_data`, ...), kept as a marker."""
    dumped = part.model_dump(exclude_none=True) if hasattr(part, "model_dump") else dict(part)
    return next(iter(dumped), None)


def _calls(parts: list[Any], index: int) -> tuple[ToolCall, ...]:
    calls = []
    for k, part in enumerate(p for p in parts if _get(p, "function_call") is not None):
        call = _get(part, "function_call")
        calls.append(ToolCall(id=_get(call, "id") or f"call_{index}_{k}", name=_get(call, "name") or "",
                              arguments=_args_text(_get(call, "args"))))
    return tuple(calls)


def _result_text(response: Any) -> str | None:
    """`{"result": x}` → x as JSON text; `{"error": e}` → `Error: e`; anything else as JSON."""
    response = plain(response)
    if isinstance(response, dict) and len(response) == 1:
        if "result" in response:
            value = response["result"]
            return value if isinstance(value, str) else json.dumps(value)
        if "error" in response:
            return f"Error: {response['error']}"
    return json.dumps(response)


def _rest_text(parts: list[Any]) -> str | None:
    texts = []
    for part in parts:
        if _get(part, "thought"):
            continue  # thoughts are neither stored nor hashed
        text = _get(part, "text")
        if text is not None:
            texts.append(text)
        elif _get(part, "function_call") is None and _get(part, "function_response") is None:
            texts.append(f"[{_part_kind(part)}]")
    return "\n".join(texts) if texts else None


def to_messages(contents: list[Any]) -> list[Message]:
    messages: list[Message] = []
    unanswered: list[ToolCall] = []
    for index, content in enumerate(contents):
        parts = list(_get(content, "parts") or ())
        role = _get(content, "role") or "user"
        calls = _calls(parts, index)
        for part in parts:
            response = _get(part, "function_response")
            if response is None:
                continue
            call_id = _get(response, "id")
            if not call_id:
                name = _get(response, "name")
                match = next((c for c in unanswered if c.name == name), None)
                call_id = match.id if match else f"call_{index}_{name}"
            unanswered = [c for c in unanswered if c.id != call_id]
            messages.append(Message(role="tool", content=_result_text(_get(response, "response")), tool_call_id=call_id))
        text = _rest_text(parts)
        if text is not None or calls:
            messages.append(Message(role="assistant" if role == "model" else role, content=text, tool_calls=calls))
        if role == "model":
            unanswered = list(calls)
    return messages


def _tools(tools: Any) -> list[Any]:
    out: list[Any] = []
    for tool in tools or ():
        if callable(tool) and not hasattr(tool, "model_dump"):  # automatic function calling: a Python function
            out.append({"name": getattr(tool, "__name__", "tool"), "description": (tool.__doc__ or "").strip()})
        elif _get(tool, "function_declarations"):
            out += [plain(d) for d in _get(tool, "function_declarations")]
        else:
            out.append(plain(tool))
    return out


def parse_request(instance: Any, kwargs: dict[str, Any]) -> GenaiRequest:
    from google.genai import _transformers

    contents = _transformers.t_contents(kwargs.get("contents"))
    config = kwargs.get("config")
    messages: list[Message] = []
    system = _text_of(_get(config, "system_instruction")) if config is not None else None
    if system:
        messages.append(Message(role="system", content=system))
    messages += to_messages(contents)
    params = {k: plain(_get(config, k)) for k in DECISION_PARAMS if config is not None and _get(config, k) is not None}
    model = kwargs.get("model")
    client = getattr(instance, "_api_client", None)
    return GenaiRequest(
        model=model.rpartition("/")[2] if isinstance(model, str) else None,
        messages=messages,
        tools=_tools(_get(config, "tools")) if config is not None else [],
        params=params,
        stream=False,
        provider="gcp.vertex_ai" if getattr(client, "vertexai", False) else "gcp.gemini",
        turn=len(contents),
    )


def _finish(reason: Any) -> str | None:
    return getattr(reason, "value", None) or (str(reason) if reason else None)


def parse_response(response: Any, turn: int) -> ChatResponse:
    candidates = _get(response, "candidates") or []
    first = candidates[0] if candidates else None
    parts = list(_get(_get(first, "content"), "parts") or ()) if first is not None else []
    usage = _get(response, "usage_metadata")
    output = _get(usage, "candidates_token_count") if usage is not None else None
    thoughts = _get(usage, "thoughts_token_count") if usage is not None else None
    finish = [_finish(_get(c, "finish_reason")) for c in candidates]
    return ChatResponse(
        model=_get(response, "model_version"),
        id=_get(response, "response_id"),
        content="".join(_get(p, "text") or "" for p in parts if not _get(p, "thought")) or None,
        tool_calls=list(_calls(parts, turn)),
        finish_reasons=[f for f in finish if f],
        input_tokens=_get(usage, "prompt_token_count") if usage is not None else None,
        output_tokens=(output or 0) + (thoughts or 0) if output is not None or thoughts is not None else None,
        cache_read_tokens=_get(usage, "cached_content_token_count") if usage is not None else None,
        reasoning_tokens=thoughts,
    )


class StreamAccumulator:
    """Joins streamed `GenerateContentResponse` chunks: text in pieces, function calls whole, the
    finish reason and usage from the last chunk that has them."""

    def __init__(self, turn: int) -> None:
        self.turn = turn
        self.parts: list[Any] = []
        self.last: dict[str, Any] = {}

    def add(self, chunk: Any) -> None:
        candidates = _get(chunk, "candidates") or []
        if candidates:
            self.parts += list(_get(_get(candidates[0], "content"), "parts") or ())
            if _get(candidates[0], "finish_reason") is not None:
                self.last["finish_reason"] = _get(candidates[0], "finish_reason")
        for key in ("usage_metadata", "response_id", "model_version"):
            if _get(chunk, key) is not None:
                self.last[key] = _get(chunk, key)

    def response(self) -> ChatResponse:
        candidate = {"content": {"parts": self.parts}, "finish_reason": self.last.get("finish_reason")}
        return parse_response({**self.last, "candidates": [candidate]}, self.turn)


def _request(instance: Any, args: tuple, kwargs: dict[str, Any]) -> ChatRequest:
    return parse_request(instance, kwargs)


def _stream_request(instance: Any, args: tuple, kwargs: dict[str, Any]) -> ChatRequest:
    request = parse_request(instance, kwargs)
    request.stream = True
    return request


def _turn(invocation: Any) -> int:
    return getattr(getattr(invocation, "request", None), "turn", 0)


def _response(invocation: Any, result: Any) -> Any:
    invocation.stop(parse_response(result, _turn(invocation)))
    return result


def _stream(invocation: Any, result: Any) -> Any:
    """The sync method is a generator (the request is sent on first `next`); the async one
    returns an async iterator once awaited."""
    invocation.defer()
    return wrap_stream(result, invocation, StreamAccumulator(_turn(invocation)), hasattr(result, "__aiter__"))


wrapper = chat_wrapper(_request, _response, "genai", genai_replay.build)
stream_wrapper = chat_wrapper(_stream_request, _stream, "genai", genai_replay.build_stream)


def as_tool(wrapped: Any, instance: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
    """`invoke_function_from_dict_args[_async](args, function)`: the function runs as a recorded tool."""
    from otel_agent_trace._failopen import safely
    from otel_agent_trace.tool_decorator import wrap_tool

    if len(args) == 2:
        function = safely("genai.tool", wrap_tool, args[1])
        if function is not None:
            return wrapped(args[0], function, **kwargs)
    return wrapped(*args, **kwargs)


TOOL_TARGETS = ("invoke_function_from_dict_args", "invoke_function_from_dict_args_async")
INTEGRATION = Integration("google.genai", patches(MODULE, TARGETS, wrapper) + patches(MODULE, STREAM_TARGETS, stream_wrapper)
                          # automatic function calling runs tools here
                          + patches(TOOLS_MODULE, TOOL_TARGETS, as_tool))
