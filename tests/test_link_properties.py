"""Property: whatever the agent does, the dependency links form a DAG and point only to earlier
spans of the same trace (hypothesis-generated scripts through the real client and server)."""

from __future__ import annotations

import itertools

import openai
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scenario_agent import run_loop

import otel_agent_trace

VALUES = ["A1001", "C-77", "out.json", "count.py", 42, 19.99, "ok", True, 0]
RESULTS = {
    "echo": lambda value=None: {"value": value, "ref": "R-9"},
    "fail": lambda value=None: {"success": False, "error": f"no {value}"},
    "empty": lambda value=None: [],
    "write_file": lambda path=None, content=None: {"written": path},
    "run_shell": lambda command=None: {"exit_code": 0, "stdout": f"ran {command}"},
}
ARGUMENTS = {
    "echo": st.fixed_dictionaries({"value": st.sampled_from(VALUES)}),
    "fail": st.fixed_dictionaries({"value": st.sampled_from(VALUES)}),
    "empty": st.fixed_dictionaries({"value": st.sampled_from(VALUES)}),
    "write_file": st.fixed_dictionaries({"path": st.sampled_from(["out.json", "count.py", "notes.md"]),
                                         "content": st.sampled_from(["x = 1", "see A1001", "R-9"])}),
    "run_shell": st.fixed_dictionaries({"command": st.sampled_from(["python count.py", "cat out.json", "ls"])}),
}
call = st.sampled_from(sorted(ARGUMENTS)).flatmap(
    lambda name: ARGUMENTS[name].map(lambda args: {"name": name, "arguments": args}))
turn = st.lists(call, min_size=1, max_size=3).map(lambda calls: {"tool_calls": calls})
script = st.lists(turn, min_size=1, max_size=8).map(lambda turns: turns + [{"content": "done with A1001 and 19.99"}])

_ids = itertools.count()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=script)
def test_links_are_acyclic_and_point_backwards(instrument, demo_server, turns):
    traced = instrument()
    key = f"property run {next(_ids)}"
    demo_server.scripts[key] = turns
    client = openai.OpenAI(base_url=demo_server.base_url, api_key="t", max_retries=0)
    with otel_agent_trace.agent_run("property"):
        run_loop(client, key, RESULTS)
    spans = {s.context.span_id: s for s in traced.spans}
    assert len(traced.runs()) == 1 and len(traced.named("agent_step")) == len(turns)
    graph = {}
    for span in spans.values():
        targets = []
        for link in span.links:
            target = spans.get(link.context.span_id)
            assert target is not None, "a link points outside the trace's recorded spans"
            assert link.context.trace_id == span.context.trace_id
            assert target.start_time <= span.start_time and target is not span
            targets.append(link.context.span_id)
        mirror = [int(h, 16) for h in (span.attributes or {}).get("agent_trace.depends_on", ())]
        assert mirror == targets
        graph[span.context.span_id] = targets
    # acyclic: a depth-first search never meets a span on its own path
    state: dict[int, int] = {}

    def visit(node: int) -> None:
        state[node] = 1
        for nxt in graph.get(node, ()):
            assert state.get(nxt) != 1, "dependency cycle"
            if nxt not in state:
                visit(nxt)
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node)
