"""One wrapper body for a framework's tool registry: each call an `execute_tool` span where the
tool really runs (exact timing, its exception, its result), sync or async.

A framework gives `describe(instance, args, kwargs)` → (tool name, arguments, call id or None),
or None to leave the call alone, and `result(instance, returned)` → the value to record. Without
a call id the handler matches the model's pending call by name and arguments
(`recorder/tools.start_tool`), so the result is never inferred again from the next request.
Fail-open: a fault in our code leaves the call and its result exactly as they were.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from otel_agent_trace._failopen import safely
from otel_agent_trace.recorder.calls import start
from otel_agent_trace.recorder.handler import Handler
from otel_agent_trace.recorder.invocation import Invocation

Describe = Callable[[Any, tuple, dict], "tuple[str, Any, str | None] | None"]
Result = Callable[[Any, Any], Any]


def _open_tool(handler: Handler, described: "tuple[str, Any, str | None]") -> Invocation:
    return handler.tool(*described)


def tool_wrapper(describe: Describe, result: Result, where: str) -> Callable[..., Any]:
    """A wrapt wrapper recording each call of a tool method (a coroutine function is awaited
    inside its span)."""

    def stop(invocation: Invocation, instance: Any, returned: Any) -> None:
        recorded = safely(f"{where}.result", lambda: (result(instance, returned),))
        invocation.stop(recorded[0] if recorded is not None else returned)

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if inspect.iscoroutinefunction(wrapped):
            return _awaited(wrapped, instance, args, kwargs)
        invocation = safely(f"{where}.begin", start, _open_tool, describe, instance, args, kwargs)
        if invocation is None:
            return wrapped(*args, **kwargs)
        with invocation:
            returned = wrapped(*args, **kwargs)
            stop(invocation, instance, returned)
        return returned

    async def _awaited(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        invocation = safely(f"{where}.begin", start, _open_tool, describe, instance, args, kwargs)
        if invocation is None:
            return await wrapped(*args, **kwargs)
        with invocation:
            returned = await wrapped(*args, **kwargs)
            stop(invocation, instance, returned)
        return returned

    return wrapper
