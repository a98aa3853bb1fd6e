"""Failures followed across agents: a run that delegated to a sub-agent inherits the sub-agent's
origin when the answer it relied on carried an error.

A sub-agent's run is nested under the span that delegated to it (the calling tool or step; the
recorder also links it `delegated_to`). Runs are located innermost first; a sub-run that failed,
or answered on an unrecovered error (`suspect`), makes its delegating span an origin of the
calling run (`lifecycle.compute`'s `delegated`), so the calling run's walk back from its own critical
failure can reach it. When that span is the calling run's origin, the finding is continued into
the sub-run: its origin, bug class and evidence are the sub-agent's, and its chain is the
sub-agent's chain followed by the calling run's (the joint hop's relation `delegated_to`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterator

from otel_agent_trace.analyzer.locate import Finding
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.vocabulary import Phase, Relation

_PROPAGATE, _CRITICAL = Phase.PROPAGATE.value, Phase.CRITICAL.value
DELEGATED_TO = Relation.DELEGATED_TO.value


def located(runs: list[Run], locate: Callable[[Run, dict[str, Finding]], Finding]) -> Iterator[Finding]:
    """Each run's finding, in the order of `runs`; `locate(run, delegated)` is given the findings
    of the sub-runs that carry an error, keyed by the span of `run` that delegated to each."""
    if len(runs) == 1:  # no sub-run (most traces): nothing to follow, no span index to build
        yield locate(runs[0], {})
        return
    owner = {sid: run for run in runs for sid in run.spans}
    below: dict[int, dict[str, Finding]] = {}
    findings: dict[int, Finding] = {}
    for run in reversed(runs):  # a sub-run starts after the run that delegated to it
        finding = locate(run, below.get(id(run), {}))
        follow(finding, below.get(id(run), {}))
        findings[id(run)] = finding
        caller = owner.get(run.root.parent_id or "")
        if caller is not None and caller is not run and finding.origin is not None and (
                finding.failed or finding.answer_suspect):
            below.setdefault(id(caller), {})[run.root.parent_id] = finding  # type: ignore[index]
    for run in runs:
        yield findings[id(run)]


def follow(finding: Finding, delegated: dict[str, Finding]) -> None:
    """Continue a finding whose origin is a delegating span into the sub-run's finding."""
    joint = finding.origin
    sub = delegated.get(joint.span_id) if joint is not None else None
    if sub is None or sub.origin is None:
        return
    inner = [*sub.chain[:-1], replace(sub.chain[-1], phase=_PROPAGATE, relation=DELEGATED_TO)] if sub.chain else []
    outer = finding.chain
    if len(outer) > 1:
        outer = [replace(outer[0], phase=_PROPAGATE, error_type=None), *outer[1:]]
    elif outer:  # the run delegated from its own span: the joint is the critical hop itself
        outer = [replace(outer[0], phase=_CRITICAL, error_type=finding.critical_error_type or outer[0].error_type)]
    finding.chain = inner + outer
    if finding.chains:
        finding.chains[0] = finding.chain
    finding.origin, finding.origin_error_type = sub.origin, sub.origin_error_type
    finding.origin_agent = sub.origin_agent or sub.run.agent
    if finding.confidence is not None and sub.confidence is not None:
        finding.confidence = round(finding.confidence * sub.confidence, 3)
    finding.bug_class = sub.bug_class
    finding.evidence = [f"the failure began in sub-agent {finding.origin_agent!r}, which {joint.name} delegated to; "
                        "its answer carried the error", *sub.evidence]


