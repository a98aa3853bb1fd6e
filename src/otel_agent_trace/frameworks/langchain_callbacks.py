"""LangChain chat models on any backend, with no code change: a callback handler.

`BaseCallbackManager.__init__` is wrapped (as OpenInference's LangChain instrumentor does) so
that every callback manager carries our handler, inheritable, once. The handler records each
chat model call (`on_chat_model_start` → `on_llm_end` / `on_llm_error`, sync and async: it runs
inline, in the model call's own context) through the handler API: LangChain's messages
(`AIMessage.tool_calls`, `ToolMessage.tool_call_id`), invocation params (model, bound tools),
usage (`usage_metadata`, else `llm_output`), so an Ollama, Bedrock or custom `BaseChatModel`
gives its `agent_step N` + `chat` like a patched client.

Exactly one chat span per model call: most chat models (`ChatOpenAI`, `ChatAnthropic`) call a
client we patch, whose chat span is the richer record. So the callback decides per call, at its
end: `on_chat_model_start` opens a window (`recorder.state.ModelCall`, a ContextVar of the
call's own context, so concurrent runs and parallel nodes never share one); a chat of ours
started inside it claims it; an unclaimed call is recorded then, its step and chat spans
starting when the call started (`ChatRequest.started_ns`).
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from otel_agent_trace._failopen import safely
from otel_agent_trace.messages import ChatRequest, ChatResponse, Message, ToolCall
from otel_agent_trace.providers._translate import content_text, plain, plain_tools, tokens
from otel_agent_trace.recorder.handler import installed_handler
from otel_agent_trace.recorder.state import ModelCall, model_call

MODULE = "langchain_core.callbacks.base"
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool",
          "developer": "developer"}
_PARAMS = ("temperature", "top_p", "max_tokens", "tool_choice", "seed")
_MAX_OPEN = 4096  # calls whose end never came (a cancelled stream): forgotten beyond this

_handler_class: Any = None


# --- installing -----------------------------------------------------------------------------------
def manager_init(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> None:
    """`BaseCallbackManager.__init__`: then our handler, inheritable, unless it is there."""
    wrapped(*args, **kwargs)
    safely("langchain callbacks.add", _add, instance)


def _add(manager: Any) -> None:
    if installed_handler() is None:
        return
    handler = _the_handler()
    if handler not in manager.inheritable_handlers or handler not in manager.handlers:
        manager.add_handler(handler, True)


def _the_handler() -> Any:
    """The one handler of this process (its class built when langchain_core is imported)."""
    global _handler_class
    if _handler_class is None:
        from langchain_core.callbacks import BaseCallbackHandler

        _handler_class = type("AgentTraceCallbackHandler", (_Recorder, BaseCallbackHandler),
                              {"run_inline": True, "__module__": __name__})
        _handler_class.instance = _handler_class()
    return _handler_class.instance


# --- the handler ----------------------------------------------------------------------------------
class _Call:
    """A chat model call in flight: what it was asked (translated only if it is recorded: a
    claimed call costs a shallow copy), when, and its claim window."""

    __slots__ = ("asked", "started_ns", "window", "previous")

    def __init__(self, asked: tuple, window: ModelCall, previous: Any):
        self.asked, self.started_ns = asked, time.time_ns()
        self.window, self.previous = window, previous


class _Recorder:
    """The callback methods (mixed into a `BaseCallbackHandler` subclass). Fail-open: each one
    catches its own faults, so LangChain's result and logs are never touched by ours."""

    raise_error = False

    def __init__(self) -> None:
        self._calls: dict[Any, _Call] = {}

    def on_interrupt(self, event: Any) -> None:
        """LangGraph's graph lifecycle events: its graph callback manager is a
        `BaseCallbackManager` too, so ours is added there; nothing to record (the run's life is
        frameworks/langchain.py's), but a missing method would log a warning at each one."""

    def on_resume(self, event: Any) -> None:
        """(see `on_interrupt`)"""

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: Any, **kwargs: Any) -> None:
        safely("langchain callbacks.start", self._start, serialized, messages, run_id, kwargs)

    def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
        safely("langchain callbacks.end", self._end, run_id, response, None)

    def on_llm_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        safely("langchain callbacks.error", self._end, run_id, None, error)

    def _start(self, serialized: Any, messages: Any, run_id: Any, kwargs: dict) -> None:
        if installed_handler() is None or not messages:
            return
        asked = (serialized, list(messages[0]), dict(kwargs.get("invocation_params") or {}),
                 dict(kwargs.get("metadata") or {}))
        window = ModelCall()
        if len(self._calls) >= _MAX_OPEN:
            self._calls.pop(next(iter(self._calls)), None)
        self._calls[run_id] = _Call(asked, window, model_call.get())
        model_call.set(window)  # this context is the model call's own (the handler runs inline)

    def _end(self, run_id: Any, response: Any, error: BaseException | None) -> None:
        call = self._calls.pop(run_id, None)
        if call is None:
            return
        if model_call.get() is call.window:
            model_call.set(call.previous)
        handler = installed_handler()
        if call.window.claimed or handler is None:
            return  # a patched client underneath recorded this call
        request = to_request(*call.asked, started_ns=call.started_ns)
        answer = to_response(response, request.model) if error is None else None
        invocation = handler.chat(request)
        if error is not None:
            invocation.fail(error)
        else:
            invocation.stop(answer)


