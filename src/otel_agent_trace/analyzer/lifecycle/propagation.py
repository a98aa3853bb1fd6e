"""Recovery and taint: origins a later retry recovered (`retries`), and the spans an unrecovered
origin reaches along dependencies (`propagate`)."""

from __future__ import annotations

from collections import defaultdict

from otel_agent_trace.analyzer import recovery
from otel_agent_trace.analyzer.graph import Graph, recovered_spans
from otel_agent_trace.analyzer.lifecycle.state import ORIGIN, PROPAGATE, RECOVERED, RETRY_OF, START_ID, Lifecycle
from otel_agent_trace.analyzer.runs import Run

RETRY_EXCEEDED_THRESHOLD = 3  # consecutive failed executions of one tool


def retries(run: Run, graph: Graph, life: Lifecycle) -> None:
    """Recovered origins; derive retry_of edges when the trace has none."""
    if not life.origins:
        return  # nothing failed: nothing to retry or recover
    has_retry_edges = any(rel == RETRY_OF for edges in graph.edges.values() for _, rel in edges)
    names = run.tool_names
    if not has_retry_edges:
        last_failed: dict[str, str] = {}
        for tool, name in zip(run.tools, names):
            if name in last_failed:
                graph.add(tool.span_id, last_failed.pop(name), RETRY_OF)
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
        if st.phase in (None, ORIGIN):
            st.phase = RECOVERED


def propagate(graph: Graph, life: Lifecycle, run: Run) -> None:
    """Taint flows forward along every dependency except retry_of, from unrecovered origins
    (spans looked at by (start, span id))."""
    live = {s for s in life.origins if s not in life.recovered}
    tainted = set(live)
    if not live:
        life.tainted = tainted
        return
    order = sorted(run.spans.values(), key=START_ID)
    changed = True
    while changed:
        changed = False
        for span in order:
            if span.span_id in tainted:
                continue
            for target, relation in graph.edges.get(span.span_id, ()):
                if relation != RETRY_OF and target in tainted:
                    tainted.add(span.span_id)
                    changed = True
                    break
    life.tainted = tainted
    for span_id in tainted - live:
        st = life.state(span_id)
        if st.phase is None:
            st.phase = PROPAGATE
            st.derived = True
