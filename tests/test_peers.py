"""OpenInference and OpenLLMetry beside ours, as a user has them: their OpenAI and LangChain
instrumentations installed in the same venv and loaded by `opentelemetry-instrument` with ours.

Each peer lives in a venv of its own (tests/stacks/peer_venvs.py, built on first use: they must
not be in the test venv, whose every `opentelemetry-instrument` run would load them). The program:
the plain openai support loop on three tickets (the second's lookup returns `[]`, its reply is
rejected and the program goes on) and a LangGraph `create_react_agent` on the healthy ticket; the
tickets carry an e-mail address and a phone number. `OTEL_AGENT_TRACE_COEXIST=nest`: each model call
has one chat span of ours and the peer's under it; `adopt`: the peer's chat span is dropped at
export, ours alone says it. In both: tokens counted once, no run made of their spans, and no
seeded personal data in any exported span, theirs included."""

from __future__ import annotations

import pytest

from stacks.peer_venvs import PEERS, peer_python
from stacks.zero_code import analyze, attributes, run_instrumented, spans_of

PROGRAM = """
import openai, support_agent, langgraph_agent
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

server = ScriptedOpenAIServer(support_agent.SCRIPTS).start()
client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
for ticket in support_agent.TICKETS[:3]:
    try:
        support_agent.handle_ticket(client, ticket)
    except support_agent.MissingRefundAmount:
        pass
graph = langgraph_agent.build_agent(server.base_url)
langgraph_agent.handle_ticket(graph, support_agent.TICKETS[0])
"""
CALLS = 9 + 3  # the loop's three tickets (three calls each), the graph's three
SEEDED = ("jane.doe@example.com", "415 555 0134")


@pytest.fixture(scope="module", params=PEERS)
def peer(request):
    python, output = peer_python(request.param)
    if python is None:
        pytest.skip(f"the {request.param} venv could not be installed (no package registry?):\n{output}")
    return request.param, python


def _peer_chats(spans, peer):
    """The peer's span for each OpenAI call (not its LangChain spans)."""
    scope = {"openinference": "openinference.instrumentation.openai",
             "openllmetry": "opentelemetry.instrumentation.openai"}[peer]
    return [s for sc, s in spans if sc.startswith(scope)]


@pytest.mark.parametrize("coexist", ["nest", "adopt"])
def test_peer_beside_ours(tmp_path, peer, coexist):
    name, python = peer
    proc, traces = run_instrumented(PROGRAM, tmp_path, python=python, OTEL_AGENT_TRACE_COEXIST=coexist,
                                    TRACELOOP_TRACE_CONTENT="true", OPENINFERENCE_HIDE_INPUTS="false")
    assert proc.returncode == 0, proc.stderr[-3000:]
    spans = spans_of(traces)
    by_id = {s["spanId"]: (scope, s) for scope, s in spans}
    ours = [s for scope, s in spans if scope == "otel_agent_trace"]
    my_chats = [s for s in ours if s["name"].startswith("chat")]
    assert len(my_chats) == CALLS
    langchain = [s for scope, s in spans if "langchain" in scope]
    assert langchain, f"{name}'s LangChain instrumentation must be active here: {sorted({sc for sc, _ in spans})}"
    theirs = _peer_chats(spans, name)
    # OpenLLMetry's LangChain instrumentation suppresses its OpenAI one inside a LangChain model
    # call (its `ChatOpenAI.chat` span, around ours, records those): 9 then, OpenInference's 12
    expected = 9 if name == "openllmetry" else CALLS
    if coexist == "nest":
        assert len(theirs) == expected, f"{name}'s OpenAI instrumentation must be active here"
        for span in theirs:  # each directly under our chat span of the same call
            scope, parent = by_id[span["parentSpanId"]]
            assert scope == "otel_agent_trace" and parent["name"].startswith("chat"), (span["name"], parent["name"])
    else:
        assert theirs == []  # ours holds what theirs said
    report = analyze(traces)
    runs = report["runs"]
    # no run made of theirs: the loop's three tickets (the second's reply rejected and caught), the graph
    assert sorted(r["status"] for r in runs) == ["ok", "ok", "ok", "suspect"], [(r.get("agent"), r["status"]) for r in runs]
    [suspect] = [r for r in runs if r["status"] == "suspect"]
    assert (suspect["origin"]["tool"], suspect["origin"]["error_type"]) == ("lookup_order", "tool_empty_result")
    metrics = report["summary"]["metrics"]
    assert metrics["steps_per_run"]["mean"] == 3  # their model calls are not steps
    tokens = sum(int(attributes(s)["gen_ai.usage.input_tokens"]) for s in my_chats)
    assert metrics["tokens_per_run"]["input"] == pytest.approx(tokens / 4, abs=0.05)  # counted once
    text = traces.read_text()
    assert "Please process a refund for order A10O2" in text  # content was captured (theirs and ours)
    leaked = [s for s in SEEDED if s in text]
    assert leaked == [], f"seeded personal data exported: {leaked}"
