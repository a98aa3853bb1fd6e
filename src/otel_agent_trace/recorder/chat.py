"""Decision steps: one `agent_step N` span per LLM call, its `chat {model}` child, and the
tool results its request newly carries.

A step opens when its LLM call starts and closes when the next step starts or the run ends. At
the start of step N+1 the recorder reads the request: `role: tool` messages answering calls that
step N requested become `execute_tool` spans (unless a tool surface already recorded them), and
step N+1 links to them (`consumes`). `ChatInvocation` owns the chat span's life and ends it
exactly once (`stop(response)` or `fail(exc)`), whether the response arrives whole or as a stream.
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode, format_span_id

from otel_agent_trace import hashing
from otel_agent_trace._failopen import safely
from otel_agent_trace.cost import cost_usd
from otel_agent_trace.semconv import COST_USD, GEN_AI_TOOL_DEFINITIONS, OUTPUT_MESSAGE_HASH
from otel_agent_trace.recorder import guards
from otel_agent_trace.messages import ChatRequest, ChatResponse, Message, to_semconv
from otel_agent_trace.semconv import (
    CONTEXT_HASH,
    CONTEXT_MESSAGES,
    CONTEXT_MESSAGE_HASHES,
    CONTEXT_NEW_MESSAGES,
    CONTEXT_SHARED_PREFIX,
    ERROR_TYPE,
    ERROR_TYPE_SEMCONV,
    GEN_AI_OPERATION_NAME,
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
    GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
    GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
    LIFECYCLE_PHASE,
    NEW_MESSAGE_CONTENT_FROM,
    OP_CHAT,
    STEP_INDEX,
    STEP_KIND,
    STEP_SPAN_PREFIX,
    STEP_TOOL_CALLS,
)
from otel_agent_trace.vocabulary import ErrorType, Outcome, Phase, Relation
from otel_agent_trace.recorder.invocation import Invocation
from otel_agent_trace.recorder.links import Dependencies
from otel_agent_trace.recorder.run import RunInvocation
from otel_agent_trace.recorder.state import StepState
from otel_agent_trace.recorder.tool_spans import infer_tool_results


class ChatInvocation(Invocation):
    """One LLM call inside a step: opened by `handler.chat(request)`, ended once by `stop`/`fail`."""

    kind = "chat"

    def __init__(self, run: RunInvocation, step: StepState, span: trace.Span, request: ChatRequest):
        super().__init__()
        self.run = run
        self.step = step
        self.span = span
        self.request = request

    def finish(self, response: ChatResponse) -> None:
        """The model answered (`stop(response)`)."""
        self.stop(response)

    def _on_stop(self, response: ChatResponse | None = None) -> None:
        _record_response(self, response if response is not None else ChatResponse())

    def _on_fail(self, exc: BaseException) -> None:
        span = self.span
        span.set_attributes({ERROR_TYPE_SEMCONV: type(exc).__qualname__, ERROR_TYPE: ErrorType.LLM_ERROR.value,
                             LIFECYCLE_PHASE: Phase.ORIGIN.value})
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        span.end()
        self.step.span.set_attributes({ERROR_TYPE: ErrorType.LLM_ERROR.value, LIFECYCLE_PHASE: Phase.ORIGIN.value})
        self.step.phase = Phase.ORIGIN.value
        self.run.call_failed()


def open_chat(run: RunInvocation, request: ChatRequest, hashes: list[str]) -> ChatInvocation:
    """Check the run's budgets, record the tool results the request carries, then open its step
    and chat span. Called through `run.begin_chat` (the run's lock held) once the run is found.
    Raises `AgentBudgetExceeded` when a budget is exhausted and BUDGET_ACTION=raise."""
    exceeded = guards.check_budget(run)
    if exceeded is not None:
        raise exceeded
    deps = Dependencies()
    infer_tool_results(run, request, deps)
    opened, began = run.open_step, request.started_ns
    run.close_open_step(began if opened is not None and began is not None and began >= opened.started_ns else None)
    step = _open_step(run, request, hashes, deps)
    span = run.tracer.start_span(
        f"{OP_CHAT} {request.model}" if request.model else OP_CHAT,
        context=trace.set_span_in_context(step.span),
        kind=SpanKind.CLIENT,
        attributes=_request_attributes(request, run),
        start_time=request.started_ns,
    )
    return ChatInvocation(run, step, span, request)


def _open_step(run: RunInvocation, request: ChatRequest, hashes: list[str], deps: Dependencies) -> StepState:
    index = len(run.steps)
    short = [h[: hashing.SHORT] for h in hashes]
    # the messages after those the previous step's context began with (a context that grows by a
    # few messages a step writes a few hashes a step, not the whole list again: model.context_hashes)
    shared = _shared_prefix(run.last_request_hashes, hashes) if run.steps else 0
    attributes: dict[str, Any] = {
        STEP_INDEX: index,
        CONTEXT_HASH: hashing.context_hash(request.model, hashes, request.tools, request.params),
        CONTEXT_MESSAGE_HASHES: short[shared:],
        CONTEXT_MESSAGES: len(hashes),
    }
    if shared:
        attributes[CONTEXT_SHARED_PREFIX] = shared
    new = [(h, m) for h, m in zip(short, request.messages) if h not in run.seen_messages]
    run.learn_messages(new)
    content = run.content.json(_new_items(run, new)) if new and run.content.capture else None
    if content is not None:
        attributes[CONTEXT_NEW_MESSAGES] = content
    attributes.update(deps.attributes())
    if any(_not_ok(run, t) for t in deps.targets(Relation.CONSUMES)):
        attributes[LIFECYCLE_PHASE] = Phase.PROPAGATE.value
    now = request.started_ns or time.time_ns()
    span = run.tracer.start_span(
        f"{STEP_SPAN_PREFIX} {index}",
        context=trace.set_span_in_context(run.span),
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        links=deps.links(),
        start_time=now,
    )
    step = StepState(index=index, span=span, started_ns=now, phase=attributes.get(LIFECYCLE_PHASE))
    guards.check_context_dropped(run, step, short)
    run.begin_step(step, hashes)
    return step


def _new_items(run: RunInvocation, new: list[tuple[str, Message]]) -> list[dict[str, Any]]:
    """`new_messages`' items. A tool result that its `execute_tool` span already holds whole is
    not written a second time: the message goes without its content and names that span
    (`model.NEW_MESSAGE_CONTENT_FROM`; the analyzer puts the content back when it groups a run)."""
    items: list[dict[str, Any]] = []
    for short, message in new:
        canonical = message.canonical()
        item: dict[str, Any] = {"hash": short, "message": canonical}
        if message.role == "tool" and message.tool_call_id and message.content:
            record = run.records_by_call_id.get(message.tool_call_id)
            if record is not None and record.result is not None and record.result == message.content:
                del canonical["content"]
                item[NEW_MESSAGE_CONTENT_FROM] = format_span_id(record.span_context.span_id)
                record.result = None  # (shown once: the text need not be kept any longer)
        items.append(item)
    return items


def _shared_prefix(previous: list[str], hashes: list[str]) -> int:
    """How many leading hashes the two contexts share."""
    if len(previous) <= len(hashes) and hashes[: len(previous)] == previous:
        return len(previous)
    shared = 0
    for a, b in zip(previous, hashes):
        if a != b:
            break
        shared += 1
    return shared


def _not_ok(run: RunInvocation, span_context: trace.SpanContext) -> bool:
    """Is the consumed result itself an error? (Only strong edges carry `propagate` further.)"""
    for record in reversed(run.records):
        if record.span_context.span_id == span_context.span_id:
            return record.outcome is not Outcome.OK
    return False


def _request_attributes(request: ChatRequest, run: RunInvocation) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        GEN_AI_OPERATION_NAME: OP_CHAT,
        GEN_AI_PROVIDER_NAME: request.provider,
        GEN_AI_SYSTEM: request.provider,
    }
    # the tools the model was given (content: the analyzer checks unknown tools and arguments
    # against them offline), written when the run's list changes: providers hand the same list
    # object while it does not (providers/_translate.plain_tools), so most steps skip it
    if run.tools_to_record(request.tools):
        definitions = run.content.json(request.tools)
        if definitions is not None:
            attributes[GEN_AI_TOOL_DEFINITIONS] = definitions
            run.tools_recorded_as(request.tools)
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
    output = Message(role="assistant", content=response.content, tool_calls=tuple(response.tool_calls))
    output_hash = hashing.message_hash(output)
    attributes: dict[str, Any] = {OUTPUT_MESSAGE_HASH: output_hash[: hashing.SHORT]}
    if response.model:
        attributes[GEN_AI_RESPONSE_MODEL] = response.model
    if response.id:
        attributes[GEN_AI_RESPONSE_ID] = response.id
    if response.finish_reasons:
        attributes[GEN_AI_RESPONSE_FINISH_REASONS] = response.finish_reasons
    if response.input_tokens is not None:
        attributes[GEN_AI_USAGE_INPUT_TOKENS] = response.input_tokens
    if response.output_tokens is not None:
        attributes[GEN_AI_USAGE_OUTPUT_TOKENS] = response.output_tokens
    for key, count in ((GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, response.cache_read_tokens),
                       (GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS, response.cache_write_tokens),
                       (GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, response.reasoning_tokens)):
        if count is not None:
            attributes[key] = count
    cost = safely("chat.cost", cost_usd, response.model or inv.request.model, inv.request.provider,
                  response.input_tokens, response.output_tokens, response.cache_read_tokens,
                  response.cache_write_tokens, response.reasoning_tokens,
                  run.config.prices) if run.config.cost else None
    if cost is not None:
        attributes[COST_USD] = cost
    finish = response.finish_reasons[0] if response.finish_reasons else None
    content = run.content.json([to_semconv(output, finish)])
    if content is not None:
        attributes[GEN_AI_OUTPUT_MESSAGES] = content
    span.set_attributes(attributes)
    span.end()
    now = time.time_ns()
    truncated = "length" in response.finish_reasons
    kind = "truncated" if truncated else ("tool_call" if response.tool_calls else "final")
    step.decided_ns = now
    step.tool_calls = list(response.tool_calls)
    step.final = kind == "final"
    run.record_decision(step, response, output_hash, step.final, now)
    if response.tool_calls:
        step.span.set_attributes({STEP_KIND: kind, STEP_TOOL_CALLS: [c.name for c in response.tool_calls]})
    else:
        step.span.set_attribute(STEP_KIND, kind)
    if truncated:
        guards.mark_origin(step, ErrorType.TRUNCATED_OUTPUT)
    guards.check_tool_calls(run, step, inv.request, response)
    if step.final:
        guards.check_final_answer(run, step, response.content)
        if run.implicit:  # an answered implicit run takes no more steps: only its run span lingers
            run.close_open_step(now)
