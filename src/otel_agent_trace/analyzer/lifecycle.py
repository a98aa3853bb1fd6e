"""Lifecycle phases recomputed offline, from what a trace proves.

Online phases (`agent_trace.lifecycle.phase`) may be missing: foreign traces normalized into our
attribute names carry steps, tools, outcomes and dependencies but no phases, and older recorders
did not flag every error type. This module derives, for every span of a run, a `SpanState`:

* origin    - a tool whose outcome is not `ok` (or, without an outcome, whose status is ERROR,
              that has an `exception` event, or whose result text classifies as empty/error);
              a chat span with status ERROR (`llm_error`) or `finish_reason=length`
              (`truncated_output`); any span marked `origin` online, with its recorded error
              type; the detectors of `detectors.py`, as the recorder runs them online:
              malformed or schema-violating arguments (`invalid_arguments`) and a tool the model
              was not given (`unknown_tool`) at the step that requested the call (`_model_made`),
              a repeated request (`loop_detected`, `_loops`), values of a final answer never
              received (`fabricated_value`, `_fabricated`), a lost system or developer message
              (`context_dropped`, `_dropped_context`); an exception on a framework span, typed by
              `normalize/evidence.exception_kind` (format / arguments -> `invalid_arguments`,
              operation limit -> `tool_timeout`, ...), unless it restates the exception of a tool
              it ran or of a model call it made (`compute`, step 1); a final answer no tool result
              supports (`unsupported_answer`, analyzer only, `_unsupported_answer`: flag
              `plan_named_tool` when the model's own plan named a tool it then never called, else
              flag `suspicion`, an origin inferred without proof). `SpanState.reason` keeps the
              text that proves each (exception kind and message, the result's error banner).
* propagate - a span that depends (any relation) on an origin or propagate span.
* recovered - an origin that a later `retry_of` chain ended in success (edges recorded, or,
              when a trace has none, the next execution of the same tool: a derived retry).
* critical  - set by the critical-failure rules (rules.py), not here.

Recorded values win over derived ones; `derived=True` says the analyzer inferred it.
Flags are facts rules can match on besides the error type (`tool_retry_exceeded`, ...).
"""

from __future__ import annotations

import re
from collections import defaultdict
from contextlib import contextmanager
from operator import attrgetter
from dataclasses import dataclass, field
from typing import Any, Iterator


from otel_agent_trace.analyzer import recovery
from otel_agent_trace.analyzer.graph import Graph, recovered_spans
from otel_agent_trace.analyzer.normalize import ERROR_EVIDENCE, SUBAGENT_RUNS
from otel_agent_trace.analyzer.normalize.evidence import exception_kind, listed_tools, mentioned
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.spans import STATUS_ERROR, Span
from otel_agent_trace import detectors
from otel_agent_trace.causes import event_exception
from otel_agent_trace.detectors import classify_result
from otel_agent_trace.model import (
    CONTEXT_MESSAGE_HASHES,
    GEN_AI_OUTPUT_MESSAGES,
    STEP_INDEX,
    STEP_KIND,
    ERROR_TYPE,
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    LIFECYCLE_PHASE,
    OUTCOME_ERROR_TYPE,
    TOOL_OUTCOME,
    ErrorType,
    Outcome,
    Phase,
    Relation,
    parse_json_or_text,
    semconv_messages,
)

NEW_MESSAGES = "agent_trace.context.new_messages"  # (recorder/steps.py) messages first seen at a step
UNSUPPORTED_ANSWER = "unsupported_answer"  # analyzer only: see `_unsupported_answer`
DEGENERATE_VALUE = "degenerate_value"  # analyzer only: see `_degenerate_flows`
_DEGENERATE = (0, 0.0, "", None, -1, "N/A", "n/a", "null", "None", "unknown", "UNKNOWN", "-")
RETRY_EXCEEDED_THRESHOLD = 3  # consecutive failed executions of one tool
TOOL_DEFINITIONS_KEYS = ("gen_ai.tool.definitions", "gen_ai.request.tools", "agent_trace.tool.definitions")
_DEFINITIONS_0, _DEFINITIONS_1, _DEFINITIONS_2 = TOOL_DEFINITIONS_KEYS
# enum values read in per-span loops, looked up once (an Enum member's `.value` is a descriptor call)
_ORIGIN, _PROPAGATE, _RECOVERED, _CRITICAL = (p.value for p in (Phase.ORIGIN, Phase.PROPAGATE, Phase.RECOVERED,
                                                                Phase.CRITICAL))
