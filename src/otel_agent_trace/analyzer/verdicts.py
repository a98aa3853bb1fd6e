"""How a run is known to have failed from outside it: verdicts.

Most agent failures raise nothing: the answer is wrong, and only someone outside the run knows
it (an eval harness, a feedback button, a benchmark's labels). A *verdict* says so: the run
failed, with an error type and the evidence for it. Every way a user tells us goes through the
one function here, `mark_failed`, which the analysis calls per run (`locate.locate`) before the
critical-failure rules fire:

* the span the verdict names (an evaluated span), else the run span, becomes `critical`, with the
  verdict's error type (`known_failed`, `evaluation_failed`, `wrong_answer`) as a flag, and as its
  error type unless it already has one;
* the rule of the verdict's source (a `VerdictSource` is a critical-failure rule matching those
  error types) then fires on it, so the run is `failed`, and the origin is searched from there as
  for any failure: a proven error upstream, else the suspicions of `analyzer/silent/`.

Sources (`VerdictSource`), given to the analysis with the critical-failure rules (they are rules):
`AllFailed` (`analyze --all-failed`: every run in the input failed). A source decides per run;
sub-agent runs (`top_level` False) are left to their own verdicts: a task that failed says
nothing about whether each helper it called did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from otel_agent_trace.analyzer.lifecycle import Lifecycle
from otel_agent_trace.analyzer.rule import Rule
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.vocabulary import ErrorType, Phase

KNOWN_FAILED = ErrorType.KNOWN_FAILED.value
VERDICT_TYPES = (ErrorType.KNOWN_FAILED.value, ErrorType.EVALUATION_FAILED.value, ErrorType.WRONG_ANSWER.value)
_CRITICAL = Phase.CRITICAL.value


@dataclass(frozen=True)
class Verdict:
    """A run failed, as someone outside it knows: `error_type` (one of `VERDICT_TYPES`), the
    `evidence` a person reads (which evaluation, "expected X, got Y", ...), and the span the
    verdict is about (`span_id`: an evaluated span; None: the run as a whole)."""

    error_type: str
    evidence: str
    span_id: str | None = None
    expected: Any = None  # the expected answer (`analyze --expected`: an `expected.Expectation`), when one is known


@dataclass
class VerdictSource(Rule):
    """A critical-failure rule whose facts come from outside the run: `verdicts(run, top_level)`
    says which verdicts hold for a run; `mark_failed` records each, and the rule then fires on the
    marked span as any rule does (its `match` names the verdict error types)."""

    rule_id: str = "VERDICT"
    description: str = "the run is known to have failed"
    match: dict[str, Any] = field(default_factory=lambda: {"error_type": list(VERDICT_TYPES)})

    def verdicts(self, run: Run, top_level: bool) -> list[Verdict]:
        return []


@dataclass
class AllFailed(VerdictSource):
    """`analyze --all-failed`: every (top-level) run in the input is known to have failed."""

    rule_id: str = "KNOWN_FAILED"
    description: str = "every run in the input is known to have failed (--all-failed)"
    match: dict[str, Any] = field(default_factory=lambda: {"error_type": KNOWN_FAILED, "span_kind": "run"})

    def verdicts(self, run: Run, top_level: bool) -> list[Verdict]:
        if not top_level:
            return []
        return [Verdict(KNOWN_FAILED, "the run is known to have failed (analyze --all-failed)")]


def mark_failed(run: Run, life: Lifecycle, verdict: Verdict) -> Span:
    """Record one verdict on a run's lifecycle: the span it names (else the run span) becomes
    `critical`, flagged with the verdict's error type, which is also its error type unless the
    span has one already (a run that raised keeps `run_exception`). Returns the marked span."""
    span = run.spans.get(verdict.span_id or "") or run.root
    state = life.state(span.span_id)
    state.phase = _CRITICAL
    if not state.error_type:
        state.error_type = verdict.error_type
    state.flags.add(verdict.error_type)
    state.reason = f"{state.reason}; {verdict.evidence}" if state.reason else verdict.evidence
    return span


def apply(run: Run, life: Lifecycle, rules: Iterable[Rule], top_level: bool = True) -> list[Verdict]:
    """Every verdict the sources among `rules` give for the run, recorded (`mark_failed`)."""
    out: list[Verdict] = []
    for rule in rules:
        if isinstance(rule, VerdictSource) and rule.enabled:
            for verdict in rule.verdicts(run, top_level):
                mark_failed(run, life, verdict)
                out.append(verdict)
    return out
