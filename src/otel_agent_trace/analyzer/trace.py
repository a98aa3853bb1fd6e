"""One trace analysed: checked (duplicate span ids, parent cycles, orphans, dependency cycles:
noted with file, line and reason), normalized from foreign conventions, its runs grouped,
located and classified (`trace_findings`)."""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Callable, Iterable, Iterator

from otel_agent_trace.analyzer import delegation, evaluations, runs
from otel_agent_trace.analyzer.classify import classify
from otel_agent_trace.analyzer.locate import Finding, locate
from otel_agent_trace.analyzer.normalize import normalize_trace
from otel_agent_trace.analyzer.runs import NAMED_RUN, Run, trace_runs
from otel_agent_trace.analyzer.settings import AnalyzerSettings
from otel_agent_trace.analyzer.spans import InputReport, Span
from otel_agent_trace.semconv import DEPENDS_ON, GEN_AI_OPERATION_NAME, OP_INVOKE_AGENT


def check_trace(spans: list[Span], reports: dict[str, InputReport]) -> list[Span]:
    """Drop duplicate span ids and break parent cycles; report those, orphans and dependency cycles."""
    return list(checked_trace(spans, reports)[0].values())


def checked_trace(spans: list[Span],
                  reports: dict[str, InputReport]) -> tuple[dict[str, Span], dict[str, list[Span]]]:
    """`check_trace`, returning (span id -> span, in order; parent id -> children, in order) of
    the spans kept (what `runs.trace_runs` groups)."""
    by_id, children, _ = _checked(spans, reports)
    return by_id, children


def _checked(spans: list[Span], reports: dict[str, InputReport]) -> tuple[dict[str, Span], dict[str, list[Span]],
                                                                          list[Span]]:
    """`checked_trace`, plus the run spans (`runs.is_run_span`, in order) found in the same walk:
    each span is looked at once for the check and for grouping (`trace_findings`)."""
    def note(span: Span, reason: str, bad: bool) -> None:
        path, line = span.source or ("", 0)
        report = reports.get(path)
        if report is not None:
            (report.bad if bad else report.warn)(line, reason)

    by_id: dict[str, Span] = {s.span_id: s for s in spans}
    if len(by_id) != len(spans):  # duplicates: the first of each id is kept
        by_id = {}
        first_of = by_id.setdefault
        for span in spans:
            first = first_of(span.span_id, span)
            if first is not span:
                where = f"{first.source[0]}:{first.source[1]}" if first.source else "?"
                note(span, f"duplicate span id {span.span_id} in trace {span.trace_id} (first at {where}); dropped",
                     True)
    children: dict[str, list[Span]] = {}
    tops: list[Span] = []  # spans without a parent in the trace
    # no parent cycle when every span started after its parent, or its parent has none: a loop of
    # parents holds no span without a parent, so it needs a span that started no later than its parent
    # (then no walk is needed to find one)
    later = True
    # no dependency cycle when every dependency (or link) points to a span that started earlier
    # (a recorder's always do): checked in this walk, the edges searched only otherwise
    ordered = True
    get = by_id.get
    roots: list[Span] = []  # run spans (`runs.is_run_span`, inline)
    known = runs.NAME_ROLES.get
    for span in by_id.values():
        attributes = span.attributes
        if attributes.get(GEN_AI_OPERATION_NAME) == OP_INVOKE_AGENT:
            roots.append(span)
        else:
            roles = known(span.name)
            if (runs.name_roles(span.name) if roles is None else roles) & NAMED_RUN:
                roots.append(span)
        if ordered:
            targets = attributes.get(DEPENDS_ON)
            if isinstance(targets, list):
                if targets:
                    ordered = _points_back(span, targets, get)
            elif span.links:
                ordered = _points_back(span, map(_SPAN_ID, span.links), get)
        parent = span.parent_id
        if parent == span.span_id:
            note(span, f"span {span.span_id} is its own parent; read as a root", False)
            span.parent_id = None
            tops.append(span)
        elif not parent:
            tops.append(span)
        else:
            above = get(parent)
            if above is None:
                note(span, f"orphan span {span.span_id}: parent {parent} not in trace {span.trace_id}", False)
                tops.append(span)
                continue
            if later and above.start_ns >= span.start_ns and above.parent_id:
                later = False
            below = children.get(parent)
            if below is None:
                children[parent] = [span]
            else:
                below.append(span)
    if not later and not _all_reached(tops, children, len(by_id)):
        _parent_cycles(by_id, note)
        children = {}
        for span in by_id.values():
            if span.parent_id:
                children.setdefault(span.parent_id, []).append(span)
    if not ordered:
        _dependency_search(by_id, note)
    return by_id, children, roots


