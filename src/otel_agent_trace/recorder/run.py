"""Agent runs: the `invoke_agent` span that holds one run's steps, and everything the run has
recorded so far.

A run begins at `agent_run(name)` (or `handler.run(name)`), at a function named in
`OTEL_AGENT_TRACE_ENTRYPOINTS`, or implicitly: a chat request that continues no open run's
conversation starts one (`handler.py` says when an implicit run ends). An exception leaving an
explicit run, or ending the program after an implicit one, marks it failed: phase `critical`.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode, format_span_id

from otel_agent_trace import hashing
from otel_agent_trace.causes import cause
from otel_agent_trace.errors import AgentBudgetExceeded
from otel_agent_trace.model import (
    ERROR_TYPE,
    ERROR_TYPE_SEMCONV,
    GEN_AI_AGENT_NAME,
    GEN_AI_OPERATION_NAME,
    INSTRUCTION_ROLES,
    LIFECYCLE_PHASE,
    OP_INVOKE_AGENT,
    RUN_ENDED_BY,
    RUN_IMPLICIT,
    RUN_OUTCOME_OF,
    RUN_OUTCOME_SPAN,
    ChatRequest,
    ErrorType,
    Phase,
    Relation,
)
from otel_agent_trace.recorder.invocation import Invocation
from otel_agent_trace.recorder.links import Dependencies
from otel_agent_trace.recorder.state import PendingCall, StepState, ToolRecord, explicit_run

if TYPE_CHECKING:
    from otel_agent_trace.recorder.handler import Handler


class RunInvocation(Invocation):
    """One agent run: its span and its state, guarded by `lock` (tools may run in threads)."""

    kind = "run"

    def __init__(self, handler: "Handler", name: str | None, implicit: bool,
                 validate: Callable[[str], Any] | None = None, delegated_by: Any = None,
                 start_ns: int | None = None):
        super().__init__()
        self.handler = handler
        self.name = name
        self.implicit = implicit
        self.validate = validate
        attributes: dict[str, Any] = {GEN_AI_OPERATION_NAME: OP_INVOKE_AGENT}
        if name:
            attributes[GEN_AI_AGENT_NAME] = name
        if implicit:
            attributes[RUN_IMPLICIT] = True
        # a child of whatever span is current (an HTTP server span, ...); a sub-agent's run is a
        # child of the step or tool that delegated to it, linked `delegated_to` (delegation.py)
        parent, links = None, None
        if delegated_by is not None:
            deps = Dependencies()
            deps.add(delegated_by.get_span_context(), Relation.DELEGATED_TO)
            attributes.update(deps.attributes())
            parent, links = trace.set_span_in_context(delegated_by), deps.links()
        self.span = handler.tracer.start_span(
            f"{OP_INVOKE_AGENT} {name}" if name else OP_INVOKE_AGENT, context=parent, kind=SpanKind.INTERNAL,
            attributes=attributes, links=links, start_time=start_ns)
        self.started = time.monotonic()
        self.steps: list[StepState] = []
        self.open_step: StepState | None = None
        self.pending: dict[str, PendingCall] = {}
        self.records_by_call_id: dict[str, ToolRecord] = {}
        self.records: list[ToolRecord] = []
        self.seen_messages: set[str] = set()
        self.message_roles: dict[str, str] = {}  # short hash -> role
        self.last_request_hashes: list[str] = []
        self.last_output_hash: str | None = None
        self.call_counts: Counter = Counter()
        self.tokens = 0
        # value flow (flow.py): value key -> the first tool result it appeared in
        self.value_producers: dict[str, ToolRecord] = {}
        # values the model legitimately received: tool results, user, system and developer messages
        self.known_values: set[str] = set()
        self.resource_writers: dict[str, ToolRecord] = {}
        self.budget_exceeded: str | None = None
        self.answered_ns: int | None = None  # when the model last gave a final answer
        self.failed_call_ns: int | None = None  # when a model call last failed (its error reached the program)
        self.last_active_ns = time.time_ns()
        self.tools_recorded: Any = None  # the tool list last written as gen_ai.tool.definitions
        self.thread: int | None = None  # the thread of its latest LLM call (implicit runs' end)
        self.task: Any = None  # a weak reference to the asyncio task of its latest LLM call, if any
        self.lock = threading.RLock()
        self._run_token: Any = None
        if not implicit:
            handler.explicit_runs.add(self)  # ended first if the provider shuts down meanwhile

    @property
    def ended(self) -> bool:
        return self.settled

    @property
    def over(self) -> bool:
        """The program has what it gets from this run: the model answered, or its last call
        failed with nothing pending (a flush ends such a run, `Handler.end_for_flush`)."""
        return self.answered_ns is not None or (
            self.failed_call_ns is not None and self.failed_call_ns >= self.last_active_ns and not self.open_calls())

    # --- as a context manager: the explicit run of the code inside ------------------------------
    def __enter__(self) -> "RunInvocation":
        super().__enter__()
        self._run_token = explicit_run.set(self)
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        if self._run_token is not None:
            explicit_run.reset(self._run_token)
            self._run_token = None
        return super().__exit__(exc_type, exc, tb)

    # --- ending ---------------------------------------------------------------------------------
    def end(self, exc: BaseException | None = None, end_ns: int | None = None) -> None:
        """Close the open step and the run span; an exception marks the run critical."""
        if exc is None:
            self.stop(end_ns)
        else:
            self.fail(exc)

    def _on_stop(self, end_ns: int | None = None) -> None:
        with self.lock:
            self.close_open_step(end_ns)
            self.span.end(end_time=end_ns)

    def _on_fail(self, exc: BaseException) -> None:
        with self.lock:
            self.close_open_step()
            if isinstance(exc, AgentBudgetExceeded):
                self.span.record_exception(exc)  # already marked critical, budget_exceeded, when raised
            else:
                self.mark_critical(ErrorType.RUN_EXCEPTION, f"{type(exc).__name__}: {exc}", exc)
            self.span.end()

    def end_by_shutdown(self) -> None:
        """The tracer provider shuts down while this run is open: it ends now, saying why (its
        outcome is unknown: status unset), rather than after the provider can export it."""
        if not self.settled:
            self.span.set_attribute(RUN_ENDED_BY, "provider_shutdown")
            self.stop()

    def report_outcome(self, exc: BaseException) -> None:
        """`exc` failed this run after a flush had exported it: a `run_outcome` span under the
        run says so (an ended span cannot change); the analyzer reads the run as failed."""
        span = self.handler.tracer.start_span(RUN_OUTCOME_SPAN, context=trace.set_span_in_context(self.span),
                                              kind=SpanKind.INTERNAL,
                                              attributes={RUN_OUTCOME_OF: format_span_id(self.span.get_span_context().span_id)})
        exc = cause(exc)
        span.set_attribute(LIFECYCLE_PHASE, Phase.CRITICAL.value)
        span.set_attribute(ERROR_TYPE, ErrorType.RUN_EXCEPTION.value)
        span.set_attribute(ERROR_TYPE_SEMCONV, type(exc).__qualname__)
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        span.end()

    def mark_critical(self, error_type: ErrorType, description: str, exc: BaseException | None = None) -> None:
        span = self.span
        span.set_attribute(LIFECYCLE_PHASE, Phase.CRITICAL.value)
        span.set_attribute(ERROR_TYPE, error_type.value)
        span.set_attribute(ERROR_TYPE_SEMCONV, type(exc).__qualname__ if exc is not None else error_type.value)
        if exc is not None:
            span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, description))

    # --- steps ----------------------------------------------------------------------------------
    def close_open_step(self, end_ns: int | None = None) -> None:
        step = self.open_step
        if step is not None:
            self.open_step = None
            step.span.end(end_time=end_ns)

    def open_calls(self) -> list[PendingCall]:
        """The tool calls the model requested that no tool has run yet, oldest first."""
        with self.lock:
            return [p for p in self.pending.values() if p.record is None]

    def step_for_call(self, call_id: str | None) -> StepState | None:
        pending = self.pending.get(call_id) if call_id else None
        return pending.step if pending else None

    def continues(self, request: ChatRequest, hashes: list[str]) -> bool:
        """Does this request go on with the run's conversation?

        Yes when it answers a tool call the run requested, carries the run's last model output,
        starts with the run's previous request, or keeps at least half of that request's turns
        (system/developer messages aside): a history truncated or rewritten in place goes on.
        """
        for m in request.messages:
            if m.role == "tool" and m.tool_call_id and m.tool_call_id in self.pending:
                return True
        if self.last_output_hash and self.last_output_hash in hashes:
            return True
        prev = self.last_request_hashes
        if not prev:
            return False
        if hashes[: len(prev)] == prev:
            return True
        turns = [h for h in prev if self.message_roles.get(h[: hashing.SHORT]) not in INSTRUCTION_ROLES]
        kept = set(hashes).intersection(turns)
        return bool(kept) and 2 * len(kept) >= len(turns)


_RUN_MARK = "__agent_trace_run__"


def wrap_as_run(func: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
    """Wrap a function (sync or async) so each call is one agent run; idempotent."""
    from otel_agent_trace.recorder.handler import agent_run

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


def current_explicit() -> RunInvocation | None:
    run = explicit_run.get()
    return run if run is not None and not run.ended else None


def live(run: RunInvocation | None) -> bool:
    return run is not None and not run.ended