_RETRY_OF = Relation.RETRY_OF.value
_START_ID = attrgetter("start_ns", "span_id")  # the order spans are looked at in: by start, ties by id
_LOOP_DETECTED = ErrorType.LOOP_DETECTED.value
# `agent_trace.tool.outcome` value -> the error type it means (None: ok); an unknown value is absent
_OUTCOME_TYPE = {o.value: (OUTCOME_ERROR_TYPE[o].value if o != Outcome.OK else None) for o in Outcome}


@dataclass
class SpanState:
    phase: str | None = None
    error_type: str | None = None
    derived: bool = False  # the analyzer inferred it (not recorded online)
    reason: str = ""
    flags: set[str] = field(default_factory=set)


@dataclass
class Lifecycle:
    states: dict[str, SpanState] = field(default_factory=dict)
    origins: set[str] = field(default_factory=set)  # errors where they first appear
    recovered: set[str] = field(default_factory=set)
    tainted: set[str] = field(default_factory=set)  # origins and everything depending on them
    derived_retries: list[tuple[str, str]] = field(default_factory=list)  # (retry, failed)
    call_keys: dict[str, tuple[str, str]] = field(default_factory=dict)  # tool span id -> (name, canonical arguments)
    # tool name -> executions in the run (`count` of `Run.tool_names`), once `compute` has counted them
    tool_counts: dict[str, int] | None = None
    # tool span id -> its arguments parsed (`compute` parses them once: malformed, and call keys)
    parsed_arguments: dict[str, Any] = field(default_factory=dict)
    # a model-made error's decision (step) span id -> the tool span that shows it (its evidence)
    evidence_tools: dict[str, str] = field(default_factory=dict)
    received: tuple[set[str], dict[str, str]] | None = None  # `_received` of the run, once read
    # the run's final answer's numbers and ids all trace back to tool results (None: no answer
    # with content, or one without numbers or ids): `_fabricated`, for the reliability metrics
    verifiable: bool | None = None

    def call_key(self, span: Span, name: str | None = None) -> tuple[str, str]:
        """`_call_key` of a tool span, computed once per run (loops and the metrics both ask);
        `name`: its `tool_name_of`, when known."""
        key = self.call_keys.get(span.span_id)
        if key is None:
            key = self.call_keys[span.span_id] = _call_key(span, self.parsed_arguments.get(span.span_id, _UNPARSED),
                                                           name)
        return key

    def state(self, span_id: str) -> SpanState:
        return self.states.setdefault(span_id, SpanState())

    def error_type(self, span_id: str) -> str | None:
        s = self.states.get(span_id)
        return s.error_type if s else None

    def phase(self, span_id: str) -> str | None:
        s = self.states.get(span_id)
        return s.phase if s else None


def tool_error_type(span: Span) -> tuple[str | None, bool]:
    """(error type, derived) of a tool span, or (None, False) when it succeeded."""
    outcome = span.attributes.get(TOOL_OUTCOME)
    if outcome:
        return _OUTCOME_TYPE.get(str(outcome)), False
    if _raised(span):
        text = (span.status_message + " " + " ".join(event_exception(e.attributes)[0]
                                                     for e in span.events if e.name == "exception")).lower()
        return (ErrorType.TOOL_TIMEOUT.value if "timeout" in text else ErrorType.TOOL_EXCEPTION.value), True
    result = span.attributes.get(GEN_AI_TOOL_CALL_RESULT)
    if result is not None:
        kind = classify_result(result)
        if kind != Outcome.OK:
            return OUTCOME_ERROR_TYPE[kind].value, True
    return None, False


# evidence.exception_kind -> error type (who failed: the model's format/arguments, a budget, the tool)
KIND_ERROR_TYPE = {
    "format": ErrorType.INVALID_ARGUMENTS.value,  # the model's output did not follow the required format
    "arguments": ErrorType.INVALID_ARGUMENTS.value,  # the model called a tool with arguments it does not take
    "max_steps": ErrorType.BUDGET_EXCEEDED.value,
    "generation": ErrorType.LLM_ERROR.value,
    "operations": ErrorType.TOOL_TIMEOUT.value,  # the interpreter's operation limit: the code ran too long
    "timeout": ErrorType.TOOL_TIMEOUT.value,
}
KIND_REASON = {
    "format": "the model's output could not be parsed or run as written",
    "arguments": "a tool was called with arguments its signature does not accept",
    "max_steps": "the agent hit its step limit",
    "generation": "the model call failed",
    "operations": "the interpreter's operation limit was reached (resource exhaustion)",
    "timeout": "timed out",
    "not_found": "a resource (file, module) was not found",
    "http": "an HTTP error",
    "connection": "a connection failure",
    "rate_limit": "rate limited",
}


