"""The one wrapper body for every framework's tool calls: each call an `execute_tool` span where
the tool really runs (exact timing, its exception, its result), sync or async.

A framework gives `describe(instance, args, kwargs)` → (tool name, arguments, call id or None),
or None to leave the call alone, and `result(instance, returned)` → the value to record (or
`Failed(exc)`: the tool reported a failure without raising). Optional: `raised(exc)` → what a
raised exception means (the exception to fail with, or a value to stop with: a deferral is no
failure), `scope()` → a context manager around the call (state the framework's other wrappers
fill), `after(invocation, instance)` → what the span's end tells the step. Without a call id the
handler matches the model's pending call by name and arguments (`recorder/tool_spans.start_tool`),
so the result is never inferred again from the next request. Fail-open: a fault in our code
leaves the call and its result exactly as they were.
"""

from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable, ContextManager

from otel_agent_trace._failopen import safely
from otel_agent_trace.recorder.calls import start
from otel_agent_trace.recorder.handler import Handler
from otel_agent_trace.recorder.invocation import Invocation

Describe = Callable[[Any, tuple, dict], "tuple[str, Any, str | None] | None"]
Result = Callable[[Any, Any], Any]
Raised = Callable[[BaseException], Any]
After = Callable[[Invocation, Any], None]


@dataclass
class Failed:
    """What `result` returns when the tool failed without raising (an error status, an exception
    the framework turned into text for the model)."""

    error: BaseException


def _open_tool(handler: Handler, described: "tuple[str, Any, str | None]") -> Invocation:
    return handler.tool(*described)


def returned_value(instance: Any, returned: Any) -> Any:
    return returned


def tool_wrapper(describe: Describe, result: Result = returned_value, where: str = "tool", *,
                 raised: Raised | None = None, scope: Callable[[], ContextManager[Any]] | None = None,
                 after: After | None = None) -> Callable[..., Any]:
    """A wrapt wrapper recording each call of a tool method (a coroutine function is awaited
    inside its span)."""

    def stop(invocation: Invocation, instance: Any, returned: Any) -> None:
        recorded = safely(f"{where}.result", lambda: (result(instance, returned),))
        value = recorded[0] if recorded is not None else returned
        if isinstance(value, Failed):
            invocation.fail(value.error)
        else:
            invocation.stop(value)

    def failed(invocation: Invocation, exc: BaseException) -> None:
        """The call raised: the span fails with what `raised` says (or stops with its value)."""
        meaning = safely(f"{where}.raised", raised, exc) if raised is not None else exc
        if isinstance(meaning, BaseException):
            invocation.fail(meaning)
        elif meaning is not None:
            invocation.stop(meaning)

    def ended(invocation: Invocation, instance: Any) -> None:
        if after is not None:
            safely(f"{where}.after", after, invocation, instance)

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if inspect.iscoroutinefunction(wrapped):
            return _awaited(wrapped, instance, args, kwargs)
        invocation = safely(f"{where}.begin", start, _open_tool, describe, instance, args, kwargs)
        if invocation is None:
            return wrapped(*args, **kwargs)
        with scope() if scope is not None else contextlib.nullcontext(), invocation:
            try:
                returned = wrapped(*args, **kwargs)
            except BaseException as exc:
                failed(invocation, exc)
                raise
            stop(invocation, instance, returned)
        ended(invocation, instance)
        return returned

    async def _awaited(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        invocation = safely(f"{where}.begin", start, _open_tool, describe, instance, args, kwargs)
        if invocation is None:
            return await wrapped(*args, **kwargs)
        with scope() if scope is not None else contextlib.nullcontext(), invocation:
            try:
                returned = await wrapped(*args, **kwargs)
            except BaseException as exc:
                failed(invocation, exc)
                raise
            stop(invocation, instance, returned)
        ended(invocation, instance)
        return returned

    return wrapper
