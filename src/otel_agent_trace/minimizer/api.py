"""`minimize(trace_file, harness=...)`: the Python API behind `otel-agent-trace minimize`."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from otel_agent_trace.minimizer.closure import effective_edges
from otel_agent_trace.minimizer.ddmin import STRATEGIES, Outcome, Search, search
from otel_agent_trace.minimizer.harness import Harness, guarded, load_harness
from otel_agent_trace.minimizer.signature import MODES
from otel_agent_trace.minimizer.trajectory import MinimizeError, Step, Trajectory, load

CUSTOM_HARNESS_TIMEOUT = 120.0  # seconds one execution of a module:function harness may take
# --compare: the seed's three strategies (R0, R1, R2)
COMPARED = (("loose", "ddmin", "any"), ("strict", "ddmin", "exact"), ("strict+closure", "ddmin+closure", "exact"))


@dataclass
class MinimizeResult:
    trajectory: Trajectory
    search: Search
    label: str = ""  # the --compare name (loose, strict, strict+closure), else the strategy
    trace_file: str | None = None  # the minimal run's trace, when written
    trace_id: str | None = None  # its trace id
    source: str | None = None  # the recorded trace file

    @property
    def minimal_steps(self) -> list[Step]:
        return [self.trajectory.steps[p] for p in self.search.minimal]

    @property
    def executions(self) -> int:
        return len(self.search.executions)

    @property
    def signature(self) -> str:
        return str(self.search.original)

    @property
    def reproduced(self) -> bool:
        """Whether the minimal case's own replay gave the original signature (exactly)."""
        positions = self.search.minimal
        for execution in self.search.executions:
            if execution.positions == positions:
                return execution.signature == self.search.original
        return False

    @property
    def minimal_signature(self) -> str | None:
        for execution in self.search.executions:
            if execution.positions == self.search.minimal:
                return str(execution.signature)
        return None

    def save_command(self) -> str:
        """The line that adds the minimal case to the regression set (`otel-agent-trace save`)."""
        if self.trace_file:
            target = f"{shlex.quote(self.trace_file)} --trace-id {self.trace_id}"
        else:
            steps = ",".join(str(p) for p in self.search.minimal)
            target = f"{shlex.quote(self.source or '-')} --trace-id {self.trajectory.trace_id} --steps {steps}"
        return f"otel-agent-trace save {target} --expect-signature {shlex.quote(self.signature)}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "minimal_steps": [s.as_dict() for s in self.minimal_steps],
            "executions": self.executions,
            "signature": self.signature,
            "strategy": self.search.strategy,
            "signature_mode": self.search.mode,
            "trace_id": self.trajectory.trace_id,
            "recorded_steps": len(self.trajectory.steps),
            "minimal_signature": self.minimal_signature,
            "reproduced": self.reproduced,
            "budget_exhausted": self.search.budget_exhausted,
            "harness_failures": [{"steps": list(e.positions), "signature": str(e.signature)}
                                 for e in self.search.harness_failures],
            "minimal_trace": self.trace_file and {"path": self.trace_file, "trace_id": self.trace_id},
            "save_command": self.save_command(),
            "log": [{"steps": list(e.positions), "signature": str(e.signature), "reproduced": e.reproduced}
                    for e in self.search.executions],
        }


@dataclass
class Options:
    """How to replay: the harness and, for the sandbox, its workspace and limits."""

    harness: str | Harness = "sandbox"
    workspace: str | None = None
    output: str | None = None
    expect: str | None = None
    time_limit: float = 10.0
    output_limit: int = 1 << 20
    tool_kinds: Mapping[str, str] = field(default_factory=dict)
    harness_timeout: float | None = None

    def build(self) -> Harness:
        if callable(self.harness):
            return self.harness
        if self.harness == "sandbox":
            from otel_agent_trace.minimizer.sandbox import Sandbox

            return Sandbox(self.workspace, self.output, self.expect, self.time_limit, self.output_limit,
                           tool_kinds=self.tool_kinds)
        return load_harness(self.harness)


def minimize(trace: str | os.PathLike[str] | Trajectory, harness: str | Harness = "sandbox", *,
             trace_id: str | None = None, strategy: str = "ddmin+closure", signature: str = "exact",
             workspace: str | None = None, output: str | None = None, expect: str | None = None,
             max_executions: int | None = None, time_limit: float = 10.0, output_limit: int = 1 << 20,
             tool_kinds: Mapping[str, str] | None = None, harness_timeout: float | None = None,
             trace_out: str | None = None, label: str | None = None) -> MinimizeResult:
    """Shrink a recorded failing run to the smallest set of its tool steps that, replayed by
    `harness`, fails with the same signature. `harness_timeout` (seconds per execution): None is
    120 s for a custom harness, and for the sandbox its per-step `time_limit` times the steps plus
    120 s. Raises MinimizeError on unusable input."""
    if signature not in MODES:
        raise MinimizeError(f"unknown signature mode {signature!r}; one of {', '.join(MODES)}")
    if strategy not in STRATEGIES:
        raise MinimizeError(f"unknown strategy {strategy!r}; one of {', '.join(STRATEGIES)}")
    source = None if isinstance(trace, Trajectory) else os.fspath(trace)
    trajectory = trace if isinstance(trace, Trajectory) else load(os.fspath(trace), trace_id)
    if not trajectory.steps:
        raise MinimizeError(f"run {trajectory.trace_id} has no tool steps to minimize")
    runner = Options(harness, workspace, output, expect, time_limit, output_limit, dict(tool_kinds or {}),
                     harness_timeout).build()
    if harness_timeout is None:  # the sandbox limits each step itself; its whole replay can take them all
        sandbox = isinstance(harness, str) and harness == "sandbox"
        harness_timeout = CUSTOM_HARNESS_TIMEOUT + (time_limit * len(trajectory.steps) if sandbox else 0)
    pure_of = getattr(runner, "pure", None)
    pure = {s.position for s in trajectory.steps if pure_of is not None and pure_of(s)}
    needs = effective_edges(trajectory.depends, pure)

    def execute(positions: frozenset[int]) -> Outcome:
        return guarded(runner, [trajectory.steps[p] for p in sorted(positions)], harness_timeout)

    result = search(range(len(trajectory.steps)), execute, strategy=strategy, mode=signature, needs=needs,
                    max_executions=max_executions)
    out = MinimizeResult(trajectory, result, label or strategy, source=source)
    if trace_out:
        from otel_agent_trace.minimizer.trace_out import write_minimal_trace

        out.trace_file = trace_out
        out.trace_id = write_minimal_trace(trace_out, trajectory.run, [s.span_id for s in out.minimal_steps],
                                           out.signature, result.strategy)
    return out


def compare(trace: str | os.PathLike[str] | Trajectory, harness: str | Harness = "sandbox", *,
            strategies: Sequence[tuple[str, str, str]] = COMPARED, signature: str = "exact",
            **options: Any) -> list[MinimizeResult]:
    """The same run minimized by each of seed 004's strategies (loose, strict, strict+closure);
    `signature` is the mode of the strict ones."""
    trajectory = trace if isinstance(trace, Trajectory) else load(os.fspath(trace), options.pop("trace_id", None))
    options.pop("trace_id", None)
    options.pop("trace_out", None)
    return [minimize(trajectory, harness, strategy=strategy, signature=signature if mode == "exact" else mode,
                     label=label, **options)
            for label, strategy, mode in strategies]
