"""From a run's critical failure back to where its error originated.

Walk the dependency edges back from the critical span; among the spans reached, the errors
(non-ok tool outcomes, spans marked `origin`) that a retry did not truly recover are the
candidates, and the earliest is the origin. The chain is the shortest dependency path from the
origin to the critical span, each hop with its relation and phase.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from otel_agent_trace.analyzer.graph import Graph, build_graph, recovered_spans
from otel_agent_trace.analyzer.runs import Run, is_tool_span
from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.model import (
    ERROR_TYPE,
    GEN_AI_TOOL_NAME,
    LIFECYCLE_PHASE,
    OUTCOME_ERROR_TYPE,
    TOOL_OUTCOME,
    Outcome,
    Phase,
)

STATUS_ERROR = 2


@dataclass
class Hop:
    span: Span
    step_index: int | None
    phase: str
    error_type: str | None
    relation: str | None  # how the next hop depends on this one


@dataclass
class Finding:
    run: Run
    failed: bool
    critical: Span | None = None
    critical_error_type: str | None = None
    description: str = ""
    origin: Span | None = None
    origin_error_type: str | None = None
    chain: list[Hop] = field(default_factory=list)
    recovered: list[Span] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    bug_class: str | None = None


def error_type_of(span: Span) -> str | None:
    """The span's error type: recorded, else derived from a non-ok tool outcome."""
    recorded = span.attr(ERROR_TYPE)
    if recorded:
        return str(recorded)
    outcome = span.attr(TOOL_OUTCOME)
    try:
        return OUTCOME_ERROR_TYPE[Outcome(outcome)].value if outcome and outcome != Outcome.OK.value else None
    except ValueError:
        return None


def is_error(span: Span) -> bool:
    """An error where it first appears: a failed tool, or a span marked `origin`."""
    if span.attr(LIFECYCLE_PHASE) == Phase.ORIGIN.value:
        return True
    outcome = span.attr(TOOL_OUTCOME)
    return is_tool_span(span) and outcome is not None and outcome != Outcome.OK.value


def find_critical(run: Run) -> Span | None:
    root = run.root
    if root.attr(LIFECYCLE_PHASE) == Phase.CRITICAL.value or root.status_code == STATUS_ERROR:
        return root
    marked = [s for s in run.spans.values() if s.attr(LIFECYCLE_PHASE) == Phase.CRITICAL.value]
    return min(marked, key=lambda s: s.start_ns) if marked else None


def locate(run: Run) -> Finding:
    graph = build_graph(run)
    all_errors = {sid for sid, span in run.spans.items() if is_error(span)}
    recovered = recovered_spans(run, graph, all_errors)
    critical = find_critical(run)
    finding = Finding(run, failed=critical is not None)
    finding.recovered = sorted((run.spans[s] for s in recovered), key=lambda s: s.start_ns)
    if critical is None:
        return finding
    finding.critical = critical
    finding.critical_error_type = error_type_of(critical)
    finding.description = _describe(critical)
    errors = _ancestors(graph, critical.span_id) & all_errors
    candidates = sorted((run.spans[s] for s in errors - recovered),
                        key=lambda s: (s.start_ns, run.step_index_of(s) or 0))
    if critical.span_id != run.root.span_id and is_error(critical) and not candidates:
        candidates = [critical]
    if not candidates:
        finding.evidence.append("no error was recorded before the failure: its cause is outside the trace "
                                "or in the model's final answer")
        return finding
    origin = candidates[0]
    finding.origin = origin
    finding.origin_error_type = error_type_of(origin)
    finding.chain = _chain(run, graph, origin, critical)
    return finding


def _describe(span: Span) -> str:
    if span.status_message:
        return span.status_message
    for event in span.events:
        if event.name == "exception":
            return f"{event.attributes.get('exception.type', '')}: {event.attributes.get('exception.message', '')}"
    return span.attr(ERROR_TYPE) or span.name


def _ancestors(graph: Graph, start: str) -> set[str]:
    seen = {start}
    queue = deque([start])
    while queue:
        for target, _ in graph.edges.get(queue.popleft(), ()):
            if target not in seen:
                seen.add(target)
                queue.append(target)
    return seen


def _chain(run: Run, graph: Graph, origin: Span, critical: Span) -> list[Hop]:
    """Shortest path origin -> critical along reversed dependency edges (BFS)."""
    previous: dict[str, tuple[str, str] | None] = {origin.span_id: None}
    queue = deque([origin.span_id])
    while queue and critical.span_id not in previous:
        current = queue.popleft()
        for source, relation in graph.reverse.get(current, ()):
            if source not in previous:
                previous[source] = (current, relation)
                queue.append(source)
    if critical.span_id not in previous:
        path: list[tuple[str, str | None]] = [(origin.span_id, None), (critical.span_id, None)]
    else:
        path = []
        node: str | None = critical.span_id
        relation: str | None = None
        while node is not None:
            path.append((node, relation))
            step = previous[node]
            node, relation = (step[0], step[1]) if step else (None, None)
        path.reverse()
    hops = []
    for i, (span_id, relation) in enumerate(path):
        span = run.spans[span_id]
        if i == 0:
            phase = Phase.ORIGIN.value
        elif i == len(path) - 1:
            phase = Phase.CRITICAL.value
        else:
            phase = Phase.PROPAGATE.value
        hops.append(Hop(span, run.step_index_of(span), phase, error_type_of(span), relation))
    return hops


def tool_name(span: Span) -> Any:
    return span.attr(GEN_AI_TOOL_NAME) if is_tool_span(span) else None
