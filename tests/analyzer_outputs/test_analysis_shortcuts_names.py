"""More per-trace shortcuts that must give what the long way gives: the parent-cycle walk skipped
when start times rule a cycle out, span roles read from a per-name cache, a context that only grew
not searched for lost messages, and tool calls counted per name in the metrics."""

from __future__ import annotations

from otel_agent_trace.analyzer import runs
from otel_agent_trace.analyzer.trace import check_trace
from otel_agent_trace.analyzer.lifecycle import Lifecycle
from otel_agent_trace.analyzer.lifecycle.context import dropped_context as _dropped_context
from otel_agent_trace.analyzer.metrics import combine
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.spans import InputReport, Span


def _span(span_id, parent=None, name="x", start=0, **attributes):
    return Span("t1", span_id, parent, name, start, start + 1, attributes=dict(attributes), source=("f", 1))


def _cycle_notes(spans):
    report = InputReport("f")
    check_trace(spans, {"f": report})
    return sorted(w.reason for w in report.warnings if "parent cycle" in w.reason)


def test_parent_cycles_found_whatever_the_start_times():
    # a loop of parents with equal starts, with starts that rise along it, below a top with the same start
    assert _cycle_notes([_span("a", "b", start=5), _span("b", "a", start=5)])
    assert _cycle_notes([_span("a", "b", start=1), _span("b", "c", start=2), _span("c", "a", start=3)])
    assert _cycle_notes([_span("r", start=5), _span("s", "r", start=5), _span("a", "b", start=6),
                         _span("b", "a", start=7)])
    # a child that started with its top parent, or before it, is no loop
    assert not _cycle_notes([_span("r", start=5), _span("s", "r", start=5), _span("t", "s", start=4)])


def test_name_roles_are_the_prefix_tests():
    for name in ["invoke_agent", "invoke_agent a", "invoke_agents", "agent_step", "agent_step 3", "agent_stepper",
                 "execute_tool f", "execute_tool", "chat m", "chat", "chatter", "", "x invoke_agent"]:
        roles = runs.name_roles(name)
        assert bool(roles & runs.NAMED_RUN) == (name == "invoke_agent" or name.startswith("invoke_agent "))
        assert bool(roles & runs.NAMED_STEP) == name.startswith("agent_step")
        assert bool(roles & runs.NAMED_TOOL) == name.startswith("execute_tool ")
        assert bool(roles & runs.NAMED_CHAT) == name.startswith("chat ")
        assert runs.name_roles(name) == roles  # (from the cache)


def _steps_dropped(contexts):
    root = _span("r", name="invoke_agent a")
    run = Run("t1", root, {"r": root})
    for i, hashes in enumerate(contexts):
        step = _span(f"s{i}", "r", f"agent_step {i}", i + 1, **{"agent_trace.step.index": i,
                                                               "agent_trace.context.message_hashes": hashes})
        run.spans[step.span_id] = step
        run.steps.append(step)
    life = Lifecycle()
    _dropped_context(run, life)
    return sorted(s for s, st in life.states.items() if st.error_type == "context_dropped")


def test_dropped_context_grown_reordered_and_lost():
    assert _steps_dropped([["a"], ["a", "b"], ["a", "b", "c"]]) == []  # grew
    assert _steps_dropped([["a", "b"], ["b", "a", "c"]]) == []  # reordered, nothing lost
    assert _steps_dropped([["a", "b"], ["a"], ["a", "c"]]) == ["s1"]  # shrank
    assert _steps_dropped([["a", "b"], ["a", "c", "b"], ["c", "a", "d"]]) == ["s2"]  # b lost, order changed


def test_tool_counts_combine_per_name():
    from otel_agent_trace.analyzer.metrics import RunMetrics

    m1 = RunMetrics(2, {"f": 3, "g": 1}, {"f": 1}, 0, True, False, "tool_exception", "tool", True, 1, 2, {})
    m2 = RunMetrics(1, {"g": 2}, {}, 1, False, False, None, None, False, 3, 4, {})
    out = combine([m1, m2])
    assert out["tool_calls"] == 6 and out["wrong_tool_rate"] == round(1 / 6, 4)
    assert out["tool_error_rate"] == {"f": {"calls": 3, "errors": 1, "rate": round(1 / 3, 4)},
                                      "g": {"calls": 3, "errors": 0, "rate": 0.0}}
