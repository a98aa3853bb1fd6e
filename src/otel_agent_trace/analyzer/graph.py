"""The dependency graph of a run, from `agent_trace.depends_on` (or span links when absent).

Edges point from a span to what it depended on. Structural edges are added: the run span
depends on its last step, whose output is what the run returned, and on the tools that step
decided, whose results are the last thing the run saw before it ended.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from otel_agent_trace.analyzer.runs import Run, is_tool_span
from otel_agent_trace.semconv import DEPENDS_ON, DEPENDS_ON_RELATIONS, LINK_RELATION
from otel_agent_trace.vocabulary import Relation

RESULT_OF = "result_of"  # run -> its last step and that step's tools (structural)
_DECIDED_BY, _CONSUMES, _RETRY_OF = Relation.DECIDED_BY.value, Relation.CONSUMES.value, Relation.RETRY_OF.value


@dataclass
class Graph:
    edges: dict[str, list[tuple[str, str]]] = field(default_factory=lambda: defaultdict(list))  # span -> [(dep, rel)]
    reverse: dict[str, list[tuple[str, str]]] = field(default_factory=lambda: defaultdict(list))
    derived: bool = False  # edges inferred from the span tree, not recorded

    def add(self, source: str, target: str, relation: str) -> None:
        if source == target:
            return
        edge = (target, relation)
        out = self.edges[source]
        if edge in out:
            return
        out.append(edge)
        self.reverse[target].append((source, relation))


def build_graph(run: Run) -> Graph:
    graph = Graph()
    _fill(graph, run)
    return graph


class LazyGraph(Graph):
    """`build_graph(run)`, its edges built when first read (`edges`, `reverse`, `add`).

    Most runs never need them: only runs with an error walk or propagate over edges (and the
    HTML report and replay read them). `derived` is known at once, from a scan that stops at the
    first recorded edge: the same answer as building every edge and seeing none."""

    def __init__(self, run: Run):  # (no dataclass __init__: edges and reverse stay unset)
        self._run = run
        self.derived = not _records_edges(run)

    def __getattr__(self, name: str):  # called only for attributes not set yet
        if name in ("edges", "reverse"):
            run = self.__dict__.pop("_run", None)
            if run is not None:
                self.edges = defaultdict(list)
                self.reverse = defaultdict(list)
                _fill(self, run)
                return self.__dict__[name]
        raise AttributeError(name)


def _records_edges(run: Run) -> bool:
    """Whether `_fill` adds an edge from the recorded dependencies (before `derive_edges`)."""
    spans = run.spans
    for span in spans.values():
        get = span.attributes.get
        targets = get(DEPENDS_ON)
        if isinstance(targets, list):
            relations = get(DEPENDS_ON_RELATIONS)
            if isinstance(relations, list) and len(targets) == len(relations):
                source = span.span_id
                for target in targets:
                    if isinstance(target, str) and target in spans and target != source:
                        return True
                continue
        if span.links:
            for link in span.links:
                target = link.span_id
                if (link.trace_id == span.trace_id and link.attributes.get(LINK_RELATION)
                        and isinstance(target, str) and target in spans and target != span.span_id):
                    return True
    return False


def _fill(graph: Graph, run: Run) -> None:
    spans = run.spans
    add = graph.add
    for span in spans.values():
        get = span.attributes.get
        targets = get(DEPENDS_ON)
        relations = get(DEPENDS_ON_RELATIONS)
        if isinstance(targets, list) and isinstance(relations, list) and len(targets) == len(relations):
            pairs = zip(targets, relations)
        elif span.links:
            pairs = [(link.span_id, link.attributes.get(LINK_RELATION)) for link in span.links
                     if link.trace_id == span.trace_id and link.attributes.get(LINK_RELATION)]
        else:
            continue
        for target, relation in pairs:
            if isinstance(target, str) and target in spans:
                add(span.span_id, target, str(relation))
    if not any(graph.edges.values()):
        derive_edges(run, graph)
    if run.steps:
        last = run.steps[-1].span_id
        graph.add(run.root.span_id, last, RESULT_OF)
        # The run stopped after its last step's tools with no decision in between (a guardrail or
        # the program raising on a tool's result): their results are part of what it ended on.
        for source, relation in list(graph.reverse.get(last, ())):
            if relation == _DECIDED_BY and source in run.spans and is_tool_span(run.spans[source]):
                graph.add(run.root.span_id, source, RESULT_OF)


def derive_edges(run: Run, graph: Graph) -> None:
    """Edges for traces that carry none (foreign conventions): the structure of a tool loop.

    A tool depends on the step it runs under (`decided_by`); a step consumes the results of the
    tools of the step before it (`consumes`). These are inferred, so `graph.derived` is set and
    the ranking lowers its confidence.
    """
    graph.derived = True
    step_ids = {s.span_id for s in run.steps}
    tools_of: dict[str, list[str]] = defaultdict(list)
    for tool in run.tools:
        node = run.spans.get(tool.parent_id or "")
        while node is not None and node.span_id not in step_ids:
            node = run.spans.get(node.parent_id or "")
        if node is not None:
            graph.add(tool.span_id, node.span_id, _DECIDED_BY)
            tools_of[node.span_id].append(tool.span_id)
    for before, after in zip(run.steps, run.steps[1:]):
        for tool_id in tools_of.get(before.span_id, ()):
            graph.add(after.span_id, tool_id, _CONSUMES)


def recovered_spans(graph: Graph, failed: set[str]) -> set[str]:
    """Failed spans a later retry replaced with a success (following retry chains)."""
    return {span_id for span_id in failed if recovered_by(graph, failed, span_id) is not None}


def recovered_by(graph: Graph, failed: set[str], span_id: str) -> str | None:
    """The retry that replaced a failed span with a success (following retry chains), if any."""
    frontier = [span_id]
    seen = {span_id}
    while frontier:
        current = frontier.pop()
        for source, relation in graph.reverse.get(current, ()):
            if relation != _RETRY_OF or source in seen:
                continue
            seen.add(source)
            if source not in failed:
                return source
            frontier.append(source)
    return None
