"""Agent runs: the `invoke_agent` span that holds one run's steps.

A run begins at `agent_run(name)`, at a function named in `OTEL_AGENT_TRACE_ENTRYPOINTS`, or
implicitly: a chat request that does not continue the messages of the open implicit run starts a
new one. An implicit run ends when its model gives a final answer (no tool calls); a later
request that continues the conversation starts a new run (the user's next turn).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import time
from typing import Any, Callable, Iterator

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_agent_trace._failopen import safely
from otel_agent_trace.errors import AgentBudgetExceeded
from otel_agent_trace.model import (
    ERROR_TYPE,
    ERROR_TYPE_SEMCONV,
    GEN_AI_AGENT_NAME,
    GEN_AI_OPERATION_NAME,
    LIFECYCLE_PHASE,
    OP_INVOKE_AGENT,
    RUN_IMPLICIT,
    ErrorType,
    Phase,
)
from otel_agent_trace.recorder.core import Recorder, get_recorder
from otel_agent_trace.recorder.state import RunState, explicit_run, implicit_run


def begin_run(recorder: Recorder, name: str | None, implicit: bool) -> RunState:
    """Open the run span as a child of whatever span is current (an HTTP server span, ...)."""
    attributes: dict[str, Any] = {GEN_AI_OPERATION_NAME: OP_INVOKE_AGENT}
    if name:
        attributes[GEN_AI_AGENT_NAME] = name
    if implicit:
        attributes[RUN_IMPLICIT] = True
    span = recorder.tracer.start_span(
        f"{OP_INVOKE_AGENT} {name}" if name else OP_INVOKE_AGENT, kind=SpanKind.INTERNAL, attributes=attributes
    )
    return RunState(span=span, name=name, implicit=implicit)


def end_run(recorder: Recorder, run: RunState, exc: BaseException | None = None, end_ns: int | None = None) -> None:
    """Close the open step and the run span; an exception marks the run critical."""
    from otel_agent_trace.recorder.steps import close_open_step

    with run.lock:
        if run.ended:
            return
        run.ended = True
        close_open_step(run, end_ns)
        if isinstance(exc, AgentBudgetExceeded):
            run.span.record_exception(exc)  # already marked critical, budget_exceeded, when raised
        elif exc is not None:
            mark_critical(run, ErrorType.RUN_EXCEPTION, f"{type(exc).__name__}: {exc}", exc)
        run.span.end(end_time=end_ns)


def mark_critical(run: RunState, error_type: ErrorType, description: str, exc: BaseException | None = None) -> None:
    span = run.span
    span.set_attribute(LIFECYCLE_PHASE, Phase.CRITICAL.value)
    span.set_attribute(ERROR_TYPE, error_type.value)
    span.set_attribute(ERROR_TYPE_SEMCONV, type(exc).__qualname__ if exc is not None else error_type.value)
    if exc is not None:
        span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, description))


def current_run() -> RunState | None:
    """The run the caller is inside: an explicit one, else the open implicit one."""
    run = explicit_run.get()
    if run is not None and not run.ended:
        return run
    run = implicit_run.get()
    if run is not None and not run.ended:
        return run
    return None


@contextlib.contextmanager
def agent_run(name: str | None = None, validate: Callable[[str], Any] | None = None) -> Iterator[RunState | None]:
    """`with agent_run("support"):` records everything inside as one run.

    An exception leaving the block marks the run failed (status ERROR, phase `critical`,
    `agent_trace.error.type=run_exception`) and is re-raised unchanged. `validate(final_answer)`
    judges the model's final answers: returning False or a reason string, or raising, marks the
    run critical with `final_answer_invalid`; None or True accepts.
    """
    recorder = get_recorder()
    run = safely("agent_run.begin", begin_run, recorder, name, False) if recorder.enabled else None
    if run is not None:
        run.validate = validate
    if run is None:
        yield None
        return
    token = explicit_run.set(run)
    ctx_token = otel_context.attach(trace.set_span_in_context(run.span))
    try:
        yield run
    except BaseException as exc:
        safely("agent_run.end", end_run, recorder, run, exc)
        raise
    else:
        safely("agent_run.end", end_run, recorder, run, None)
    finally:
        safely("agent_run.detach", otel_context.detach, ctx_token)
        explicit_run.reset(token)


_RUN_MARK = "__agent_trace_run__"


def wrap_as_run(func: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
    """Wrap a function (sync or async) so each call is one agent run; idempotent."""
    if getattr(func, _RUN_MARK, False):
        return func
    run_name = name or getattr(func, "__qualname__", getattr(func, "__name__", "agent"))
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_runner(*args: Any, **kwargs: Any) -> Any:
            with agent_run(run_name):
                return await func(*args, **kwargs)

        setattr(async_runner, _RUN_MARK, True)
        return async_runner

    @functools.wraps(func)
    def runner(*args: Any, **kwargs: Any) -> Any:
        with agent_run(run_name):
            return func(*args, **kwargs)

    setattr(runner, _RUN_MARK, True)
    return runner


def now_ns() -> int:
    return time.time_ns()
