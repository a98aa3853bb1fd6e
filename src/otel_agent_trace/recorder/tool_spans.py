"""Tool executions: `execute_tool {name}` spans, explicit or inferred, recorded once.

Explicit: a tool surface (the `@tool` decorator, a wrapped dispatcher, a framework's tool
registry) runs the tool inside `with handler.tool(name, arguments, call_id) as t:` and calls
`t.stop(result)`; the span is current while the tool runs, an exception fails it. Inferred: with zero code change, the `role: tool` message answering call id X in
request N+1 is the result of the call X requested by response N; the span is written then, from
the decision's end to the request's start. A call recorded explicitly is never inferred again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterable

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_agent_trace.detectors import classify_result
from otel_agent_trace.messages import ChatRequest
from otel_agent_trace.semconv import (
    ERROR_TYPE,
    ERROR_TYPE_SEMCONV,
    GEN_AI_OPERATION_NAME,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    GEN_AI_TOOL_TYPE,
    LIFECYCLE_PHASE,
    OP_EXECUTE_TOOL,
    STEP_INDEX,
    TOOL_OUTCOME,
    TOOL_SOURCE,
)
from otel_agent_trace.vocabulary import OUTCOME_ERROR_TYPE, Outcome, Phase, Relation
from otel_agent_trace.recorder import flow
from otel_agent_trace.recorder.invocation import Invocation
from otel_agent_trace.recorder.links import Dependencies
from otel_agent_trace.recorder.run import RunInvocation
from otel_agent_trace.recorder.state import PendingCall, StepState, ToolRecord, active_tool


@dataclass
class ToolStart:
    """What is known when a tool span opens: its edges, and what it reads and writes."""

    span: trace.Span
    name: str
    call_id: str | None
    arguments: str | None
    step: StepState | None
    retry_of: ToolRecord | None
    upstream_failing: bool  # a strong dependency (deciding step, data, resource) carries an error
    writes: set[str]


class ToolInvocation(Invocation):
    """One explicit tool execution; `stop(result)` or `fail(exc)` ends it exactly once."""

    kind = "tool"

    def __init__(self, run: RunInvocation, start: ToolStart, pending: PendingCall | None):
        super().__init__()
        self.run, self.start, self.pending = run, start, pending
        self.span = start.span
        self._active_tokens: list[Any] = []

    def activate(self) -> None:
        """Current while the tool runs: HTTP spans nest under it, nested tools are not recorded."""
        super().activate()
        self._active_tokens.append(active_tool.set(self))

    def deactivate(self) -> None:
        if self._active_tokens:
            active_tool.reset(self._active_tokens.pop())
        super().deactivate()

    def finish(self, result: Any) -> None:
        self.stop(result)

    def _on_stop(self, result: Any = None) -> None:
        self._end(classify_result(result), result, None)

    def _on_fail(self, exc: BaseException) -> None:
        outcome = Outcome.TIMEOUT if isinstance(exc, TimeoutError) else Outcome.EXCEPTION
        self._end(outcome, None, exc)

    def _end(self, outcome: Outcome, result: Any, exc: BaseException | None) -> None:
        result_text = result if isinstance(result, str) or result is None else _json_text(result)
        record = _close_tool_span(self.run, self.start, outcome, result_text, exc, "explicit", None)
        if self.pending is not None:
            self.pending.record = record


def start_tool(run: RunInvocation, name: str, arguments: Any, call_id: str | None = None,
               reads: Iterable[str] = (), writes: Iterable[str] = ()) -> ToolInvocation:
    """Open an explicit tool span, matched to the model's pending call when one fits.

    `reads` / `writes` name the arguments that are resources the tool reads or writes.
    """
    arguments_text = arguments if isinstance(arguments, str) or arguments is None else _json_text(arguments)

    def open_span(matched_id: str | None, step: StepState | None) -> ToolStart:
        return _open_tool_span(run, name, matched_id, arguments_text, step, "explicit", None, reads, writes)

    start, pending = run.claim_call(name, arguments_text, call_id, open_span)
    return ToolInvocation(run, start, pending)


def infer_tool_results(run: RunInvocation, request: ChatRequest, deps: Dependencies) -> None:
    """Record the tool results newly present in `request` and add its `consumes` edges."""
    now = time.time_ns()
    for message in request.messages:
        if message.role != "tool" or not message.tool_call_id:
            continue
        call_id = message.tool_call_id
        record = run.records_by_call_id.get(call_id)
        pending = run.pending.get(call_id)
        if record is None and pending is not None:
            if pending.record is not None:
                record = pending.record
            else:
                step = pending.step
                start = _open_tool_span(run, pending.call.name, call_id, pending.call.arguments, step,
                                        "inferred", step.decided_ns or now)
                record = _close_tool_span(run, start, classify_result(message.content or ""),
                                          message.content, None, "inferred", now)
            run.index_result(call_id, record)
        if record is not None and pending is not None:
            run.consume_call(call_id)
            deps.add(record.span_context, Relation.CONSUMES)
    # A call executed explicitly whose result this request carries in the framework's own words (a
    # smolagents `Observation:` user message), not as a tool message naming its id: its result was
    # there before this request and goes to the model with it.
    for call_id, pending in list(run.pending.items()):
        record = run.records_by_call_id.get(call_id)
        if pending.record is not None and record is not None and record.source == "explicit":
            run.consume_call(call_id)
            deps.add(record.span_context, Relation.CONSUMES)
    # Tools with no call id (a smolagents CodeAgent's code called them) that ran in the latest step:
    # their results reach the model with this request (the time window of that step).
    latest = run.open_step
    if latest is not None:
        for record in reversed(run.records):
            if record.step_index != latest.index:
                break
            if record.call_id is None and record.source == "explicit":
                deps.add(record.span_context, Relation.CONSUMES)


def _open_tool_span(run: RunInvocation, name: str, call_id: str | None, arguments: str | None,
                    step: StepState | None, source: str, start_ns: int | None,
                    reads: Iterable[str] = (), writes: Iterable[str] = ()) -> ToolStart:
    deps = Dependencies()
    upstream_failing = False
    if step is not None:
        deps.add(step.span.get_span_context(), Relation.DECIDED_BY)
        upstream_failing = step.phase in (Phase.ORIGIN.value, Phase.PROPAGATE.value)
    argument_values = flow.distinctive_values(arguments) if arguments else set()
    for key in sorted(argument_values):
        producer = run.value_producers.get(key)
        if producer is not None:
            deps.add(producer.span_context, Relation.DATA)
            upstream_failing = upstream_failing or producer.failing
    written = flow.declared_values(arguments, writes) if writes else (
        flow.path_arguments(arguments) if flow.is_writer(name) else set())
    read = flow.declared_values(arguments, reads) if reads else flow.path_like(argument_values) - written
    for key in sorted(read):
        writer = run.resource_writers.get(key)
        if writer is not None:
            deps.add(writer.span_context, Relation.RESOURCE)
            upstream_failing = upstream_failing or writer.failing
    retry_of = _failed_predecessor(run, name)
    if retry_of is not None:
        deps.add(retry_of.span_context, Relation.RETRY_OF)
    attributes: dict[str, Any] = {
        GEN_AI_OPERATION_NAME: OP_EXECUTE_TOOL,
        GEN_AI_TOOL_NAME: name,
        GEN_AI_TOOL_TYPE: "function",
        TOOL_SOURCE: source,
    }
    if call_id:
        attributes[GEN_AI_TOOL_CALL_ID] = call_id
    if step is not None:
        attributes[STEP_INDEX] = step.index
    if run.content.capture and arguments is not None:
        attributes[GEN_AI_TOOL_CALL_ARGUMENTS] = run.content.clip(arguments)
    attributes.update(deps.attributes())
    parent = step.span if step is not None else run.span
    span = run.tracer.start_span(
        f"{OP_EXECUTE_TOOL} {name}",
        context=trace.set_span_in_context(parent),
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        links=deps.links(),
        start_time=start_ns,
    )
    return ToolStart(span, name, call_id, arguments, step, retry_of, upstream_failing, written)


def _failed_predecessor(run: RunInvocation, name: str) -> ToolRecord | None:
    """The latest failed, not yet retried execution of the same tool: what this call retries."""
    for record in reversed(run.records):
        if record.name == name:
            return record if record.outcome is not Outcome.OK and not record.retried else None
    return None


def _close_tool_span(run: RunInvocation, start: ToolStart, outcome: Outcome, result_text: str | None,
                     exc: BaseException | None, source: str, end_ns: int | None) -> ToolRecord:
    span = start.span
    span.set_attribute(TOOL_OUTCOME, outcome.value)
    whole = None
    if run.content.capture and result_text is not None:
        written = run.content.clip(result_text)
        span.set_attribute(GEN_AI_TOOL_CALL_RESULT, written)
        whole = result_text if written is result_text else None
    if outcome is not Outcome.OK:
        span.set_attribute(ERROR_TYPE, OUTCOME_ERROR_TYPE[outcome].value)
        if exc is not None:
            span.set_attribute(ERROR_TYPE_SEMCONV, type(exc).__qualname__)
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
    phase = _phase(start, outcome)
    if phase is not None:
        span.set_attribute(LIFECYCLE_PHASE, phase)
    span.end(end_time=end_ns)
    record = ToolRecord(start.name, start.call_id, start.arguments, outcome, span.get_span_context(),
                        start.step.index if start.step else None, source, phase, result=whole)
    run.record_tool(record, start.retry_of, result_text, start.writes)
    return record


def _phase(start: ToolStart, outcome: Outcome) -> str | None:
    """recovered: a retry that worked; propagate: an upstream error flows in; origin: a new one.

    `recovered` is provisional online: the analyzer confirms it only when nothing later still
    depends on the failed result.
    """
    if start.retry_of is not None and outcome is Outcome.OK:
        return Phase.RECOVERED.value
    if start.upstream_failing:
        return Phase.PROPAGATE.value
    if outcome is not Outcome.OK:
        return Phase.ORIGIN.value
    return None


def _json_text(value: Any) -> str:
    import orjson

    try:
        return orjson.dumps(value, default=str).decode()
    except TypeError:
        return str(value)
