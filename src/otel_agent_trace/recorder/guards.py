"""Guards: what the recorder checks at each decision, and the phases they set. Each check is a
call into `detectors.py`, the definitions the analyzer applies offline too.

- before an LLM call: budgets (steps, seconds, tokens), `record` or `raise`;
- on a request: `context_dropped` (a message of the previous step is gone);
- on a response: `unknown_tool`, `invalid_arguments` (the tool's declared JSON schema),
  `loop_detected` (same tool, same arguments, N times in the run);
- on a final answer: validators (`OTEL_AGENT_TRACE_FINAL_SCHEMA`, `agent_run(validate=...)`)
  → `final_answer_invalid`, critical; `fabricated_value` (numbers and ids the model never received).
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry.trace import Status, StatusCode

from otel_agent_trace import detectors, hashing, schema
from otel_agent_trace.errors import AgentBudgetExceeded
from otel_agent_trace.json_text import parse_json_or_text
from otel_agent_trace.messages import ChatRequest, ChatResponse
from otel_agent_trace.semconv import (
    BUDGET_EXCEEDED,
    BUDGET_LIMIT,
    BUDGET_REASON,
    BUDGET_USED,
    CONTEXT_DROPPED_HASHES,
    CONTEXT_DROPPED_ROLES,
    ERROR_TYPE,
    FABRICATED_VALUES,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_NAME,
    LIFECYCLE_PHASE,
    LOOP_COUNT,
    VALIDATION_ERRORS,
)
from otel_agent_trace.vocabulary import ErrorType, Outcome, Phase
from otel_agent_trace.recorder.run import RunInvocation as RunState
from otel_agent_trace.recorder.state import StepState


def mark_origin(step: StepState, error_type: ErrorType, **event: Any) -> None:
    """A new error appears in this step's decision or context. The step's error type is the first
    it made (as the analyzer keeps it); its events name every one."""
    if step.phase != Phase.ORIGIN.value:
        step.span.set_attributes({LIFECYCLE_PHASE: Phase.ORIGIN.value, ERROR_TYPE: error_type.value})
        step.phase = Phase.ORIGIN.value
    step.span.add_event(error_type.value, event or None)


def mark_run_critical(run: RunState, error_type: ErrorType, description: str, **event: Any) -> None:
    span = run.span
    span.set_attribute(LIFECYCLE_PHASE, Phase.CRITICAL.value)
    span.set_attribute(ERROR_TYPE, error_type.value)
    span.set_status(Status(StatusCode.ERROR, description))
    span.add_event(error_type.value, {"description": description, **event})


# --- before the call ---------------------------------------------------------------------------
def check_budget(run: RunState) -> AgentBudgetExceeded | None:
    """The first budget this run has exhausted, marked on the run; the error to raise, if any."""
    config = run.config
    used: list[tuple[str, float, float]] = []
    if config.max_steps > 0:
        used.append(("steps", config.max_steps, len(run.steps)))
    if config.max_tokens > 0:
        used.append(("tokens", config.max_tokens, run.tokens))
    if config.max_seconds > 0:
        used.append(("seconds", config.max_seconds, round(time.monotonic() - run.started, 3)))
    for reason, limit, value in used:
        if value >= limit:
            exceeded = AgentBudgetExceeded(reason, limit, value)
            if run.exceed_budget(reason):
                run.span.set_attribute(BUDGET_EXCEEDED, reason)
                mark_run_critical(run, ErrorType.BUDGET_EXCEEDED, str(exceeded),
                                  **{BUDGET_REASON: reason, BUDGET_LIMIT: float(limit),
                                     BUDGET_USED: float(value)})
            return exceeded if config.budget_action == "raise" else None
    return None


# --- on a request ------------------------------------------------------------------------------
def check_context_dropped(run: RunState, step: StepState, short_hashes: list[str]) -> None:
    """Messages of the previous step's context missing from this one (truncation, overwrite)."""
    previous = [h[: hashing.SHORT] for h in run.last_request_hashes]
    if not previous:
        return
    dropped = detectors.dropped_messages(previous, short_hashes)
    if not dropped:
        return
    roles = [run.message_roles.get(h, "unknown") for h in dropped]
    step.span.set_attribute(CONTEXT_DROPPED_HASHES, dropped)
    step.span.set_attribute(CONTEXT_DROPPED_ROLES, roles)
    if detectors.drops_instructions(roles):
        mark_origin(step, ErrorType.CONTEXT_DROPPED, **{CONTEXT_DROPPED_HASHES: dropped, CONTEXT_DROPPED_ROLES: roles})
    else:  # a sliding window over old turns is common: worth an event, not an error
        step.span.add_event(ErrorType.CONTEXT_DROPPED.value, {CONTEXT_DROPPED_HASHES: dropped, CONTEXT_DROPPED_ROLES: roles})


