"""Tool calls: each tool span's failure (`tool_error_type`) and the request behind it, checked as
the recorder checks it (`model_made`: malformed arguments, an unknown tool, a schema violation)."""

from __future__ import annotations

from typing import Any

from otel_agent_trace import detectors
from otel_agent_trace.analyzer.lifecycle.exceptions import KIND_ERROR_TYPE, exception_reason, raised
from otel_agent_trace.analyzer.lifecycle.state import UNPARSED, Lifecycle, count, decider_of, derived_origin
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.causes import event_exception
from otel_agent_trace.detectors import classify_result
from otel_agent_trace.json_text import parse_json_or_text
from otel_agent_trace.semconv import (
    ERROR_EVIDENCE,
    GEN_AI_REQUEST_TOOLS,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_DEFINITIONS,
    GEN_AI_TOOL_NAME,
    TOOL_DEFINITIONS,
    TOOL_OUTCOME,
)
from otel_agent_trace.vocabulary import OUTCOME_ERROR_TYPE, ErrorType, Outcome

TOOL_DEFINITIONS_KEYS = (GEN_AI_TOOL_DEFINITIONS, GEN_AI_REQUEST_TOOLS, TOOL_DEFINITIONS)
# `agent_trace.tool.outcome` value -> the error type it means (None: ok); an unknown value is absent
OUTCOME_TYPE = {o.value: (OUTCOME_ERROR_TYPE[o].value if o != Outcome.OK else None) for o in Outcome}


def tool_error_type(span: Span) -> tuple[str | None, bool]:
    """(error type, derived) of a tool span, or (None, False) when it succeeded."""
    outcome = span.attributes.get(TOOL_OUTCOME)
    if outcome:
        return OUTCOME_TYPE.get(str(outcome)), False
    if raised(span):
        text = (span.status_message + " " + " ".join(event_exception(e.attributes)[0]
                                                     for e in span.events if e.name == "exception")).lower()
        return (ErrorType.TOOL_TIMEOUT.value if "timeout" in text else ErrorType.TOOL_EXCEPTION.value), True
    result = span.attributes.get(GEN_AI_TOOL_CALL_RESULT)
    if result is not None:
        kind = classify_result(result)
        if kind != Outcome.OK:
            return OUTCOME_ERROR_TYPE[kind].value, True
    return None, False


def arguments_malformed(span: Span) -> bool:
    read = _arguments_read(span)
    return read is not None and isinstance(read[1], str)


def _arguments_read(span: Span) -> tuple[bool, Any] | None:
    """`detectors.read_json_arguments` of a tool span's recorded arguments."""
    return detectors.read_json_arguments(span.attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS))


def tool_definitions(run: Run) -> dict[str, Any] | None:
    """The tools the model was given (name -> parameters schema), when some span records them."""
    declared: dict[str, Any] = {}
    found = False
    for span in run.spans.values():
        attributes = span.attributes
        if attributes.keys().isdisjoint(TOOL_DEFINITIONS_KEYS):
            continue  # (most spans: one check instead of a lookup per key)
        for key in TOOL_DEFINITIONS_KEYS:
            raw = attributes.get(key)
            if raw is None:
                continue
            value = parse_json_or_text(raw) if isinstance(raw, str) else raw
            if isinstance(value, (list, tuple)):
                found = True
                declared.update(detectors.declared_tools(value))
    return declared if found else None


def tool_origins(run: Run, life: Lifecycle, definitions: dict[str, Any] | None) -> list[str]:
    """Each tool span: the request behind it checked (`model_made`), then its own failure. Its
    arguments are read once, here: kept parsed for `Lifecycle.call_key`, and the call key of each
    tool whose name repeats (the only ones loops and the metrics compare) made from the parse at
    hand. Returns the tools' result texts (non-empty, in order): what `fabricated` checks an
    answer against."""
    parsed_arguments = life.parsed_arguments
    call_keys = life.call_keys
    names = run.tool_names
    counts = life.tool_counts = count(names)
    results: list[str] = []
    for span, name in zip(run.tools, names):
        attributes = span.attributes
        result = attributes.get(GEN_AI_TOOL_CALL_RESULT)
        if isinstance(result, str) and result:
            results.append(result)
        read = detectors.read_json_arguments(attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS))
        malformed = False
        if read is not None:
            unstripped, parsed = read
            if unstripped:  # nothing stripped: what `call_key_of` would parse
                parsed_arguments[span.span_id] = parsed
                if counts[name] > 1:
                    call_keys[span.span_id] = detectors.call_key(name, parsed)
            malformed = isinstance(parsed, str)
        if malformed or definitions is not None:  # (else nothing to check: no call of `model_made`)
            model_made(run, life, span, definitions, malformed)
        outcome = attributes.get(TOOL_OUTCOME)
        if outcome.__class__ is str and outcome:  # (`tool_error_type`'s first case, without the call)
            etype, was_derived = OUTCOME_TYPE.get(outcome), False
        else:
            etype, was_derived = tool_error_type(span)
        if etype:
            reason = "tool outcome" if not was_derived else "tool status/result"
            evidence = span.attributes.get(ERROR_EVIDENCE)
            if evidence:
                reason = f"tool result: {evidence}"
            elif raised(span):
                kind, reason = exception_reason(span)
                if KIND_ERROR_TYPE.get(kind) == ErrorType.INVALID_ARGUMENTS.value:
                    etype = ErrorType.INVALID_ARGUMENTS.value  # the caller's fault, not the tool's
            derived_origin(life, span, etype, reason, was_derived)
    return results


def model_made(run: Run, life: Lifecycle, span: Span, definitions: dict[str, Any] | None, malformed: bool) -> None:
    """The request behind a tool span, checked as the recorder checks it (`detectors`): malformed
    arguments (`malformed`: `arguments_malformed`, read by the caller), a tool the model was not
    given, arguments against the declared schema. The origin is the decision that made the call;
    the tool span is its evidence (`evidence_tools`)."""
    name = span.attributes.get(GEN_AI_TOOL_NAME)
    if malformed:
        error_type, reason = ErrorType.INVALID_ARGUMENTS.value, "tool arguments are not valid JSON"
    elif definitions is None or not name:
        return
    elif str(name) not in definitions:
        error_type, reason = ErrorType.UNKNOWN_TOOL.value, f"tool {name} is not among the tools the model was given"
    else:
        parameters = definitions[str(name)]
        if not isinstance(parameters, dict):
            return
        text = span.attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS)
        if not isinstance(text, str):
            return  # arguments not captured: nothing to check
        arguments = life.parsed_arguments.get(span.span_id, UNPARSED)
        if arguments is UNPARSED:
            arguments = detectors.parse_arguments(text)
        problems = detectors.argument_problems(arguments, parameters)
        if not problems:
            return
        error_type, reason = ErrorType.INVALID_ARGUMENTS.value, f"arguments of {name} violate its schema: " + "; ".join(problems)
    decider = decider_of(run, span)
    derived_origin(life, decider, error_type, reason)
    life.evidence_tools.setdefault(decider.span_id, span.span_id)
