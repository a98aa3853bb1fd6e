"""One wrapper body for every patched client call, sync or async, whole or streamed.

A provider gives two translations: `begin(instance, args, kwargs)` → a `ChatRequest` (or None
to leave the call alone), and `end(invocation, result)` → what the caller gets (the result, or a
stream proxy that will stop the invocation when consumed). `chat_wrapper(begin, end)` is the
wrapt wrapper; it opens the handler's chat invocation, keeps its span current while the client
sends, fails it with whatever the call raised, and is fail-open throughout: a fault in our code
leaves the call and its result exactly as they were. A call made while another of our wrappers
is already recording (`with_raw_response` calling `create`, two wrappers stacked by another
instrumentation's ordering) is passed through untouched. Given the provider's `build`, a call
is first offered to the handler's interceptor, if one is on (interceptor.py: replay), which may
answer it instead of `wrapped`.
"""

from __future__ import annotations

import contextvars
import inspect
from typing import Any, Callable

from otel_agent_trace._failopen import safely
from otel_agent_trace.messages import ChatRequest
from otel_agent_trace.recorder.handler import Handler, installed_handler
from otel_agent_trace.recorder.interceptor import LIVE, Build
from otel_agent_trace.recorder.invocation import Invocation, NoInvocation

Begin = Callable[[Any, tuple, dict], "ChatRequest | None"]
End = Callable[[Any, Any], Any]

# set while one of our chat wrappers is inside its client call
recording: contextvars.ContextVar[bool] = contextvars.ContextVar("agent_trace_recording_chat", default=False)


def chat_wrapper(begin: Begin, end: End, where: str, build: "Build | None" = None) -> Callable[..., Any]:
    """A wrapt wrapper recording each call as one chat invocation (see module docstring)."""

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if recording.get():
            return wrapped(*args, **kwargs)
        invocation = safely(f"{where}.begin", start, _open_chat, begin, instance, args, kwargs)
        if invocation is None:
            return wrapped(*args, **kwargs)
        token = recording.set(True)
        safely(f"{where}.activate", invocation.activate)
        try:
            interceptor = _interceptor() if build is not None else None
            result = LIVE if interceptor is None else interceptor.chat(invocation, build, wrapped, instance, args,
                                                                       kwargs, where)
            if result is LIVE:
                result = wrapped(*args, **kwargs)
        except BaseException as exc:
            _leave(invocation, token, where)
            invocation.fail(exc)
            raise
        _leave(invocation, token, where)
        if inspect.isawaitable(result):  # an async client: the call happens when it is awaited
            return _awaited(invocation, result, end, where)
        return _settle(invocation, result, end, where)

    return wrapper


async def _awaited(invocation: Invocation, awaitable: Any, end: End, where: str) -> Any:
    token = recording.set(True)
    safely(f"{where}.activate", invocation.activate)
    try:
        result = await awaitable
    except BaseException as exc:  # CancelledError included: the span says how the call ended
        _leave(invocation, token, where)
        invocation.fail(exc)
        raise
    _leave(invocation, token, where)
    return _settle(invocation, result, end, where)


def start(open_invocation: Callable[[Handler, Any], Invocation], translate: Callable[[Any, tuple, dict], Any],
          instance: Any, args: tuple, kwargs: dict) -> Invocation | None:
    """The handler's invocation for one wrapped call (`open_invocation(handler, translate(...))`),
    or None to pass the call through untouched: no handler (a wrapper left behind by uninstrument),
    recording off, `translate` declined the call, or the handler records nothing. Shared by the
    chat wrapper and the framework tool wrapper (frameworks/tool_calls.py)."""
    handler = installed_handler()
    if handler is None or not handler.enabled:
        return None
    translated = translate(instance, args, kwargs)
    if translated is None:
        return None
    invocation = open_invocation(handler, translated)
    return None if isinstance(invocation, NoInvocation) else invocation


def _interceptor() -> Any:
    handler = installed_handler()
    return handler.interceptor if handler is not None else None


def _open_chat(handler: Handler, request: ChatRequest) -> Invocation:
    return handler.chat(request)


def _leave(invocation: Invocation, token: contextvars.Token, where: str) -> None:
    recording.reset(token)
    safely(f"{where}.deactivate", invocation.deactivate)


def _settle(invocation: Invocation, result: Any, end: End, where: str) -> Any:
    """What the caller gets: `end`'s answer, else the result untouched (the span still ends)."""
    out = safely(f"{where}.end", end, invocation, result)
    if out is None:
        if not invocation.settled:
            invocation.stop()
        return result
    return out