# --- on a response -----------------------------------------------------------------------------
def check_tool_calls(run: RunState, step: StepState, request: ChatRequest, response: ChatResponse) -> None:
    declared = detectors.declared_tools(request.tools)
    threshold = run.config.loop_threshold
    for call in response.tool_calls:
        arguments = detectors.parse_arguments(call.arguments)
        if declared and call.name not in declared:
            mark_origin(step, ErrorType.UNKNOWN_TOOL, **{GEN_AI_TOOL_NAME: call.name,
                                                         GEN_AI_TOOL_CALL_ID: call.id})
        else:
            problems = (detectors.argument_problems(arguments, declared[call.name]) if declared
                        else ["$: arguments are not valid JSON"] if detectors.malformed_arguments(call.arguments) else [])
            if problems:
                mark_origin(step, ErrorType.INVALID_ARGUMENTS, **{GEN_AI_TOOL_NAME: call.name,
                                                                  GEN_AI_TOOL_CALL_ID: call.id,
                                                                  VALIDATION_ERRORS: problems})
        key = detectors.call_key(call.name, arguments)
        count = run.count_call(key)  # every request: only a key requested `threshold` times can loop
        if threshold > 0 and count >= threshold:
            ok_before = _ok_calls(run, key)
            if detectors.loop_reached(ok_before, threshold):
                step.span.set_attribute(LOOP_COUNT, threshold)
                mark_origin(step, ErrorType.LOOP_DETECTED, **{GEN_AI_TOOL_NAME: call.name, LOOP_COUNT: threshold})


def _ok_calls(run: RunState, key: tuple[str, str]) -> int:
    """Executed calls of the run with this `call_key` whose results were not errors."""
    return sum(1 for r in run.records if r.outcome is Outcome.OK and r.name == key[0]
               and detectors.call_key(r.name, detectors.parse_arguments(r.arguments)) == key)


# --- on a final answer -------------------------------------------------------------------------
def check_final_answer(run: RunState, step: StepState, content: str | None) -> None:
    text = content or ""
    problems = _validation_problems(run, text)
    if problems:
        step.span.add_event(ErrorType.FINAL_ANSWER_INVALID.value, {VALIDATION_ERRORS: problems})
        step.span.set_attribute(VALIDATION_ERRORS, problems)
        mark_run_critical(run, ErrorType.FINAL_ANSWER_INVALID, "final answer invalid: " + "; ".join(problems))
    used = [detectors.distinctive_values(r.arguments) for r in run.records if r.arguments]
    fabricated = detectors.fabricated_values(text, run.known_values.union(*used) if used else run.known_values,
                                             run.received)
    if fabricated:
        step.span.set_attribute(FABRICATED_VALUES, fabricated)
        mark_origin(step, ErrorType.FABRICATED_VALUE, **{FABRICATED_VALUES: fabricated})


def _validation_problems(run: RunState, text: str) -> list[str]:
    problems: list[str] = []
    final_schema = run.content.final_schema()
    if final_schema is not None:
        parsed = parse_json_or_text(text)
        if isinstance(parsed, str):
            problems.append("$: final answer is not JSON")
        else:
            problems.extend(schema.errors(parsed, final_schema))
    if run.validate is not None:
        try:
            verdict = run.validate(text)
        except Exception as exc:  # the validator's own way of saying no
            problems.append(f"{type(exc).__name__}: {exc}")
        else:
            if verdict is False:
                problems.append("rejected by validator")
            elif isinstance(verdict, str) and verdict:
                problems.append(verdict)
    return problems
