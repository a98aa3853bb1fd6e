"""Which kind of bug (seed 000) an origin is: `prompt`, `tool` or `model_decision`, with evidence.

Locate first, then classify, looking at the origin and the context around it:

* `prompt` - the context lacked what was needed: the origin (or the step that decided it) lost
  messages the previous context had (`context_dropped`), its output was cut (`truncated_output`),
  a model-decision error happened right after such a drop (the model could not have known), or
  the model called a tool missing from the definitions it was given that the agent then ran
  successfully (`unknown_tool` on a tool that exists: the request's tool list was incomplete).
* `tool` - the tool crashed, timed out, returned empty or malformed data (`tool_*`, `llm_error`)
  for arguments that were well-formed (valid JSON). A tool failure on malformed arguments is the
  model's.
* `model_decision` - the context and the results were fine: an unknown tool the agent does not
  have either (its execution failed), schema-violating or
  malformed arguments, the same call repeated (`loop_detected`), a fabricated value, a final
  answer that fails validation or ignores the tool results (no error anywhere before it).
"""

from __future__ import annotations

import re

from otel_agent_trace.analyzer.lifecycle import (DEGENERATE_VALUE, UNSUPPORTED_ANSWER, arguments_malformed, tool_error_type,
                                                 unseen_argument_values)
from otel_agent_trace.analyzer.locate import Finding, tool_name
from otel_agent_trace.analyzer.normalize.evidence import exception_kind
from otel_agent_trace.analyzer.runs import is_tool_span
from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.semconv import GEN_AI_TOOL_CALL_ARGUMENTS, GEN_AI_TOOL_CALL_RESULT, STEP_KIND
from otel_agent_trace.vocabulary import ErrorType, Phase

# Which bug kind (seed 000) an origin's error type points at, when nothing else says otherwise.
BUG_CLASS_OF_ERROR = {
    ErrorType.TOOL_EXCEPTION.value: "tool",
    ErrorType.TOOL_ERROR_RESULT.value: "tool",
    ErrorType.TOOL_EMPTY_RESULT.value: "tool",
    ErrorType.TOOL_TIMEOUT.value: "tool",
    ErrorType.LLM_ERROR.value: "tool",
    ErrorType.INVALID_ARGUMENTS.value: "model_decision",
    ErrorType.UNKNOWN_TOOL.value: "model_decision",
    ErrorType.LOOP_DETECTED.value: "model_decision",
    ErrorType.FABRICATED_VALUE.value: "model_decision",
    UNSUPPORTED_ANSWER: "model_decision",
    DEGENERATE_VALUE: "tool",
    ErrorType.FINAL_ANSWER_INVALID.value: "model_decision",
    # suspicions read from a failed run's text (analyzer/silent/): a class only where the evidence shows one
    "answer_provenance": None,
    "error_in_text": None,
    "contradicted_result": "model_decision",
    "assumed_fact": "model_decision",
    "answer_dropped": "model_decision",
    "claimed_action": "model_decision",
    "unread_page": "model_decision",
    ErrorType.CONTEXT_DROPPED.value: "prompt",
    ErrorType.TRUNCATED_OUTPUT.value: "prompt",
}


# A tool failure from outside the decision that made the call: the network or a service (a
# timeout, an HTTP or connection error, a failed model call), or a file format the tool refuses
# (`UnsupportedFormatException`: the file is there, the tool states it cannot convert that kind).
# The call was well-formed; what the agent did next is what the failure asks about, so it is
# placed at the decision that read it (docs/analyzer.md, Placement). Not one: a page that does
# not exist (HTTP 404: the call chose the address), and a file that is not there (the call chose
# the path; TRAIL labels those at the call, as environment setup errors).
_OUTSIDE_ERROR_TYPES = frozenset({ErrorType.TOOL_TIMEOUT.value, ErrorType.LLM_ERROR.value})
_OUTSIDE_EXCEPTION = re.compile(r"(?i)(?:HTTP\w*Error|Connect\w*(?:Error|Exception|Timeout)|Timeout(?:Error|Exception)?|"
                                r"Unsupported\w*Format\w*(?:Error|Exception))$")
_NOT_FOUND = re.compile(r"\b404\b|Not Found", re.IGNORECASE)


def failed_outside_the_call(error_type: str | None, exception_type: str | None, message: str = "") -> bool:
    """Whether a tool failure came from outside the call (see `_OUTSIDE_EXCEPTION`)."""
    if error_type in _OUTSIDE_ERROR_TYPES:
        return True
    return (error_type == ErrorType.TOOL_EXCEPTION.value and bool(exception_type)
            and bool(_OUTSIDE_EXCEPTION.search(exception_type)) and not _NOT_FOUND.search(message[:300]))


def read_back(error_type: str | None, exception_type: str | None, message: str = "") -> bool:
    """Whether an error is the model's own output that its framework could not parse or run
    (`evidence.exception_kind` `format`: smolagents' `AgentParsingError`, a `SyntaxError` or an
    `InterpreterError` in the code it wrote), which the framework reports back to the model as a
    tool failure is: placed, like one, at the decision that wrote it and at the one that read the
    error and had to write it again (docs/analyzer.md, Placement)."""
    return (error_type == ErrorType.INVALID_ARGUMENTS.value and bool(exception_type)
            and exception_kind(exception_type, message) == "format")


