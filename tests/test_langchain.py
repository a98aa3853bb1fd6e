"""LangChain tools and LangGraph agents through their real public API (`create_react_agent`,
`create_agent`, `ToolNode`, `tool.invoke(tool_call)`, `ChatOpenAI.bind_tools`) against the
scripted server: one run per graph invocation named after the agent, one step and one chat span per
model call, `execute_tool` spans where each tool really runs (timing, exceptions, the call id that
links it to the chat that asked), async and streamed graphs, concurrent runs that never mix, a
sub-agent called as a tool nested and linked `delegated_to`, and the analyzer over zero-code runs
(the empty result named as origin, across agents too)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import langgraph_agent
import pytest
import support_agent
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import StructuredTool, ToolException, tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import ToolNode, create_react_agent
from opentelemetry.trace import StatusCode
from span_helpers import attrs, hexid
from stacks.zero_code import analyze, attributes, run_instrumented, spans_of

from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

HEALTHY, EMPTY, FLAKY = support_agent.TICKETS[0], support_agent.TICKETS[1], support_agent.TICKETS[2]
DESK = "REFUND-DESK: refund for order A10O2"
SCRIPTS = {
    **support_agent.SCRIPTS,
    DESK: support_agent.SCRIPTS["refund for order A10O2"],
    "Please process a refund for order A10O2": [  # the supervisor: asks the refund desk, repeats its answer
        {"tool_calls": [{"name": "ask_refund_desk", "arguments": {"request": DESK}}]},
        {"content": "The refund desk says: I could not find any order under that number."},
    ],
}


@pytest.fixture(scope="module")
def server():
    with ScriptedOpenAIServer(support_agent.SCRIPTS) as s:
        yield s


def llm(server: ScriptedOpenAIServer) -> ChatOpenAI:
    return ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="test", max_retries=0)


def ask(agent: Any, ticket: str) -> str:
    return agent.invoke({"messages": [("user", ticket)]})["messages"][-1].content


def tree(traced: Any, run: Any) -> list[list[str]]:
    return [[c.name for c in traced.children(step)] for step in traced.children(run)]


TWO_STEPS = [["chat gpt-4o-mini", "execute_tool lookup_order"],
             ["chat gpt-4o-mini", "execute_tool calculate_refund"],
             ["chat gpt-4o-mini"]]


def assert_recorded_where_run(traced: Any, run: Any, ticket_order: str) -> None:
    """The tree of a two-step run: explicit tool spans with the model's call ids, decided by their step."""
    assert tree(traced, run) == TWO_STEPS
    steps = traced.children(run)
    chats = [traced.children(s)[0] for s in steps]
    for index, step in enumerate(steps[:2]):
        chat, tool_span = traced.children(step)
        a = attrs(tool_span)
        assert a["agent_trace.tool.source"] == "explicit"
        assert a["gen_ai.tool.call.id"] == f"call_{index}_0"
        assert json.loads(a["gen_ai.tool.call.arguments"])["order_id"] == ticket_order
        decided_by = [l.context.span_id for l in tool_span.links if l.attributes["agent_trace.link.relation"] == "decided_by"]
        assert decided_by == [step.context.span_id]
        # where the tool really ran: after the decision arrived, before the next request was sent
        assert chat.end_time <= tool_span.start_time and tool_span.end_time <= chats[index + 1].start_time
    assert attrs(steps[1])["agent_trace.depends_on"] == (hexid(traced.children(steps[0])[1]),)


