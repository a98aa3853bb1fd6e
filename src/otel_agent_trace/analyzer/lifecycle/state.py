"""What the lifecycle passes build (`Lifecycle`: a `SpanState` per span that has something to
say) and how they mark a span (`mark`, `derived_origin`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from otel_agent_trace import detectors
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.json_text import parse_json_or_text
from otel_agent_trace.semconv import GEN_AI_TOOL_CALL_ARGUMENTS, GEN_AI_TOOL_NAME
from otel_agent_trace.vocabulary import Phase, Relation

# enum values read in per-span loops, looked up once (an Enum member's `.value` is a descriptor call)
ORIGIN, PROPAGATE, RECOVERED, CRITICAL = (p.value for p in (Phase.ORIGIN, Phase.PROPAGATE, Phase.RECOVERED,
                                                            Phase.CRITICAL))
RETRY_OF = Relation.RETRY_OF.value
START_ID = attrgetter("start_ns", "span_id")  # the order spans are looked at in: by start, ties by id


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
    received: tuple[set[str], dict[str, str]] | None = None  # `received_values` of the run, once read
    # the run's final answer's numbers and ids all trace back to tool results (None: no answer
    # with content, or one without numbers or ids): `fabricated`, for the reliability metrics
    verifiable: bool | None = None
    # the same against all the run received (the task, messages, arguments, results): no value of
    # it made up (None: no answer with numbers or ids); and the last final answer's text
    grounded: bool | None = None
    answer: str | None = None

    def call_key(self, span: Span, name: str | None = None) -> tuple[str, str]:
        """`call_key_of` of a tool span, computed once per run (loops and the metrics both ask);
        `name`: its `tool_name_of`, when known."""
        key = self.call_keys.get(span.span_id)
        if key is None:
            key = self.call_keys[span.span_id] = call_key_of(span, self.parsed_arguments.get(span.span_id, UNPARSED),
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


def derived_origin(life: Lifecycle, span: Span, error_type: str, reason: str, inferred: bool = True) -> None:
    """A derived origin, unless the span is already one (recorded wins); `inferred`: False when
    the error is read from a recorded attribute (the tool outcome)."""
    if span.span_id in life.origins:
        return
    life.origins.add(span.span_id)
    st = life.state(span.span_id)
    if not st.error_type:
        st.error_type = error_type
        st.derived = inferred
    st.phase = st.phase if st.phase in (ORIGIN, CRITICAL) else ORIGIN
    st.reason = reason


def mark(life: Lifecycle, span: Span, error_type: str, reason: str) -> None:
    st = life.state(span.span_id)
    if span.span_id in life.origins and st.error_type:
        return
    life.origins.add(span.span_id)
    st.phase = ORIGIN
    st.error_type = error_type
    st.derived = True
    st.reason = reason


def decider_of(run: Run, span: Span) -> Span:
    """The step whose decision requested a tool span (its parent step), else the span itself."""
    parent = run.spans.get(span.parent_id or "")
    return parent if parent is not None and parent.span_id in run.step_ids else span


def count(items: list[str]) -> dict[str, int]:
    """How many times each item occurs (a `Counter`, without its cost on a handful of items)."""
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


UNPARSED = object()


def call_key_of(span: Span, args: Any = UNPARSED, name: str | None = None) -> tuple[str, str]:
    """(tool name, canonical JSON of its arguments); `args`: the arguments already parsed; `name`:
    `tool_name_of(span)`, when known."""
    attributes = span.attributes
    if args is UNPARSED:
        args = parse_json_or_text(attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS))
    return detectors.call_key(tool_name_of(span) if name is None else name, args)


def tool_name_of(span: Span) -> str:
    """A tool span's name as loops, retries and the metrics count it."""
    return str(span.attributes.get(GEN_AI_TOOL_NAME) or span.name)