def exception_text(span: Span) -> tuple[str, str]:
    """(exception type, message) of a span's first exception event (an exception group's: of the
    exception that caused it), else ('', status message)."""
    for event in span.events:
        if event.name == "exception":
            exc_type, message = event_exception(event.attributes)
            return exc_type, message[:2000]
    return "", span.status_message


def exception_reason(span: Span) -> tuple[str, str]:
    """(kind, evidence line) of a failed span's exception (see normalize/evidence.py)."""
    exc_type, message = exception_text(span)
    kind = exception_kind(exc_type, message)
    head = " ".join(message.split())
    head = head if len(head) <= 160 else head[:157] + "..."
    label = exc_type.rsplit(".", 1)[-1] + ": " if exc_type else ""
    return kind, f"{KIND_REASON.get(kind, 'exception')}: {label}{head}"


def exception_error_type(span: Span) -> str:
    """Error type of a failed non-tool span, from its exception type and message."""
    exc_type, message = exception_text(span)
    return KIND_ERROR_TYPE.get(exception_kind(exc_type, message), ErrorType.TOOL_EXCEPTION.value)


def _raised(span: Span) -> bool:
    """Status ERROR, or an `exception` event."""
    return span.status_code == STATUS_ERROR or (bool(span.events) and any(e.name == "exception" for e in span.events))


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


def compute(run: Run, graph: Graph, delegated: dict[str, str] | None = None) -> Lifecycle:
    """A run's lifecycle, pass by pass (each pass's docstring says what it adds); `delegated`:
    span id -> error type of the spans whose sub-agent answered on an error (origins here)."""
    life = Lifecycle()
    has_definitions, restating, raised_others = _recorded(run, life)
    definitions = tool_definitions(run) if has_definitions else None
    finals = _dropped_context(run, life)  # (first: a step's context is checked before its decision, as online)
    results = _tool_origins(run, life, definitions)
    answers = _chat_origins(run, life)
    if raised_others:
        _framework_origins(life, restating, raised_others)
    if life.origins:  # (only a failed tool can show a degenerate value)
        _degenerate_flows(run, graph, life)
    _loops(run, life)
    if finals:
        _fabricated(run, life, finals, results, answers)
    _unsupported_answer(run, life, definitions)
    _retries(run, graph, life)
    for span_id, error_type in (delegated or {}).items():
        if span_id in run.spans:
            _derived_origin(life, run.spans[span_id], error_type, "its sub-agent's answer carried an error", False)
    _propagate(graph, life, run)
    return life


def _recorded(run: Run, life: Lifecycle) -> tuple[bool, dict[str, str], list[Span]]:
    """Origins recorded online; on the way, what the derived passes need (each span looked at
    once): whether any span records tool definitions, the failures raised spans restate (a
    framework span whose tool or model call raised: the child is the origin, one error is not
    two), and the framework spans that raised (`_raised`): of the spans that are neither tools
    nor model calls, only those can be a derived origin."""
    root = run.root
    tool_ids, chat_ids, restated = run.tool_ids, run.chat_ids, run.restated
    states = life.states
    restating: dict[str, str] = {}
    raised_others: list[Span] = []
    has_definitions = False
    for span in run.spans.values():
        attributes = span.attributes
        if LIFECYCLE_PHASE in attributes or ERROR_TYPE in attributes:  # (most spans carry neither)
            recorded_phase = attributes.get(LIFECYCLE_PHASE)
            recorded_type = attributes.get(ERROR_TYPE)
            if recorded_phase or recorded_type:  # states are created only for spans that have something to say
                st = states.get(span.span_id)
                if st is None:
                    st = states[span.span_id] = SpanState()
                if recorded_phase:
                    st.phase = str(recorded_phase)
                if recorded_type:
                    st.error_type = str(recorded_type)
                if recorded_phase == _ORIGIN:
                    life.origins.add(span.span_id)
                    st.reason = "recorded"
        if not has_definitions and (_DEFINITIONS_0 in attributes or _DEFINITIONS_1 in attributes
                                    or _DEFINITIONS_2 in attributes):
            has_definitions = True
        if span.status_code != STATUS_ERROR and not (span.events and any(e.name == "exception" for e in span.events)):
            continue  # (`_raised`, inline)
        if span is root:
            continue
        span_id = span.span_id
        if span_id in restated:
            continue  # our tool span inside which it ran records the failure
        if span_id in tool_ids:
            if span.parent_id:
                restating[span.parent_id] = "tool"
        elif span_id in chat_ids:
            if span.parent_id:
                restating.setdefault(span.parent_id, "model call")
        else:
            raised_others.append(span)
    return has_definitions, restating, raised_others


