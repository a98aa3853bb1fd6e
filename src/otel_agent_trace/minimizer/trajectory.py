"""A recorded run's tool steps, read with the analyzer's readers: the input of minimization.

A step is one `execute_tool` span of the run, in the order the tools ran, with the recorded
arguments (the replay's constants: the model is not asked again) and its strong dependencies on
earlier steps, read from the trace's links (see closure.py). Nothing here imports the recorder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from otel_agent_trace.analyzer.graph import build_graph
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.json_text import parse_json_or_text
from otel_agent_trace.semconv import (
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    STEP_INDEX,
    TOOL_OUTCOME,
)
from otel_agent_trace.vocabulary import STRONG_RELATIONS


class MinimizeError(Exception):
    """Unusable input or arguments: the CLI prints it and exits 2."""


@dataclass(frozen=True)
class Step:
    """One recorded tool call. `position`: its place among the run's tools (0-based, replay order);
    `step_index`: the agent step that requested it (`agent_trace.step.index`)."""

    position: int
    step_index: int | None
    tool: str
    arguments: Any
    span_id: str
    result: Any = None
    outcome: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"step_index": self.step_index, "tool": self.tool, "arguments": self.arguments}


@dataclass
class Trajectory:
    trace_id: str
    run: Run
    steps: list[Step]
    # position -> [(earlier position, relation)]: strong edges between tool steps (closure.py)
    depends: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    bad_lines: list[str] = field(default_factory=list)


def load(path: str, trace_id: str | None = None) -> Trajectory:
    """The run to minimize in `path`: the one of `trace_id` (a unique prefix is enough), else the
    only run, else the only failed run; anything else is a MinimizeError naming the choices."""
    run, bad = select_run(path, trace_id)
    trajectory = Trajectory(run.trace_id, run, steps_of(run), bad_lines=bad)
    trajectory.depends = strong_edges(run, trajectory.steps)
    return trajectory


def select_run(path: str, trace_id: str | None = None) -> tuple[Run, list[str]]:
    """One run of a trace file (see `load`) and the file's bad lines; replay chooses alike."""
    from otel_agent_trace.analyzer.analysis import analyze

    analysis = analyze([path], trace_prefix=trace_id.lower() if trace_id else None)
    for item in analysis.inputs:
        if item.error:
            raise MinimizeError(f"{item.path}: {item.error}")
    bad = [f"{item.path}:{b.line}: {b.reason}" for item in analysis.inputs for b in item.bad_lines]
    findings = analysis.findings
    if not findings:
        raise MinimizeError(f"{path}: no agent run" + (f" with trace id {trace_id}" if trace_id else ""))
    if len(findings) > 1:
        failed = [f for f in findings if f.failed]
        if trace_id is None and len(failed) == 1:
            findings = failed
        else:
            ids = ", ".join(sorted({f.run.trace_id for f in findings}))
            raise MinimizeError(f"{path}: {len(findings)} runs match; choose one with --trace-id ({ids})")
    return findings[0].run, bad


def steps_of(run: Run) -> list[Step]:
    steps = []
    for position, span in enumerate(run.tools):
        raw = span.attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS)
        if raw is None:
            raise MinimizeError(
                f"tool span {span.span_id} ({span.name}) has no {GEN_AI_TOOL_CALL_ARGUMENTS}: the trace was "
                "recorded without content capture, and a replay needs the arguments")
        index = span.attributes.get(STEP_INDEX)
        steps.append(Step(position, index if isinstance(index, int) else None,
                          str(span.attributes.get(GEN_AI_TOOL_NAME) or span.name.split(" ", 1)[-1]),
                          parse_json_or_text(raw), span.span_id,
                          parse_json_or_text(span.attributes.get(GEN_AI_TOOL_CALL_RESULT)),
                          span.attributes.get(TOOL_OUTCOME)))
    return steps


def strong_edges(run: Run, steps: list[Step]) -> dict[int, list[tuple[int, str]]]:
    """For each step, the earlier steps it strongly depends on (`decided_by`, `data`, `resource`;
    never the weak `consumes`). Edges into spans that are not tool steps (a `decided_by` edge ends
    at the deciding agent step) are followed through them, over strong edges only, to the tool
    steps beyond, if any."""
    graph = build_graph(run)
    position_of = {s.span_id: s.position for s in steps}
    out: dict[int, list[tuple[int, str]]] = {}
    for step in steps:
        found: list[tuple[int, str]] = []
        seen = {step.span_id}
        frontier = [(target, relation) for target, relation in graph.edges.get(step.span_id, ())]
        while frontier:
            target, relation = frontier.pop()
            if relation not in STRONG_RELATIONS or target in seen:
                continue
            seen.add(target)
            if target in position_of:
                if (position_of[target], relation) not in found:
                    found.append((position_of[target], relation))
                continue
            frontier += [(t, r) for t, r in graph.edges.get(target, ())]
        out[step.position] = sorted(found)
    return out
