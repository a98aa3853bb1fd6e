"""The explicit tool surface for plain functions and dispatchers.

`@otel_agent_trace.tool` (or `tool(name="...")`) records each call as an `execute_tool` span
with its arguments and result, matched to the model's tool call so inference never records it
again. `OTEL_AGENT_TRACE_TOOLS=module:function` wraps the same way by import path; a dispatcher
(`dispatch(name, arguments)` or `dispatch(tool_call)`) is recognized by its arguments and records
the tool it dispatches to. Outside a run the function is called untouched.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Iterable, TypeVar, overload

from otel_agent_trace._failopen import safely
from otel_agent_trace.recorder.handler import get_handler
from otel_agent_trace.recorder.interceptor import LIVE
from otel_agent_trace.recorder.invocation import Invocation, NoInvocation

F = TypeVar("F", bound=Callable[..., Any])
_MARK = "__agent_trace_tool__"


def describe_call(func: Callable[..., Any], name: str | None, args: tuple, kwargs: dict) -> tuple[str, Any, str | None]:
    """(tool name, arguments, call id) of one call; dispatchers name the tool in their arguments."""
    if name is None and args:
        first = args[0]
        function = getattr(first, "function", None) if not isinstance(first, dict) else first.get("function")
        if function is not None:  # dispatch(tool_call) with an SDK object or dict
            fname = function.get("name") if isinstance(function, dict) else getattr(function, "name", None)
            fargs = function.get("arguments") if isinstance(function, dict) else getattr(function, "arguments", None)
            call_id = first.get("id") if isinstance(first, dict) else getattr(first, "id", None)
            if fname:
                return fname, fargs, call_id
        run = get_handler().current_run()
        if isinstance(first, str) and run is not None and any(p.call.name == first for p in run.pending.values()):
            rest = args[1] if len(args) > 1 else kwargs
            return first, rest, None
    try:
        bound = inspect.signature(func).bind_partial(*args, **kwargs)
        arguments: Any = dict(bound.arguments)
    except (TypeError, ValueError):
        arguments = {"args": list(args), "kwargs": kwargs}
    return name or getattr(func, "__name__", "tool"), arguments, None


def _begin(func: Callable[..., Any], name: str | None, args: tuple, kwargs: dict,
           reads: tuple[str, ...], writes: tuple[str, ...]) -> Invocation:
    handler = get_handler()
    if handler.current_run() is None:
        return NoInvocation()
    tool_name, arguments, call_id = describe_call(func, name, args, kwargs)
    return handler.tool(tool_name, arguments, call_id, reads, writes)


def _intercepted(func: Callable[..., Any], name: str | None, args: tuple, kwargs: dict) -> Any:
    """The handler's interceptor's answer for this call (replay_tools=recorded), else LIVE."""
    interceptor = get_handler().interceptor
    if interceptor is None:
        return LIVE
    tool_name, arguments, _ = describe_call(func, name, args, kwargs)
    return interceptor.tool(tool_name, arguments)


def _invocation(*begin_args: Any) -> Invocation:
    return safely("tool.begin", _begin, *begin_args) or NoInvocation()


def _names(value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def wrap_tool(func: F, name: str | None = None, reads: str | Iterable[str] | None = None,
              writes: str | Iterable[str] | None = None) -> F:
    """Wrap `func` (sync or async) as a recorded tool; idempotent.

    `reads` / `writes` name the arguments holding resources (paths, keys) the tool reads or
    writes: they make `resource` edges exact instead of inferred from the tool's name.
    """
    if getattr(func, _MARK, False):
        return func
    reads_, writes_ = _names(reads), _names(writes)

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_tool(*args: Any, **kwargs: Any) -> Any:
            with _invocation(func, name, args, kwargs, reads_, writes_) as invocation:
                result = _intercepted(func, name, args, kwargs)  # replay_tools=recorded: from the recording
                if result is LIVE:
                    result = await func(*args, **kwargs)
                invocation.stop(result)
            return result

        setattr(async_tool, _MARK, True)
        return async_tool  # type: ignore[return-value]

    @functools.wraps(func)
    def sync_tool(*args: Any, **kwargs: Any) -> Any:
        with _invocation(func, name, args, kwargs, reads_, writes_) as invocation:
            result = _intercepted(func, name, args, kwargs)  # replay_tools=recorded: from the recording
            if result is LIVE:
                result = func(*args, **kwargs)
            invocation.stop(result)
        return result

    setattr(sync_tool, _MARK, True)
    return sync_tool  # type: ignore[return-value]


@overload
def tool(func: F) -> F: ...
@overload
def tool(*, name: str | None = None, reads: str | Iterable[str] | None = None,
         writes: str | Iterable[str] | None = None) -> Callable[[F], F]: ...


def tool(func: Any = None, *, name: str | None = None, reads: Any = None, writes: Any = None) -> Any:
    """Decorator: `@tool`, `@tool(name="lookup_order")`, `@tool(writes="path")`."""
    if func is None:
        return lambda f: wrap_tool(f, name, reads, writes)
    return wrap_tool(func, name, reads, writes)