def _tool_origins(run: Run, life: Lifecycle, definitions: dict[str, Any] | None) -> list[str]:
    """Each tool span: the request behind it checked (`_model_made`), then its own failure. Its
    arguments are read once, here: kept parsed for `Lifecycle.call_key`, and the call key of each
    tool whose name repeats (the only ones loops and the metrics compare) made from the parse at
    hand. Returns the tools' result texts (non-empty, in order): what `_fabricated` checks an
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
            if unstripped:  # nothing stripped: what `_call_key` would parse
                parsed_arguments[span.span_id] = parsed
                if counts[name] > 1:
                    call_keys[span.span_id] = detectors.call_key(name, parsed)
            malformed = isinstance(parsed, str)
        if malformed or definitions is not None:  # (else nothing to check: no call of `_model_made`)
            _model_made(run, life, span, definitions, malformed)
        outcome = attributes.get(TOOL_OUTCOME)
        if outcome.__class__ is str and outcome:  # (`tool_error_type`'s first case, without the call)
            etype, was_derived = _OUTCOME_TYPE.get(outcome), False
        else:
            etype, was_derived = tool_error_type(span)
        if etype:
            reason = "tool outcome" if not was_derived else "tool status/result"
            evidence = span.attributes.get(ERROR_EVIDENCE)
            if evidence:
                reason = f"tool result: {evidence}"
            elif _raised(span):
                kind, reason = exception_reason(span)
                if KIND_ERROR_TYPE.get(kind) == ErrorType.INVALID_ARGUMENTS.value:
                    etype = ErrorType.INVALID_ARGUMENTS.value  # the caller's fault, not the tool's
            _derived_origin(life, span, etype, reason, was_derived)
    return results


def _chat_origins(run: Run, life: Lifecycle) -> dict[str, Any]:
    """Model calls that failed (`llm_error`) or were cut at the length limit (`truncated_output`).
    Returns, per span id, the output messages of the first model call under it that recorded
    some: a step's answer (`answer_text`)."""
    tool_ids = run.tool_ids
    answers: dict[str, Any] = {}
    for span in run.chats:
        output = span.attributes.get(GEN_AI_OUTPUT_MESSAGES)
        if output is not None and span.parent_id not in answers:
            answers[span.parent_id] = output
        if span.span_id in tool_ids:
            continue  # (a span that is both was looked at as a tool)
        if span.status_code == STATUS_ERROR:
            _derived_origin(life, span, ErrorType.LLM_ERROR.value, "chat call failed")
        else:
            reasons = span.attributes.get(GEN_AI_RESPONSE_FINISH_REASONS)
            if isinstance(reasons, list) and "length" in reasons or reasons == "length":
                _derived_origin(life, span, ErrorType.TRUNCATED_OUTPUT.value, "finish_reason=length")
    return answers


def _framework_origins(life: Lifecycle, restating: dict[str, str], raised_others: list[Span]) -> None:
    """A framework span that failed while carrying out a decision (e.g. smolagents' "Step N"
    running the model's code), typed by its exception; when a tool (or model call) under it
    raised, its exception restates that one's: the child is the origin, the span propagates."""
    for span in raised_others:
        if span.span_id in restating:
            st = life.state(span.span_id)
            st.reason = f"restates the exception of a {restating[span.span_id]} it ran"
            if not st.phase:
                st.phase, st.derived = _PROPAGATE, True
            continue
        kind, evidence = exception_reason(span)
        _derived_origin(life, span, KIND_ERROR_TYPE.get(kind, ErrorType.TOOL_EXCEPTION.value),
                        f"exception on a framework span: {evidence}")


def _degenerate_flows(run: Run, graph: Graph, life: Lifecycle) -> None:
    """Data-flow origins: a failed tool call whose argument `k` has a degenerate value (zero,
    empty, null, a sentinel) that an earlier tool's result gave under the same key `k`: the value
    flowed (a derived `data` edge) and its producer is the origin (`degenerate_value`); the failed
    call is where it showed."""
    failed = [t for t in run.tools if t.span_id in life.origins]
    if not failed:
        return
    for tool in failed:
        arguments = parse_json_or_text(tool.attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS))
        if not isinstance(arguments, dict):
            continue
        for key, value in arguments.items():
            if not _is_degenerate(value):
                continue
            producer = next((p for p in reversed(run.tools) if p.start_ns < tool.start_ns
                             and _gives(p, key, value)), None)
            if producer is None:
                continue
            graph.add(tool.span_id, producer.span_id, Relation.DATA.value)
            _derived_origin(life, producer, DEGENERATE_VALUE,
                            f"returned {key}={value!r}, which {tool_name_of(tool)} then used and failed on")
            break