@pytest.mark.parametrize("factory", ["create_react_agent", "create_agent"])
def test_agent_is_a_named_run_with_real_tool_spans(instrument, server, factory):
    traced = instrument()
    tools = langgraph_agent.build_tools()
    if factory == "create_agent":
        from langchain.agents import create_agent

        agent = create_agent(llm(server), tools, system_prompt=support_agent.SYSTEM, name="support")
    else:
        agent = create_react_agent(llm(server), tools, prompt=support_agent.SYSTEM, name="support")
    assert ask(agent, HEALTHY).startswith("Your refund for order A1001 is $25.00")
    [run] = traced.runs()
    assert run.name == "invoke_agent support" and attrs(run)["gen_ai.agent.name"] == "support"
    assert_recorded_where_run(traced, run, "A1001")
    chats = traced.named("chat")
    assert len(chats) == 3  # one chat span per model call (langchain-openai calls the openai client)
    declared = json.loads(attrs(chats[0])["gen_ai.tool.definitions"])
    assert sorted(d["function"]["name"] if "function" in d else d["name"] for d in declared) == [
        "calculate_refund", "lookup_order", "track_shipment"]
    assert [attrs(s)["agent_trace.step.kind"] for s in traced.children(run)] == ["tool_call", "tool_call", "final"]


def test_tool_timing_is_the_tools_own(instrument, server):
    """A slow tool's span lasts as long as the tool ran, not from the decision to the next request."""
    traced = instrument()

    @tool
    def lookup_order(order_id: str) -> str:
        """Find an order by id"""
        time.sleep(0.2)
        return json.dumps(support_agent.lookup_order(order_id))

    tools = [lookup_order, *langgraph_agent.build_tools()[1:]]
    agent = create_react_agent(llm(server), tools, prompt=support_agent.SYSTEM, name="support")
    ask(agent, HEALTHY)
    [lookup] = traced.named("execute_tool lookup_order")
    assert 0.2 <= (lookup.end_time - lookup.start_time) / 1e9 < 1.0


def test_tool_exception_fails_its_span_and_the_retry_recovers(instrument, server):
    """ToolNode(handle_tool_errors=True) hands the model an error message; the tool span carries
    the exception itself (the carrier API times out once for A1003), and the retry is `recovered`."""
    traced = instrument()
    agent = langgraph_agent.build_agent(server.base_url)
    assert "DHL" in ask(agent, FLAKY)
    first, retry = traced.named("execute_tool track_shipment")
    assert first.status.status_code is StatusCode.ERROR
    assert attrs(first)["agent_trace.tool.outcome"] == "timeout"
    assert attrs(first)["error.type"] == "TimeoutError"
    assert [e.name for e in first.events] == ["exception"]
    assert attrs(retry)["agent_trace.lifecycle.phase"] == "recovered"
    [run] = traced.runs()
    assert run.status.status_code is not StatusCode.ERROR


def test_unhandled_tool_exception_fails_the_run(instrument, server):
    traced = instrument()

    @tool
    def track_shipment(order_id: str) -> str:
        """Shipping status of an order"""
        raise ConnectionError("carrier API unreachable")

    agent = create_react_agent(llm(server), [track_shipment], name="support")
    with pytest.raises(ConnectionError):
        ask(agent, FLAKY)
    [span] = traced.named("execute_tool track_shipment")
    assert attrs(span)["agent_trace.error.type"] == "tool_exception"
    assert attrs(span)["agent_trace.lifecycle.phase"] == "origin"
    [run] = traced.runs()
    assert run.status.status_code is StatusCode.ERROR
    assert attrs(run)["agent_trace.lifecycle.phase"] == "critical"


def test_handled_tool_exception_is_a_failed_tool(instrument, server):
    """A ToolException the tool itself handles (`handle_tool_error=True`) still fails the span."""
    traced = instrument()

    def shipment(order_id: str) -> str:
        raise ToolException("carrier says: unknown parcel")

    track_shipment = StructuredTool.from_function(shipment, name="track_shipment", handle_tool_error=True,
                                                  description="Shipping status of an order")

    agent = create_react_agent(llm(server), [track_shipment], name="support")
    ask(agent, FLAKY)
    spans = traced.named("execute_tool track_shipment")
    assert spans and all(attrs(s)["agent_trace.error.type"] == "tool_exception" for s in spans)
    assert all("unknown parcel" in s.status.description for s in spans)


