"""Delta debugging (Zeller's ddmin) over a run's tool steps, each candidate re-executed.

Strategies:
- `ddmin`: classic ddmin; a candidate is kept when its replay reproduces the original failure
  under the signature mode (signature.py). With mode `any` this is seed 004's loose R0.
- `ddmin+closure`: candidates are closed under strong dependencies (closure.py), so no execution
  is spent on a subset that keeps a step without what it needs. It starts from the closure of the
  step the harness blamed for the signature (the step that last changed the output, or that
  failed): usually that probe is already the minimal case. The blamed step is kept without a test
  (the signature came from it); everything else is still tested by ddmin within the probe.

Executions are counted (the baseline replay of all steps included); identical candidates run once.
With a budget (`max_executions`) the search stops when it is spent and reports the smallest
candidate that reproduced the failure so far.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from otel_agent_trace.minimizer.closure import close
from otel_agent_trace.minimizer.signature import HARNESS_ERROR, HARNESS_TIMEOUT, Signature, same_failure
from otel_agent_trace.minimizer.trajectory import MinimizeError

STRATEGIES = ("ddmin", "ddmin+closure")


@dataclass(frozen=True)
class Outcome:
    """What one replay gave: its signature, and the step (position) that produced it, if known."""

    signature: Signature
    blame: int | None = None
    note: str = ""


@dataclass
class Execution:
    positions: tuple[int, ...]
    signature: Signature
    reproduced: bool
    blame: int | None
    seconds: float
    note: str = ""


@dataclass
class Search:
    strategy: str
    mode: str
    original: Signature
    minimal: tuple[int, ...]
    executions: list[Execution] = field(default_factory=list)
    budget_exhausted: bool = False

    @property
    def harness_failures(self) -> list[Execution]:
        return [e for e in self.executions if e.signature.kind in (HARNESS_ERROR, HARNESS_TIMEOUT)]


class _Spent(Exception):
    pass


class _Tester:
    """Runs candidates through `execute`, once each, counting executions against the budget."""

    def __init__(self, execute: Callable[[frozenset[int]], Outcome], max_executions: int | None):
        self.execute = execute
        self.max_executions = max_executions
        self.cache: dict[frozenset[int], Outcome] = {}
        self.log: list[Execution] = []
        self.original: Signature | None = None
        self.mode = "exact"

    def outcome(self, positions: frozenset[int]) -> Outcome:
        cached = self.cache.get(positions)
        if cached is not None:
            return cached
        if self.max_executions is not None and len(self.log) >= self.max_executions:
            raise _Spent()
        started = time.perf_counter()
        result = self.execute(positions)
        reproduced = self.original is not None and same_failure(self.original, result.signature, self.mode)
        self.log.append(Execution(tuple(sorted(positions)), result.signature, reproduced, result.blame,
                                  time.perf_counter() - started, result.note))
        self.cache[positions] = result
        return result

    def reproduces(self, positions: frozenset[int]) -> bool:
        assert self.original is not None
        return same_failure(self.original, self.outcome(positions).signature, self.mode)


def search(positions: Iterable[int], execute: Callable[[frozenset[int]], Outcome], *, strategy: str = "ddmin+closure",
           mode: str = "exact", needs: Mapping[int, set[int]] | None = None,
           max_executions: int | None = None) -> Search:
    """Minimize `positions`; `execute(subset)` replays a subset (its steps in their recorded order)."""
    if strategy not in STRATEGIES:
        raise MinimizeError(f"unknown strategy {strategy!r}; one of {', '.join(STRATEGIES)}")
    if max_executions is not None and max_executions < 1:
        raise MinimizeError("--max-executions must be at least 1 (the baseline replay)")
    everything = frozenset(positions)
    tester = _Tester(execute, max_executions)
    tester.mode = mode
    baseline = tester.outcome(everything)
    if not baseline.signature.failing or baseline.signature.kind in (HARNESS_ERROR, HARNESS_TIMEOUT):
        tester.log[0].reproduced = False
        raise MinimizeError(f"the replay of all {len(everything)} steps gives {baseline.signature}: "
                            "nothing to minimize (the harness does not reproduce a failure)")
    tester.original = baseline.signature
    tester.log[0].reproduced = True
    result = Search(strategy, mode, baseline.signature, tuple(sorted(everything)), tester.log)
    current = everything
    try:
        if strategy == "ddmin":
            current = _ddmin(current, tester, lambda c: c, result)
        else:
            deps = needs or {}
            pinned = frozenset([baseline.blame]) if baseline.blame is not None and mode != "any" else frozenset()
            if pinned:
                probe = close(pinned, deps)
                if probe != current and tester.reproduces(probe):
                    current = probe
                    result.minimal = tuple(sorted(current))
            current = _ddmin(current, tester, lambda c: close(c | pinned, deps), result)
    except _Spent:
        result.budget_exhausted = True
    return result


def _ddmin(current: frozenset[int], tester: _Tester, normalize: Callable[[frozenset[int]], frozenset[int]],
           result: Search) -> frozenset[int]:
    n = 2
    while len(current) >= 2:
        ordered = sorted(current)
        chunks = [frozenset(ordered[i * len(ordered) // n:(i + 1) * len(ordered) // n]) for i in range(n)]
        progressed = False
        for kind, candidates in (("subset", chunks), ("complement", [current - c for c in chunks])):
            for candidate in candidates:
                candidate = normalize(candidate) & current
                if not candidate or candidate == current:
                    continue
                if tester.reproduces(candidate):
                    current = candidate
                    result.minimal = tuple(sorted(current))
                    n = 2 if kind == "subset" else max(n - 1, 2)
                    progressed = True
                    break
            if progressed:
                break
        if not progressed:
            if n >= len(current):
                break
            n = min(2 * n, len(current))
    return current