def _is_degenerate(value: Any) -> bool:
    return not isinstance(value, bool) and any(value == d and type(value) is type(d) for d in _DEGENERATE) \
        or value == [] or value == {}


def _gives(span: Span, key: str, value: Any) -> bool:
    """Whether a tool's result (JSON) holds `key` with exactly `value`, at any depth."""
    result = span.attributes.get(GEN_AI_TOOL_CALL_RESULT)
    if not isinstance(result, str) or f'"{key}"' not in result:
        return False
    stack = [parse_json_or_text(result)]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if key in node and node[key] == value and type(node[key]) is type(value):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _derived_origin(life: Lifecycle, span: Span, error_type: str, reason: str, inferred: bool = True) -> None:
    """A derived origin, unless the span is already one (recorded wins); `inferred`: False when
    the error is read from a recorded attribute (the tool outcome)."""
    if span.span_id in life.origins:
        return
    life.origins.add(span.span_id)
    st = life.state(span.span_id)
    if not st.error_type:
        st.error_type = error_type
        st.derived = inferred
    st.phase = st.phase if st.phase in (_ORIGIN, _CRITICAL) else _ORIGIN
    st.reason = reason


def decider_of(run: Run, span: Span) -> Span:
    """The step whose decision requested a tool span (its parent step), else the span itself."""
    parent = run.spans.get(span.parent_id or "")
    return parent if parent is not None and parent.span_id in run.step_ids else span


def _model_made(run: Run, life: Lifecycle, span: Span, definitions: dict[str, Any] | None, malformed: bool) -> None:
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
        arguments = life.parsed_arguments.get(span.span_id, _UNPARSED)
        if arguments is _UNPARSED:
            arguments = detectors.parse_arguments(text)
        problems = detectors.argument_problems(arguments, parameters)
        if not problems:
            return
        error_type, reason = ErrorType.INVALID_ARGUMENTS.value, f"arguments of {name} violate its schema: " + "; ".join(problems)
    decider = decider_of(run, span)
    _derived_origin(life, decider, error_type, reason)
    life.evidence_tools.setdefault(decider.span_id, span.span_id)


def count(items: list[str]) -> dict[str, int]:
    """How many times each item occurs (a `Counter`, without its cost on a handful of items)."""
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


def _mark(life: Lifecycle, span: Span, error_type: str, reason: str) -> None:
    st = life.state(span.span_id)
    if span.span_id in life.origins and st.error_type:
        return
    life.origins.add(span.span_id)
    st.phase = _ORIGIN
    st.error_type = error_type
    st.derived = True
    st.reason = reason


_UNPARSED = object()


def _call_key(span: Span, args: Any = _UNPARSED, name: str | None = None) -> tuple[str, str]:
    """(tool name, canonical JSON of its arguments); `args`: the arguments already parsed; `name`:
    `tool_name_of(span)`, when known."""
    attributes = span.attributes
    if args is _UNPARSED:
        args = parse_json_or_text(attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS))
    return detectors.call_key(tool_name_of(span) if name is None else name, args)


def tool_name_of(span: Span) -> str:
    """A tool span's name as loops, retries and the metrics count it."""
    return str(span.attributes.get(GEN_AI_TOOL_NAME) or span.name)


_loop_threshold: list[int] = []  # `environment_read_once`'s, for the analysis under way (empty: read per run)


@contextmanager
def environment_read_once() -> Iterator[None]:
    """`OTEL_AGENT_TRACE_LOOP_THRESHOLD` read once for an analysis (its entry points run in this),
    not once per run: an `os.environ` read of an unset variable cost ~1% of the analysis."""
    _loop_threshold[:] = [detectors.loop_threshold()]
    try:
        yield
    finally:
        _loop_threshold.clear()


