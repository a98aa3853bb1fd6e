"""Decision steps: one `agent_step N` span per LLM call, its `chat {model}` child, and the
tool results its request newly carries.

A step opens when its LLM call starts and closes when the next step starts or the run ends. At
the start of step N+1 the recorder reads the request: `role: tool` messages answering calls that
step N requested become `execute_tool` spans (unless a tool surface already recorded them), and
step N+1 links to them (`consumes`). `ChatInvocation` owns the chat span's life and finalizes it
exactly once (`finish` or `fail`), whether the response arrives whole or as a stream.
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_agent_trace import hashing
from otel_agent_trace.recorder import guards
from otel_agent_trace.recorder.flow import distinctive_values
from otel_agent_trace.model import (
    CONTEXT_HASH,
    CONTEXT_MESSAGE_HASHES,
    CONTEXT_MESSAGES,
    ERROR_TYPE,
    ERROR_TYPE_SEMCONV,
    GEN_AI_OPERATION_NAME,
    INSTRUCTION_ROLES,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MAX_TOKENS,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_REQUEST_TEMPERATURE,
    GEN_AI_REQUEST_TOP_P,
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_RESPONSE_ID,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_SYSTEM,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    LIFECYCLE_PHASE,
    OP_CHAT,
    STEP_INDEX,
    STEP_KIND,
    STEP_SPAN_PREFIX,
    STEP_TOOL_CALLS,
    ChatRequest,
    ChatResponse,
    ErrorType,
    Message,
    Outcome,
    Phase,
    Relation,
    to_semconv,
)
from otel_agent_trace.recorder.core import Recorder
from otel_agent_trace.recorder.links import Dependencies
from otel_agent_trace.recorder.runs import begin_run, current_run, end_run
from otel_agent_trace.recorder.state import PendingCall, RunState, StepState, implicit_run

NEW_MESSAGES = "agent_trace.context.new_messages"
GEN_AI_TOOL_DEFINITIONS = "gen_ai.tool.definitions"  # semconv (opt-in content)
# messages whose values the model legitimately received (the fabrication check's ground truth)
_RECEIVED_ROLES = ("user", "system", "developer", "tool")
OUTPUT_MESSAGE_HASH = "agent_trace.output.message_hash"


class ChatInvocation:
    """One LLM call inside a step: created by `start_chat`, ended once by `finish`/`fail`."""

    def __init__(self, recorder: Recorder, run: RunState, step: StepState, span: trace.Span, request: ChatRequest):
        self.recorder = recorder
        self.run = run
        self.step = step
        self.span = span
        self.request = request
        self._token: object | None = None
        self._done = False

    def attach(self) -> None:
        """Make the chat span current while the client sends (HTTP spans nest under it)."""
        self._token = otel_context.attach(trace.set_span_in_context(self.span))

    def detach(self) -> None:
        if self._token is not None:
            otel_context.detach(self._token)  # type: ignore[arg-type]
            self._token = None

    def finish(self, response: ChatResponse) -> None:
        if self._done:
            return
        self._done = True
        _record_response(self, response)

    def fail(self, exc: BaseException) -> None:
        if self._done:
            return
        self._done = True
        span = self.span
        span.set_attribute(ERROR_TYPE_SEMCONV, type(exc).__qualname__)
        span.set_attribute(ERROR_TYPE, ErrorType.LLM_ERROR.value)
        span.set_attribute(LIFECYCLE_PHASE, Phase.ORIGIN.value)
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        span.end()
        step = self.step.span
        step.set_attribute(ERROR_TYPE, ErrorType.LLM_ERROR.value)
        step.set_attribute(LIFECYCLE_PHASE, Phase.ORIGIN.value)
        self.step.phase = Phase.ORIGIN.value


def start_chat(recorder: Recorder, request: ChatRequest) -> ChatInvocation:
    """Open (or find) the run, record tool results the request carries, open step and chat span."""
    from otel_agent_trace.recorder.tools import infer_tool_results

    hashes = request.message_hashes
    if hashes is None:
        hashes = [hashing.message_hash(m) for m in request.messages]
    run = current_run()
    if run is None or (run.implicit and not _continues(run, request, hashes)):
        if run is not None and run.implicit:
            end_run(recorder, run)
        run = begin_run(recorder, None, implicit=True)
        implicit_run.set(run)
    with run.lock:
        exceeded = guards.check_budget(recorder, run)
        if exceeded is not None:
            if run.implicit:
                end_run(recorder, run, exceeded)
            raise exceeded
        deps = Dependencies()
        infer_tool_results(recorder, run, request, deps)
        close_open_step(run)
        step = _open_step(recorder, run, request, hashes, deps)
        span = recorder.tracer.start_span(
            f"{OP_CHAT} {request.model}" if request.model else OP_CHAT,
            context=trace.set_span_in_context(step.span),
            kind=SpanKind.CLIENT,
            attributes=_request_attributes(request, recorder),
        )
    return ChatInvocation(recorder, run, step, span, request)


def _continues(run: RunState, request: ChatRequest, hashes: list[str]) -> bool:
    """Does this request go on with the run's conversation?

    Yes when it answers a tool call the run requested, carries the run's last model output,
    starts with the run's previous request, or keeps at least half of that request's turns
    (system/developer messages aside): a history truncated or rewritten in place goes on.
    """
    for m in request.messages:
        if m.role == "tool" and m.tool_call_id and m.tool_call_id in run.pending:
            return True
    if run.last_output_hash and run.last_output_hash in hashes:
        return True
    prev = run.last_request_hashes
    if not prev:
        return False
    if hashes[: len(prev)] == prev:
        return True
    # a history rewritten or truncated in place: most of the previous turns are still there
    # (system prompts don't count: every conversation of an agent shares them)
    turns = [h for h in prev if run.message_roles.get(h[: hashing.SHORT]) not in INSTRUCTION_ROLES]
    kept = set(hashes).intersection(turns)
    return bool(kept) and 2 * len(kept) >= len(turns)


def _open_step(recorder: Recorder, run: RunState, request: ChatRequest, hashes: list[str], deps: Dependencies) -> StepState:
    index = len(run.steps)
    short = [h[: hashing.SHORT] for h in hashes]
    attributes: dict[str, Any] = {
        STEP_INDEX: index,
        CONTEXT_HASH: hashing.context_hash(request.model, hashes, request.tools, request.params),
        CONTEXT_MESSAGE_HASHES: short,
        CONTEXT_MESSAGES: len(hashes),
    }
    new = [(h, m) for h, m in zip(short, request.messages) if h not in run.seen_messages]
    for h, m in new:
        run.seen_messages.add(h)
        run.message_roles[h] = m.role
        if m.role in _RECEIVED_ROLES and m.content and not _scanned_as_tool_result(run, m):
            run.known_values |= distinctive_values(m.content)
    content = recorder.content_json([{"hash": h, "message": m.canonical()} for h, m in new]) if new else None
    if content is not None:
        attributes[NEW_MESSAGES] = content
    attributes.update(deps.attributes())
    if any(_not_ok(run, t) for t in deps.targets(Relation.CONSUMES)):
        attributes[LIFECYCLE_PHASE] = Phase.PROPAGATE.value
    now = time.time_ns()
    span = recorder.tracer.start_span(
        f"{STEP_SPAN_PREFIX} {index}",
        context=trace.set_span_in_context(run.span),
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        links=deps.links(),
        start_time=now,
    )
    step = StepState(index=index, span=span, started_ns=now, phase=attributes.get(LIFECYCLE_PHASE))
    guards.check_context_dropped(run, step, short)
    run.steps.append(step)
    run.open_step = step
    run.last_request_hashes = list(hashes)
    return step


def _scanned_as_tool_result(run: RunState, message: Message) -> bool:
    """An inferred tool span already indexed exactly this text as its result."""
    record = run.records_by_call_id.get(message.tool_call_id) if message.role == "tool" and message.tool_call_id else None
    return record is not None and record.source == "inferred"


def _not_ok(run: RunState, span_context: trace.SpanContext) -> bool:
    """Is the consumed result itself an error? (Only strong edges carry `propagate` further.)"""
    for record in reversed(run.records):
        if record.span_context.span_id == span_context.span_id:
            return record.outcome is not Outcome.OK
    return False


def close_open_step(run: RunState, end_ns: int | None = None) -> None:
    step = run.open_step
    if step is not None:
        run.open_step = None
        step.span.end(end_time=end_ns)


def _request_attributes(request: ChatRequest, recorder: Recorder) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        GEN_AI_OPERATION_NAME: OP_CHAT,
        GEN_AI_PROVIDER_NAME: request.provider,
        GEN_AI_SYSTEM: request.provider,
    }
    if request.tools:  # (content: the analyzer checks unknown tools and arguments against them offline)
        definitions = recorder.content_json(request.tools)
        if definitions is not None:
            attributes[GEN_AI_TOOL_DEFINITIONS] = definitions
    if request.model:
        attributes[GEN_AI_REQUEST_MODEL] = request.model
    params = request.params
    for key, name in (
        ("temperature", GEN_AI_REQUEST_TEMPERATURE),
        ("top_p", GEN_AI_REQUEST_TOP_P),
        ("max_tokens", GEN_AI_REQUEST_MAX_TOKENS),
        ("max_completion_tokens", GEN_AI_REQUEST_MAX_TOKENS),
    ):
        value = params.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attributes[name] = value
    return attributes


def _record_response(inv: ChatInvocation, response: ChatResponse) -> None:
    span, run, step = inv.span, inv.run, inv.step
    if response.model:
        span.set_attribute(GEN_AI_RESPONSE_MODEL, response.model)
    if response.id:
        span.set_attribute(GEN_AI_RESPONSE_ID, response.id)
    if response.finish_reasons:
        span.set_attribute(GEN_AI_RESPONSE_FINISH_REASONS, response.finish_reasons)
    if response.input_tokens is not None:
        span.set_attribute(GEN_AI_USAGE_INPUT_TOKENS, response.input_tokens)
    if response.output_tokens is not None:
        span.set_attribute(GEN_AI_USAGE_OUTPUT_TOKENS, response.output_tokens)
    output = Message(role="assistant", content=response.content, tool_calls=tuple(response.tool_calls))
    output_hash = hashing.message_hash(output)
    span.set_attribute(OUTPUT_MESSAGE_HASH, output_hash[: hashing.SHORT])
    finish = response.finish_reasons[0] if response.finish_reasons else None
    content = inv.recorder.content_json([to_semconv(output, finish)])
    if content is not None:
        span.set_attribute(GEN_AI_OUTPUT_MESSAGES, content)
    span.end()
    with run.lock:
        run.tokens += (response.input_tokens or 0) + (response.output_tokens or 0)
        run.last_output_hash = output_hash
        run.seen_messages.add(output_hash[: hashing.SHORT])
        step.decided_ns = time.time_ns()
        step.tool_calls = list(response.tool_calls)
        truncated = "length" in response.finish_reasons
        kind = "truncated" if truncated else ("tool_call" if response.tool_calls else "final")
        step.span.set_attribute(STEP_KIND, kind)
        if response.tool_calls:
            step.span.set_attribute(STEP_TOOL_CALLS, [c.name for c in response.tool_calls])
        for call in response.tool_calls:
            run.pending[call.id] = PendingCall(call=call, step=step)
        if truncated:
            guards.mark_origin(step, ErrorType.TRUNCATED_OUTPUT)
        guards.check_tool_calls(inv.recorder, run, step, inv.request, response)
        step.final = kind == "final"
        if step.final:
            guards.check_final_answer(inv.recorder, run, step, response.content)
    if step.final and run.implicit:
        end_run(inv.recorder, run)
