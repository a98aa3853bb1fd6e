"""Multi-agent runs: a failure followed across agents to the sub-agent step where it began.

A sub-agent's run (an agent handed off to, or run as a tool) nests under the step of the run that
delegated to it, its root linked to that step (`delegated_to`). Each run is located on its own
(locate.py); then a failed run whose walk found no origin of its own takes the origin of the
sub-run it delegated to (the latest one that has one): its chain runs from the origin inside the
sub-agent to the sub-run's answer, across the delegation to the delegating step, and on to the
failure. The bug class and evidence are the sub-run's (classified in its own run).
"""

from __future__ import annotations

from otel_agent_trace.analyzer.graph import RESULT_OF
from otel_agent_trace.analyzer.locate import Candidate, Finding, Hop
from otel_agent_trace.model import DEPENDS_ON, DEPENDS_ON_RELATIONS, Phase, Relation

NESTED = "nested"
# what locate/classify said of a run whose walk found no origin (replaced by the sub-run's)
_NO_ORIGIN_EVIDENCE = ("no error was recorded before the failure", "no tool error, no dropped context")  # a sub-run under a span of another run, without a delegated_to link


def follow_delegations(findings: list[Finding]) -> None:
    """Give each failed run without an origin the origin of the sub-run it delegated to (in place;
    `findings` are one trace's, located and classified)."""
    owner = {sid: f for f in findings for sid in f.run.spans}
    subs: dict[int, list[tuple[Finding, str]]] = {}
    for f in findings:
        parent = owner.get(f.run.root.parent_id or "")
        if parent is not None and parent is not f:
            subs.setdefault(id(parent), []).append((f, f.run.root.parent_id or ""))
    # deepest first, so a chain of handoffs carries the origin up one level at a time
    for f in sorted(findings, key=lambda f: f.run.root.start_ns, reverse=True):
        if f.origin is not None or not f.failed or f.critical is None:
            continue
        taken = [(s, step) for s, step in subs.get(id(f), ()) if s.origin is not None and s.chain]
        if taken:
            sub, step = max(taken, key=lambda t: t[0].run.root.start_ns)
            _graft(f, sub, f.run.spans[step])


def _graft(f: Finding, sub: Finding, step_span) -> None:
    relation = _relation(sub, step_span.span_id)
    last = sub.chain[-1]
    hops = sub.chain[:-1] + [
        Hop(last.span, last.step_index, Phase.PROPAGATE.value, last.error_type, RESULT_OF),
        Hop(sub.run.root, None, Phase.PROPAGATE.value, None, relation),
        Hop(step_span, f.run.step_index_of(step_span), Phase.PROPAGATE.value, None, RESULT_OF),
        Hop(f.critical, f.run.step_index_of(f.critical), Phase.CRITICAL.value, f.critical_error_type, None),
    ]
    if f.critical is step_span:
        del hops[-2]
    f.origin, f.origin_error_type = sub.origin, sub.origin_error_type
    f.chain, f.chains = hops, [hops]
    f.confidence = sub.confidence if sub.confidence is not None else 0.8
    f.candidates = [Candidate(sub.origin, sub.origin_error_type, f.confidence, confidence=f.confidence,  # type: ignore[arg-type]
                              chain=hops)]
    f.bug_class = sub.bug_class
    agent = sub.run.agent or sub.run.root.name
    f.evidence = [e for e in f.evidence if not e.startswith(_NO_ORIGIN_EVIDENCE)]
    f.evidence.append(f"the failure began in sub-agent {agent}, which {step_span.name} {relation.replace('_', ' ')}: "
                      f"{sub.origin.name} ({sub.origin_error_type})")  # type: ignore[union-attr]
    f.evidence.extend(e for e in sub.evidence if e not in f.evidence)


def _relation(sub: Finding, step_id: str) -> str:
    """`delegated_to` when the sub-run's root links to the step so, else `nested`."""
    targets = sub.run.root.attr(DEPENDS_ON) or []
    relations = sub.run.root.attr(DEPENDS_ON_RELATIONS) or []
    for target, relation in zip(targets, relations):
        if target == step_id and relation == Relation.DELEGATED_TO.value:
            return relation
    if any(link.span_id == step_id for link in sub.run.root.links):
        return Relation.DELEGATED_TO.value
    return NESTED