def _loops(run: Run, life: Lifecycle) -> None:
    """`detectors.loop_reached` over the run's tool spans, each standing for the request that made
    it, counting the earlier calls that did not fail; the origin is the deciding step."""
    threshold = _loop_threshold[0] if _loop_threshold else detectors.loop_threshold()
    tools = run.tools
    if threshold <= 0 or len(tools) < threshold:
        return  # too few calls to repeat one `threshold` times
    if life.states and any(life.error_type(s.span_id) == _LOOP_DETECTED for s in run.steps):
        return
    names = run.tool_names
    per_name = count(names) if life.tool_counts is None else life.tool_counts
    call_key, known = life.call_key, life.call_keys
    # (a tool called fewer than `threshold` times cannot loop: its arguments need no canonical form)
    calls = [(tool, known.get(tool.span_id) or call_key(tool, name)) for tool, name in zip(tools, names)
             if per_name[name] >= threshold]
    if len({key for _, key in calls}) > len(calls) - threshold + 1:
        return  # no request repeated `threshold` times (the common case): nothing can reach it
    origins = life.origins
    ok_before: dict[tuple[str, str], int] = {}
    for tool, key in calls:
        done, failed = ok_before.get(key, 0), tool.span_id in origins
        if detectors.loop_reached(done, threshold):
            target = decider_of(run, tool)
            _mark(life, target, _LOOP_DETECTED, f"{key[0]} called {threshold} times with the same arguments")
            life.state(target.span_id).flags.add("loop_detected")
        if not failed:
            ok_before[key] = done + 1


FINAL_ANSWER_TOOL = re.compile(r"^(?:final[_ ]?answer|FinalAnswerTool)$", re.IGNORECASE)


def _is_final_answer_tool(span: Span) -> bool:
    return bool(FINAL_ANSWER_TOOL.match(str(span.attr(GEN_AI_TOOL_NAME) or span.name.removeprefix("execute_tool "))))


def _unsupported_answer(run: Run, life: Lifecycle, definitions: set[str] | None) -> None:
    """A final answer no tool result supports (`unsupported_answer`, analyzer only: weaker than
    `fabricated_value`, which names values never received).

    The agent provably had tools: it delivered its answer through a final-answer tool
    (`final_answer`, smolagents' `FinalAnswerTool`), or tool definitions are recorded. Yet the run
    executed no other tool and delegated to no sub-agent (`agent_trace.run.subagent_runs`, set by
    normalization): whatever the answer states came from the model alone. The origin is the step
    that decided the answer. Runs with an earlier error are left alone (that error is the story).
    """
    if not run.steps or any(s in run.spans for s in life.origins):
        return
    if run.root.attr(SUBAGENT_RUNS):
        return
    finals: list[Span] = []
    for tool in run.tools:
        if not _is_final_answer_tool(tool):
            return  # a tool other than the final answer ran: the answer may rest on its result
        finals.append(tool)
    has_tools = bool(finals) or bool(definitions and any(not FINAL_ANSWER_TOOL.match(d) for d in definitions))
    if not has_tools:
        return
    if finals:
        decider = max((s for s in run.steps if s.start_ns <= finals[0].start_ns), key=lambda s: s.start_ns, default=None)
    else:
        decider = run.steps[-1]
    if decider is None:
        return
    index = run.step_index_of(decider)
    planned = _planned_tools(run, decider, definitions)
    reason = (f"final answer at step {index} rests on no tool result: the run called no tool but the final answer "
              "and no sub-agent, though it had tools")
    if planned:
        reason += f"; its own plan named {', '.join(sorted(planned))}, which it never called"
    else:
        reason += "; low confidence (a suspicion): nothing in the trace says the task needed a tool"
    _mark(life, decider, UNSUPPORTED_ANSWER, reason)
    life.state(decider.span_id).flags.add(PLAN_NAMED_TOOL if planned else SUSPICION)


SUSPICION = "suspicion"  # an origin inferred without proof (see _unsupported_answer): not a proven error
PLAN_NAMED_TOOL = "plan_named_tool"


def _planned_tools(run: Run, decider: Span, definitions: set[str] | None) -> set[str]:
    """Tools the model was given (recorded definitions, or listed in its prompt as `- name: ...`),
    other than the final answer, that its own outputs up to the answering decision name."""
    from otel_agent_trace.analyzer.normalize.conventions import LLM, facts_of

    given = set(definitions or ())
    outputs: list[str] = []
    for span in sorted(run.spans.values(), key=_START_ID):
        if span.start_ns > decider.end_ns:
            break
        facts = facts_of(span)
        if facts is None or facts.role != LLM:
            continue
        for message in facts.inputs:
            given |= listed_tools(message.content)
        if facts.output_text:
            outputs.append(facts.output_text)
    given = {n for n in given if not FINAL_ANSWER_TOOL.match(n)}
    return set().union(*(mentioned(text, given) for text in outputs)) if outputs else set()