# --- translation ----------------------------------------------------------------------------------
def to_request(serialized: Any, messages: list[Any], params: dict, metadata: dict,
               started_ns: int | None = None) -> ChatRequest:
    model = (params.get("model") or params.get("model_name") or metadata.get("ls_model_name")
             or params.get("_type") or _class_name(serialized))
    tools = params.get("tools") or params.get("functions")
    return ChatRequest(
        model=str(model) if model else None,
        messages=[to_message(m) for m in messages],
        tools=plain_tools(tools) if isinstance(tools, list) else [],
        params={k: plain(params[k]) for k in _PARAMS if params.get(k) is not None},
        provider=str(metadata.get("ls_provider") or "langchain"),
        started_ns=started_ns,
    )


def _class_name(serialized: Any) -> str | None:
    ids = serialized.get("id") if isinstance(serialized, dict) else None
    return ids[-1] if isinstance(ids, list) and ids else None


def to_message(message: Any) -> Message:
    kind = getattr(message, "type", None)
    role = getattr(message, "role", None) if kind == "chat" else _ROLES.get(kind or "", kind)
    return Message(role=str(role or "user"), content=content_text(getattr(message, "content", None)) or None,
                   tool_calls=tuple(_calls(getattr(message, "tool_calls", None) or ())),
                   tool_call_id=getattr(message, "tool_call_id", None), name=getattr(message, "name", None))


def _calls(calls: Any) -> list[ToolCall]:
    return [ToolCall(id=str(c.get("id") or ""), name=str(c.get("name") or ""),
                     arguments=orjson.dumps(c.get("args") or {}, default=str).decode())
            for c in calls if isinstance(c, dict)]


def to_response(result: Any, model: str | None) -> ChatResponse:
    """The first generation of an `LLMResult` as a `ChatResponse`."""
    generations = getattr(result, "generations", None) or [[]]
    generation = generations[0][0] if generations[0] else None
    message = getattr(generation, "message", None)
    info = getattr(generation, "generation_info", None) or {}
    meta = getattr(message, "response_metadata", None) or {}
    llm_output = getattr(result, "llm_output", None) or {}
    usage = getattr(message, "usage_metadata", None)
    counts = (tokens(usage, "input_tokens", "output_tokens", cache_read=("input_token_details", "cache_read"),
                     reasoning=("output_token_details", "reasoning"))
              if usage else tokens(llm_output.get("token_usage") or llm_output.get("usage"),
                                   "prompt_tokens", "completion_tokens"))
    finish = info.get("finish_reason") or meta.get("finish_reason") or meta.get("stop_reason")
    calls = _calls(getattr(message, "tool_calls", None) or ())
    return ChatResponse(
        model=str(meta.get("model_name") or meta.get("model") or llm_output.get("model_name") or model or "") or None,
        id=getattr(message, "id", None),
        content=content_text(getattr(message, "content", None) if message is not None
                             else getattr(generation, "text", None)) or None,
        tool_calls=calls,
        finish_reasons=[str(finish)] if finish else (["tool_calls"] if calls else ["stop"]),
        **{k: v for k, v in counts.items() if v is not None},
    )
