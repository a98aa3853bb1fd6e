"""Origins recorded online, and what the derived passes need from the same walk over the spans."""

from __future__ import annotations

from otel_agent_trace.analyzer.lifecycle.state import ORIGIN, Lifecycle, SpanState
from otel_agent_trace.analyzer.lifecycle.tool_calls import TOOL_DEFINITIONS_KEYS
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.spans import STATUS_ERROR, Span
from otel_agent_trace.semconv import ERROR_TYPE, LIFECYCLE_PHASE

_DEFINITIONS_0, _DEFINITIONS_1, _DEFINITIONS_2 = TOOL_DEFINITIONS_KEYS

def recorded_origins(run: Run, life: Lifecycle) -> tuple[bool, dict[str, str], list[Span]]:
    """Origins recorded online; on the way, what the derived passes need (each span looked at
    once): whether any span records tool definitions, the failures raised spans restate (a
    framework span whose tool or model call raised: the child is the origin, one error is not
    two), and the framework spans that raised (`raised`): of the spans that are neither tools
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
                if recorded_phase == ORIGIN:
                    life.origins.add(span.span_id)
                    st.reason = "recorded"
        if not has_definitions and (_DEFINITIONS_0 in attributes or _DEFINITIONS_1 in attributes
                                    or _DEFINITIONS_2 in attributes):
            has_definitions = True
        if span.status_code != STATUS_ERROR and not (span.events and any(e.name == "exception" for e in span.events)):
            continue  # (`raised`, inline)
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