def _new_messages(step: Span) -> list[tuple[str, str, str | None]]:
    """(hash, role, text content) of the messages a step's context showed first
    (`agent_trace.context.new_messages`, with content capture)."""
    raw = step.attributes.get(NEW_MESSAGES)
    items = parse_json_or_text(raw) if raw is not None else None
    out = []
    for item in items if isinstance(items, list) else ():
        message = item.get("message") if isinstance(item, dict) else None
        if isinstance(message, dict):
            content = message.get("content")
            out.append((str(item.get("hash") or ""), str(message.get("role") or ""),
                        content if isinstance(content, str) else None))
    return out


def _received(run: Run) -> tuple[set[str], dict[str, str]]:
    """What the run's model saw, as the recorder indexes it: the distinctive values of user,
    system, developer and tool messages (the steps' new messages), of tool results and of the
    run's own tool arguments; and the role of each message hash. Empty without captured content."""
    known: set[str] = set()
    roles: dict[str, str] = {}
    for step in run.steps:
        for digest, role, content in _new_messages(step):
            if digest:
                roles[digest] = role
            if role in detectors.RECEIVED_ROLES and content:
                known |= detectors.distinctive_values(content)
    for tool in run.tools:  # results, and the arguments the run itself used (`detectors.fabricated_values`)
        for key in (GEN_AI_TOOL_CALL_RESULT, GEN_AI_TOOL_CALL_ARGUMENTS):
            text = tool.attributes.get(key)
            if isinstance(text, str) and text:
                known |= detectors.distinctive_values(text)
    return known, roles


def unseen_argument_values(run: Run, tool: Span) -> list[str]:
    """Values of a tool call's arguments the model had never seen when it decided the call: in
    no user, system or developer message or tool result of the steps up to the deciding one, nor
    in an earlier tool's result, and not derived from their numbers (`detectors.fabricated_values`).
    Empty when the run did not capture its messages (nothing to compare with)."""
    arguments = tool.attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS)
    index = run.step_index_of(tool)
    if not isinstance(arguments, str) or not arguments or index is None:
        return []
    known: set[str] = set()
    captured = False
    for step in run.steps:
        step_index = step.attributes.get(STEP_INDEX)
        if not isinstance(step_index, int) or step_index > index:
            continue
        for _, role, content in _new_messages(step):
            captured = True
            if role in detectors.RECEIVED_ROLES and content:
                known |= detectors.distinctive_values(content)
    if not captured:
        return []
    for other in run.tools:
        result = other.attributes.get(GEN_AI_TOOL_CALL_RESULT)
        if other.start_ns < tool.start_ns and isinstance(result, str) and result:
            known |= detectors.distinctive_values(result)
    return detectors.fabricated_values(arguments, known)


def _received_once(run: Run, life: Lifecycle) -> tuple[set[str], dict[str, str]]:
    if life.received is None:
        life.received = _received(run)
    return life.received


def answer_text(output: Any) -> str | None:
    """The final answer in a step's model call's output messages (`gen_ai.output.messages`, as
    `_chat_origins` returns them), if recorded."""
    if output is None:
        return None
    return "\n".join([m.content for m in semconv_messages(output) if m.content])


def _fabricated(run: Run, life: Lifecycle, finals: list[Span], results: list[str], answers: dict[str, Any]) -> None:
    """`fabricated_value`, as the recorder checks it (`detectors.fabricated_values`): values of a
    final answer (a step of kind `final`) the model never received. Needs captured content. On
    the way, `Lifecycle.verifiable` of the run's last answer (the reliability metrics').
    `finals`, `results` and `answers`: the final steps, the result texts and the output messages
    by parent, as the passes before collected them."""
    known: set[str] | None = None
    result_values: set[str] | None = None
    for step in finals:
        answer = answer_text(answers.get(step.span_id))
        values = detectors.distinctive_values(answer) if answer else frozenset()
        if not values:
            life.verifiable = None
            continue  # nothing in it to check (the common case needs no look at the context)
        if result_values is None and _all_in_results(results, values):
            unverified: list[str] = []  # each value found in some result: nothing unseen
        else:
            if result_values is None:
                result_values = _tool_results(results)
            unverified = detectors.fabricated_values(answer, result_values)
        if step is run.steps[-1]:
            life.verifiable = not unverified
        if not unverified:
            continue  # every value is in (or derived from) the results: in all that was seen too
        if known is None:
            known = _received_once(run, life)[0]
        values = detectors.fabricated_values(answer, known)
        if values:
            _mark(life, step, ErrorType.FABRICATED_VALUE.value,
                  f"value{'s' if len(values) > 1 else ''} {', '.join(values[:5])} never seen in the input, "
                  "the instructions or a tool result")