def classify(finding: Finding) -> None:
    """Set `finding.bug_class` and add the evidence that supports it."""
    origin = finding.origin
    if origin is None:
        if finding.candidates and finding.candidates[0].suspect:
            step = finding.candidates[0].span
            if step.attr(STEP_KIND) not in (None, "final"):
                return  # it asked for tools the run stopped in: no answer to blame (locate's evidence says so)
            finding.bug_class = "model_decision"
            finding.evidence.append(
                f"no tool error, no dropped context: the final decision ({step.name}) produced the answer "
                "that failed; context and tool results were fine (model_decision, low confidence)")
        return
    if not finding.origin_error_type:
        return
    error_type = finding.origin_error_type
    if error_type not in BUG_CLASS_OF_ERROR and error_type not in ErrorType._value2member_map_:
        finding.evidence.append(f"{origin.name}: unrecognized error type {error_type!r}")
        return
    bug_class = BUG_CLASS_OF_ERROR.get(error_type)
    name = tool_name(origin)
    life = finding.lifecycle
    if name:
        args = origin.attr(GEN_AI_TOOL_CALL_ARGUMENTS)
        result = origin.attr(GEN_AI_TOOL_CALL_RESULT)
        detail = (f"tool {name}({_short(args)}) returned {_short(result)}" if result is not None
                  else f"tool {name}({_short(args)}) failed")
        finding.evidence.append(f"{detail} [{error_type}]")
        reason = life.states[origin.span_id].reason if life and origin.span_id in life.states else ""
        if reason and reason not in _PLAIN_REASONS:
            finding.evidence.append(reason)  # the text in the trace that proves it
        if bug_class == "tool":
            unseen = unseen_argument_values(finding.run, origin)
            if arguments_malformed(origin):
                bug_class = "model_decision"
                finding.evidence.append("the arguments the model wrote are not valid JSON: the tool was misused")
            elif unseen:
                bug_class = "model_decision"
                finding.evidence.append(f"value {', '.join(unseen[:3])} was never seen (not in the input, the "
                                        "instructions or a tool result before the call): the model made it up")
            elif args is not None:
                finding.evidence.append("arguments were well-formed JSON: the tool, not the caller, failed")
    else:
        reason = life.states[origin.span_id].reason if life and origin.span_id in life.states else ""
        finding.evidence.append(f"{origin.name}: {error_type}" + (f" ({reason})" if reason and reason != "recorded" else ""))
    # a model-made error is located at its decision; the tool span that shows it is evidence
    shown_by = finding.run.spans.get(life.evidence_tools.get(origin.span_id, "")) if life else None
    tool = origin if name else shown_by
    if error_type == ErrorType.UNKNOWN_TOOL.value and tool is not None and tool_error_type(tool)[0] is None:
        bug_class = "prompt"
        finding.evidence.append(f"the agent ran {tool_name(tool)} successfully, but it was missing from the tool "
                                "definitions the model was given: the request's tool list was incomplete")
    if bug_class == "model_decision":
        dropped = _dropped_before(finding, origin)
        if dropped is not None:
            bug_class = "prompt"
            finding.evidence.append(f"but the context of {dropped.name} had lost messages the previous step saw "
                                    "(context_dropped): the model decided without what it needed")
    if error_type == ErrorType.LOOP_DETECTED.value:
        finding.evidence.append("the same tool was requested again with the same arguments; its results were not errors")
    repeats = _repeats(finding, origin)
    if repeats:
        finding.evidence.append(f"the same error (same tool, same error text) repeated {len(repeats)} more time(s) "
                                f"after it, unrecovered: each a separate decision that did not correct it")
    if finding.candidates and len(finding.candidates) > 1:
        others = ", ".join(f"{c.span.name} ({c.confidence:.2f})" for c in finding.candidates[1:4])
        finding.evidence.append(f"{len(finding.candidates)} independent origins; next: {others}")
    if finding.recovered:
        finding.evidence.append(f"{len(finding.recovered)} earlier error(s) were recovered by a retry and skipped")
    finding.bug_class = bug_class


_PLAIN_REASONS = ("recorded", "tool outcome", "tool status/result")


def _repeats(finding: Finding, origin: Span) -> list[Span]:
    """Later unrecovered errors of the run identical to the origin: same tool (or span name), same
    error type, same reason text (the exception message or the result's error banner)."""
    life = finding.lifecycle
    if life is None or origin.span_id not in life.states:
        return []

    def key(span: Span) -> tuple[object, str | None, str]:
        return tool_name(span) or span.name, life.error_type(span.span_id), life.states[span.span_id].reason

    mine = key(origin)
    return [s for s in finding.errors if s.start_ns > origin.start_ns and s.span_id in life.states and key(s) == mine]


def _dropped_before(finding: Finding, origin: Span) -> Span | None:
    """The step at or before the origin's decision whose context dropped messages, if any."""
    life = finding.lifecycle
    if life is None:
        return None
    run = finding.run
    index = run.step_index_of(origin)
    if index is None:
        return None
    for step in run.steps:
        step_index = run.step_index_of(step)
        if step_index is not None and step_index <= index and \
                life.error_type(step.span_id) == ErrorType.CONTEXT_DROPPED.value and \
                life.phase(step.span_id) in (Phase.ORIGIN.value, None):
            return step
    return None


def _short(value: object, limit: int = 80) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = ["classify", "is_tool_span"]