def test_plain_bind_tools_loop_with_tool_invoke(instrument, server):
    """Without LangGraph: `tool.invoke(tool_call)` carries the call id, so the tool spans are the
    tools' own and the next request infers nothing twice."""
    traced = instrument()
    tools = {t.name: t for t in langgraph_agent.build_tools()}
    model = llm(server).bind_tools(list(tools.values()))
    messages: list[Any] = [SystemMessage(support_agent.SYSTEM), HumanMessage(HEALTHY)]
    for _ in range(support_agent.MAX_TURNS):
        reply = model.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            break
        messages += [tools[call["name"]].invoke(call) for call in reply.tool_calls]
    [run] = traced.runs()
    assert_recorded_where_run(traced, run, "A1001")


def test_async_graph_and_async_tools(instrument, server):
    traced = instrument()

    @tool
    async def lookup_order(order_id: str) -> str:
        """Find an order by id"""
        await asyncio.sleep(0.01)
        return json.dumps(support_agent.lookup_order(order_id))

    @tool
    async def calculate_refund(order_id: str, items: list[dict[str, Any]]) -> str:
        """Refund amount for order items"""
        return json.dumps(support_agent.calculate_refund(order_id, items))

    agent = create_react_agent(llm(server), [lookup_order, calculate_refund], name="support")

    async def main() -> tuple[str, list[Any]]:
        answer = (await agent.ainvoke({"messages": [("user", HEALTHY)]}))["messages"][-1].content
        chunks = [c async for c in agent.astream({"messages": [("user", HEALTHY)]})]
        return answer, chunks

    answer, chunks = asyncio.run(main())
    assert answer.startswith("Your refund") and chunks
    runs = traced.runs()
    assert len(runs) == 2
    for run in runs:
        assert_recorded_where_run(traced, run, "A1001")


def test_streamed_graph_is_one_run(instrument, server):
    traced = instrument()
    agent = create_react_agent(llm(server), langgraph_agent.build_tools(), name="support")
    chunks = list(agent.stream({"messages": [("user", HEALTHY)]}, stream_mode="updates"))
    assert len(chunks) == 5  # agent, tools, agent, tools, agent
    [run] = traced.runs()
    assert_recorded_where_run(traced, run, "A1001")


def test_concurrent_runs_never_mix(instrument, server):
    """Threads (LangGraph's own executor copies contexts) and asyncio tasks: each run has its own
    three steps and its own tools, on its own ticket."""
    traced = instrument()
    agent = create_react_agent(llm(server), langgraph_agent.build_tools(), name="support")
    tickets = [HEALTHY, EMPTY] * 6

    def one(ticket: str) -> str:
        return ask(agent, ticket)

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(one, tickets))

    async def tasks(base_url: str) -> None:
        # (a server of its own: langchain-openai caches its async HTTP client per URL, bound to a loop)
        agent = create_react_agent(llm_at(base_url), langgraph_agent.build_tools(), name="support")
        await asyncio.gather(*(agent.ainvoke({"messages": [("user", t)]}) for t in tickets))

    with ScriptedOpenAIServer(support_agent.SCRIPTS) as fresh:
        asyncio.run(tasks(fresh.base_url))
    runs = traced.runs()
    assert len(runs) == 2 * len(tickets)
    orders = []
    for run in runs:
        assert tree(traced, run) == TWO_STEPS
        ids = {json.loads(attrs(t)["gen_ai.tool.call.arguments"])["order_id"]
               for step in traced.children(run) for t in traced.children(step) if t.name.startswith("execute_tool")}
        assert len(ids) == 1
        orders.append(ids.pop())
    assert sorted(orders) == sorted(["A1001", "A10O2"] * len(tickets))


def sub_agent_program(base_url: str) -> tuple[Any, Any]:
    """A supervisor that hands refunds to a refund-desk agent through a tool."""
    desk = create_react_agent(llm_at(base_url), langgraph_agent.build_tools(), prompt=support_agent.SYSTEM,
                              name="refund_desk")

    @tool
    def ask_refund_desk(request: str) -> str:
        """Hand a refund request to the refund desk agent"""
        return desk.invoke({"messages": [("user", request)]})["messages"][-1].content

    return create_react_agent(llm_at(base_url), [ask_refund_desk], prompt="You route tickets.", name="supervisor"), desk


def llm_at(base_url: str) -> ChatOpenAI:
    return ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="test", max_retries=0)