def _all_in_results(texts: list[str], values: frozenset[str]) -> bool:
    """Whether every value of an answer is among the tool results' values, proven by reading
    only the results whose text holds the value as written (a substring test in C); False when
    that does not prove it, and the caller reads every result (`_tool_results`). Same answer, a
    fraction of the work: scanning every result was half the analysis on runs with answers.
    `texts`: the non-empty result texts."""
    for key in values:
        needle = key[2:]
        for text in texts:
            if needle in text and key in detectors.distinctive_values(text):
                break
        else:
            return False
    return True


def _tool_results(texts: list[str]) -> set[str]:
    """The distinctive values of the run's tool results (`texts`: the non-empty result texts)."""
    out: set[str] = set()
    for text in texts:
        out |= detectors.distinctive_values(text)
    return out


def _dropped_context(run: Run, life: Lifecycle) -> list[Span]:
    """`context_dropped`, as the recorder checks it (`detectors`): messages of the previous step's
    context gone from this one, an error when one was a system or developer message. Roles come
    from the captured new messages; a lost message of unknown role counts (no content captured).
    Returns the steps of kind `final` (`_fabricated`'s), found on the way."""
    previous: list[str] | None = None
    roles: dict[str, str] | None = None
    finals: list[Span] = []
    for step in run.steps:
        attributes = step.attributes
        if attributes.get(STEP_KIND) == "final":
            finals.append(step)
        hashes = attributes.get(CONTEXT_MESSAGE_HASHES)
        if not isinstance(hashes, list):
            previous = None
            continue
        if previous is not None and hashes[:len(previous)] != previous:  # (a context that grew lost nothing)
            lost = detectors.dropped_messages(previous, hashes)
            if lost:
                if roles is None:
                    roles = _received_once(run, life)[1]
                if not roles or detectors.drops_instructions(roles.get(h, "system") for h in lost):
                    _mark(life, step, ErrorType.CONTEXT_DROPPED.value,
                          f"{len(lost)} message(s) of the previous step's context are missing")
        previous = hashes
    return finals


def _retries(run: Run, graph: Graph, life: Lifecycle) -> None:
    """Recovered origins; derive retry_of edges when the trace has none."""
    if not life.origins:
        return  # nothing failed: nothing to retry or recover
    has_retry_edges = any(rel == _RETRY_OF for edges in graph.edges.values() for _, rel in edges)
    names = run.tool_names
    if not has_retry_edges:
        last_failed: dict[str, str] = {}
        for tool, name in zip(run.tools, names):
            if name in last_failed:
                graph.add(tool.span_id, last_failed.pop(name), _RETRY_OF)
                life.derived_retries.append((tool.span_id, graph.edges[tool.span_id][-1][0]))
            if tool.span_id in life.origins:
                last_failed[name] = tool.span_id
    failed = {s for s in life.origins if s in run.tool_ids}
    # consecutive failures of one tool
    streak: dict[str, int] = defaultdict(int)
    for tool, name in zip(run.tools, names):
        if tool.span_id in failed:
            streak[name] += 1
            if streak[name] >= RETRY_EXCEEDED_THRESHOLD:
                life.state(tool.span_id).flags.add("tool_retry_exceeded")
        else:
            streak[name] = 0
    life.recovered |= recovered_spans(graph, failed)
    # a fallback to another tool, an empty page that ends an iteration, an optional lookup (recovery.py)
    fallbacks, benign = recovery.worked_around(run, graph, life, failed - life.recovered)
    if fallbacks:
        life.derived_retries.extend(fallbacks)
        life.recovered |= recovered_spans(graph, failed)
    life.recovered |= benign
    for span_id in life.recovered:
        st = life.state(span_id)
        st.flags.add("recovered")
        if st.phase in (None, _ORIGIN):
            st.phase = _RECOVERED


def _propagate(graph: Graph, life: Lifecycle, run: Run) -> None:
    """Taint flows forward along every dependency except retry_of, from unrecovered origins
    (spans looked at by (start, span id))."""
    live = {s for s in life.origins if s not in life.recovered}
    tainted = set(live)
    if not live:
        life.tainted = tainted
        return
    order = sorted(run.spans.values(), key=_START_ID)
    changed = True
    while changed:
        changed = False
        for span in order:
            if span.span_id in tainted:
                continue
            for target, relation in graph.edges.get(span.span_id, ()):
                if relation != _RETRY_OF and target in tainted:
                    tainted.add(span.span_id)
                    changed = True
                    break
    life.tainted = tainted
    for span_id in tainted - live:
        st = life.state(span_id)
        if st.phase is None:
            st.phase = _PROPAGATE
            st.derived = True


def describe_value(value: Any, limit: int = 80) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