_SPAN_ID = attrgetter("span_id")  # (of a link's target)


def _all_reached(tops: list[Span], children: dict[str, list[Span]], total: int) -> bool:
    """Whether every span is below a top one (it is unless some parents form a loop)."""
    reached = len(tops)
    stack = list(tops)
    while stack:
        below = children.get(stack.pop().span_id)
        if below:
            reached += len(below)
            stack += below
    return reached == total


def _parent_cycles(by_id: dict[str, Span], note: Callable[[Span, str, bool], None]) -> None:
    rooted: set[str] = set()  # spans whose ancestors are known to end at a root (walked already)
    for span in by_id.values():  # walk up, break at the span that closes the loop
        if span.span_id in rooted:
            continue
        parent = span.parent_id
        if not parent or parent not in by_id or parent in rooted:
            rooted.add(span.span_id)  # a root, or below a walked span: nothing to walk
            continue
        seen = {span.span_id}
        node = span
        while node.parent_id and node.parent_id in by_id and node.parent_id not in rooted:
            if node.parent_id in seen:
                note(node, f"parent cycle through span {node.span_id} in trace {node.trace_id}; read as a root", False)
                node.parent_id = None
                break
            seen.add(node.parent_id)
            node = by_id[node.parent_id]
        rooted |= seen


def _points_back(span: Span, targets: Iterable, get: Callable[[str], Span | None]) -> bool:
    """Whether each of a span's dependencies in the trace started before it (ties: a lower id)."""
    start, span_id = span.start_ns, span.span_id
    for target in targets:
        if isinstance(target, str):
            other = get(target)
            if other is not None and (other.start_ns > start or (other.start_ns == start and target >= span_id)):
                return False
    return True


def _dependency_search(by_id: dict[str, Span], note: Callable[[Span, str, bool], None]) -> None:
    edges = {}
    backwards = True  # every edge goes to a span that started earlier: no cycle, no search needed
    for span_id, span in by_id.items():
        targets = span.attributes.get(DEPENDS_ON)
        if isinstance(targets, list):
            out = edges[span_id] = [t for t in targets if isinstance(t, str) and t in by_id]
        elif span.links:
            out = edges[span_id] = [k.span_id for k in span.links if k.span_id in by_id]
        else:
            continue
        if backwards:
            start = span.start_ns
            for target in out:
                other = by_id[target].start_ns
                if other > start or (other == start and target >= span_id):
                    backwards = False
                    break
    if not edges or backwards:
        return
    state: dict[str, int] = {}
    for start in edges:
        if start in state:
            continue
        stack = [(start, iter(edges.get(start, ())))]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            for child in children:
                if state.get(child) == 1:
                    note(by_id[node], f"dependency cycle: span {node} depends on {child}, which depends back on it", False)
                elif child not in state:
                    state[child] = 1
                    stack.append((child, iter(edges.get(child, ()))))
                    break
            else:
                state[node] = 2
                stack.pop()


def trace_findings(spans: list[Span], reports: dict[str, Any], normalized: dict[str, int] | None,
                   rules: list | None, settings: AnalyzerSettings) -> Iterator[Finding]:
    """One trace's findings: checked (notes to `reports`), normalized (counted), runs located
    with `rules` (None: the built-ins) and the analysis's `settings`."""
    spans = evaluations.attach(spans, reports)  # (evaluation results read as events on the spans they name)
    if not spans:
        return
    by_id, children, roots = _checked(spans, reports)
    if not by_id:
        return
    convention = normalize_trace(list(by_id.values()))  # (rewrites attributes, never parents)
    if convention:
        roots = None  # (the run spans it marked: found again)
        if normalized is not None:
            normalized[convention] = normalized.get(convention, 0) + 1

    grouped = trace_runs(spans[0].trace_id, by_id, children, roots)
    nested = runs.sub_runs(grouped)

    def located(run: Run, delegated: dict[str, Finding]) -> Finding:
        finding = locate(run, rules, {sid: f.origin_error_type or "" for sid, f in delegated.items()}, settings,
                         top_level=id(run) not in nested)
        if finding.origin is None or finding.origin.span_id not in delegated:
            classify(finding)  # (one followed into a sub-agent takes the sub-agent's class)
        return finding

    yield from delegation.located(grouped, located)