def test_sub_agent_run_nests_under_the_tool_that_delegated(instrument):
    traced = instrument()
    with ScriptedOpenAIServer(SCRIPTS) as multi:
        supervisor, _ = sub_agent_program(multi.base_url)
        ask(supervisor, EMPTY)
    outer, inner = traced.runs()
    assert attrs(outer)["gen_ai.agent.name"] == "supervisor" and attrs(inner)["gen_ai.agent.name"] == "refund_desk"
    [delegating] = traced.named("execute_tool ask_refund_desk")
    assert inner.parent.span_id == delegating.context.span_id
    assert [(link.context.span_id, link.attributes["agent_trace.link.relation"]) for link in inner.links] == [
        (delegating.context.span_id, "delegated_to")]
    assert attrs(inner)["agent_trace.depends_on.relations"] == ("delegated_to",)
    assert tree(traced, inner) == TWO_STEPS  # the sub-agent's own tools, not swallowed by the calling tool
    assert tree(traced, outer) == [["chat gpt-4o-mini", "execute_tool ask_refund_desk"], ["chat gpt-4o-mini"]]


# --- zero code: opentelemetry-instrument and the analyzer ----------------------------------------
PROGRAM = """
import langgraph_agent, support_agent
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer
server = ScriptedOpenAIServer(support_agent.SCRIPTS).start()
agent = langgraph_agent.build_agent(server.base_url)
langgraph_agent.handle_ticket(agent, support_agent.TICKETS[0])
langgraph_agent.handle_ticket(agent, support_agent.TICKETS[1])   # raises: the program ends with a traceback
"""


def test_zero_code_empty_result_is_the_origin(tmp_path):
    """`opentelemetry-instrument python agent.py` with create_react_agent: the run is the agent's,
    tool spans are explicit, openai-v2's chat spans nest under ours (one of ours per call), and
    the analyzer names the empty lookup as origin of the exception the program ended with."""
    proc, traces = run_instrumented(PROGRAM, tmp_path)
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-2000:]
    spans = spans_of(traces)
    by_id = {s["spanId"]: (scope, s) for scope, s in spans}
    ours = [s for scope, s in spans if scope == "otel_agent_trace"]
    theirs = [s for scope, s in spans if scope != "otel_agent_trace" and s["name"].startswith("chat")]
    assert len([s for s in ours if s["name"].startswith("chat")]) == 6 and len(theirs) == 6
    assert all(by_id[s["parentSpanId"]][1]["name"].startswith("chat") for s in theirs)
    tools = [s for s in ours if s["name"].startswith("execute_tool")]
    assert len(tools) == 4 and {attributes(s)["agent_trace.tool.source"] for s in tools} == {"explicit"}
    report = analyze(traces)
    ok, failed = report["runs"]
    assert ok["status"] == "ok" and ok["agent"] == "support"
    assert failed["status"] == "failed" and failed["agent"] == "support"
    assert "MissingRefundAmount" in failed["critical"]["description"]
    assert failed["origin"]["tool"] == "lookup_order"
    assert failed["origin"]["error_type"] == "tool_empty_result"
    assert failed["bug_class"] == "tool"


MULTI_AGENT = """
import sys
sys.path.insert(0, {tests!r})
import support_agent
from test_langchain import SCRIPTS, ask, sub_agent_program
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer
server = ScriptedOpenAIServer(SCRIPTS).start()
supervisor, _ = sub_agent_program(server.base_url)
support_agent.check_reply(support_agent.TICKETS[1], ask(supervisor, support_agent.TICKETS[1]))
"""


ROUTER = """
import support_agent, langgraph_agent
from langgraph.graph import END, START, MessagesState, StateGraph
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer
server = ScriptedOpenAIServer(support_agent.SCRIPTS).start()
graph = StateGraph(MessagesState)
graph.add_node("desk", langgraph_agent.build_agent(server.base_url, name="refund_desk"))
graph.add_edge(START, "desk")
graph.add_edge("desk", END)
router = graph.compile(name="supervisor")
reply = router.invoke({"messages": [("user", support_agent.TICKETS[1])]})["messages"][-1].content
support_agent.check_reply(support_agent.TICKETS[1], reply)
"""


