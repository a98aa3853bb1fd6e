"""Loops: the same request made `threshold` times (`detectors.loop_reached`, as online)."""

from __future__ import annotations

from otel_agent_trace import detectors
from otel_agent_trace.analyzer.lifecycle.state import Lifecycle, count, decider_of, mark
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.vocabulary import ErrorType

_LOOP_DETECTED = ErrorType.LOOP_DETECTED.value

def loops(run: Run, life: Lifecycle, threshold: int) -> None:
    """`detectors.loop_reached` over the run's tool spans, each standing for the request that made
    it, counting the earlier calls that did not fail; the origin is the deciding step.
    `threshold`: the analysis's (`AnalyzerSettings.loop_threshold`; 0: off)."""
    tools = run.tools
    if threshold <= 0 or len(tools) < threshold:
        return  # too few calls to repeat one `threshold` times
    if life.states and any(life.error_type(s.span_id) == _LOOP_DETECTED for s in run.steps):
        return
    names = run.tool_names
    per_name = count(names) if life.tool_counts is None else life.tool_counts
    call_key, known = life.call_key, life.call_keys
    # (a tool called fewer than `threshold` times cannot loop: its arguments need no canonical form)
    calls = [(tool, known.get(tool.span_id) or call_key(tool, name)) for tool, name in zip(tools, names)
             if per_name[name] >= threshold]
    if len({key for _, key in calls}) > len(calls) - threshold + 1:
        return  # no request repeated `threshold` times (the common case): nothing can reach it
    origins = life.origins
    ok_before: dict[tuple[str, str], int] = {}
    for tool, key in calls:
        done, failed = ok_before.get(key, 0), tool.span_id in origins
        if detectors.loop_reached(done, threshold):
            target = decider_of(run, tool)
            mark(life, target, _LOOP_DETECTED, f"{key[0]} called {threshold} times with the same arguments")
            life.state(target.span_id).flags.add("loop_detected")
        if not failed:
            ok_before[key] = done + 1