@pytest.mark.parametrize("delegation", ["tool", "node"])
def test_zero_code_origin_found_in_the_sub_agent(tmp_path, delegation):
    """The supervisor fails (its answer lacks an amount); the analyzer follows the failure through
    the span that delegated (the supervisor's tool, or the graph whose node the sub-agent is) into
    the refund desk's run, to its empty lookup."""
    from pathlib import Path

    script = MULTI_AGENT.format(tests=str(Path(__file__).parent)) if delegation == "tool" else ROUTER
    proc, traces = run_instrumented(script, tmp_path)
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-2000:]
    spans = {s["spanId"]: s for _, s in spans_of(traces)}
    [inner] = [s for s in spans.values() if s["name"] == "invoke_agent refund_desk"]
    delegating = spans[inner["parentSpanId"]]
    assert [(link["spanId"], attributes(link)["agent_trace.link.relation"]) for link in inner["links"]] == [
        (delegating["spanId"], "delegated_to")]
    report = analyze(traces)
    supervisor = next(r for r in report["runs"] if r["agent"] == "supervisor")
    desk = next(r for r in report["runs"] if r["agent"] == "refund_desk")
    assert supervisor["status"] == "failed" and desk["status"] == "suspect"
    origin = supervisor["origin"]
    assert (origin["tool"], origin["error_type"], origin["agent"]) == ("lookup_order", "tool_empty_result", "refund_desk")
    assert origin["span_id"] == desk["origin"]["span_id"]
    assert supervisor["bug_class"] == "tool"
    relations = [h["relation"] for h in supervisor["chain"]]
    names = [h["span_name"] for h in supervisor["chain"]]
    joint = relations.index("delegated_to")
    assert names[joint] == "agent_step 2" and names[joint + 1] == delegating["name"]
    assert names[-1] == "invoke_agent supervisor"
    assert supervisor["chain"][0]["phase"] == "origin" and supervisor["chain"][-1]["phase"] == "critical"
    text = subprocess.run([sys.executable, "-m", "otel_agent_trace.cli", "analyze", str(traces)],
                          capture_output=True, text=True, timeout=120).stdout
    assert "in sub-agent refund_desk" in text


def test_streamed_graph_the_caller_stops_reading_or_that_fails_settles_its_run(instrument, server):
    """A stream left after its first update (sync, and async by `aclose`) ends its run as it stands,
    not failed; a stream whose tool raises fails its run with that exception."""
    traced = instrument()
    agent = create_react_agent(llm(server), langgraph_agent.build_tools(), name="support")
    stream = agent.stream({"messages": [("user", HEALTHY)]}, stream_mode="updates")
    assert "agent" in next(stream)
    stream.close()

    async def first_update(base_url: str) -> Any:
        # (a server of its own: langchain-openai caches its async HTTP client per URL, bound to a loop)
        agent = create_react_agent(llm_at(base_url), langgraph_agent.build_tools(), name="support")
        astream = agent.astream({"messages": [("user", HEALTHY)]}, stream_mode="updates")
        update = await astream.__anext__()
        await astream.aclose()
        return update

    with ScriptedOpenAIServer(support_agent.SCRIPTS) as fresh:
        assert "agent" in asyncio.run(first_update(fresh.base_url))

    @tool
    def track_shipment(order_id: str) -> str:
        """Shipping status of an order"""
        raise ConnectionError("carrier API unreachable")

    failing = create_react_agent(llm(server), [track_shipment], name="shipping")
    with pytest.raises(ConnectionError):
        list(failing.stream({"messages": [("user", FLAKY)]}))
    left_sync, left_async, failed = traced.runs()
    for run in (left_sync, left_async):
        assert run.name.endswith("support") and run.status.status_code is not StatusCode.ERROR
        assert tree(traced, run) == [["chat gpt-4o-mini"]]
    assert failed.name.endswith("shipping") and failed.status.status_code is StatusCode.ERROR
    assert attrs(failed)["error.type"] == "ConnectionError"
