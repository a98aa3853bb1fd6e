"""llama-index through its real agents (FunctionAgent, ReActAgent, AgentWorkflow) and tools
(FunctionTool), its model reached through llama-index's LiteLLM LLM on the scripted server: one
run per agent invocation named after the agent, a step per model call (one chat span each), and
tool spans where the tools really run, with the call ids of the chats that asked for them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm is imported

import llama_index_agent  # noqa: E402
import support_agent  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402
from span_helpers import attrs  # noqa: E402
from stacks.zero_code import analyze, attributes, run_instrumented, spans_of  # noqa: E402

from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
HEALTHY, EMPTY = support_agent.TICKETS[0], support_agent.TICKETS[1]


def _call(name, **arguments):
    return {"name": name, "arguments": arguments}


def _llm(server):
    from llama_index.llms.litellm import LiteLLM

    return LiteLLM(model="openai/gpt-4o-mini", api_base=server.base_url, api_key="test", max_retries=0)


def _tools(*functions):
    from llama_index.core.tools import FunctionTool

    return [FunctionTool.from_defaults(fn=fn) for fn in functions]


def _tools_async(*functions):
    from llama_index.core.tools import FunctionTool

    return [FunctionTool.from_defaults(async_fn=fn) for fn in functions]


def _run(agent, ticket):
    async def go():
        return await agent.run(ticket)

    return asyncio.run(go())


def _subtree(traced, root):
    out = []
    for child in traced.children(root):
        out += [child] + _subtree(traced, child)
    return out


def test_two_step_run_is_one_named_run_with_real_tool_spans(instrument, demo_server):
    traced = instrument()
    slow = {"seconds": 0.05}

    def lookup_order(order_id: str):
        """Find an order by id."""
        time.sleep(slow["seconds"])
        return support_agent.lookup_order(order_id)

    from llama_index.core.agent.workflow import FunctionAgent

    agent = FunctionAgent(name="support", tools=_tools(lookup_order, support_agent.calculate_refund),
                          llm=_llm(demo_server), system_prompt=support_agent.SYSTEM)
    assert str(_run(agent, HEALTHY)).startswith("Your refund for order A1001 is $25.00")

    [run] = traced.runs()
    assert run.name == "invoke_agent support" and attrs(run)["gen_ai.agent.name"] == "support"
    steps = traced.children(run)
    assert [[c.name for c in traced.children(s)] for s in steps] == [
        ["chat openai/gpt-4o-mini", "execute_tool lookup_order"],
        ["chat openai/gpt-4o-mini", "execute_tool calculate_refund"],
        ["chat openai/gpt-4o-mini"],
    ]
    assert len(traced.named("chat")) == 3 and len(traced.named("execute_tool")) == 2  # nothing twice
    lookup, calc = traced.named("execute_tool")
    for tool, call_id in ((lookup, "call_0_0"), (calc, "call_1_0")):
        assert attrs(tool)["agent_trace.tool.source"] == "explicit"  # ran here, not inferred
        assert attrs(tool)["gen_ai.tool.call.id"] == call_id
    assert json.loads(attrs(lookup)["gen_ai.tool.call.arguments"]) == {"order_id": "A1001"}
    assert json.loads(attrs(lookup)["gen_ai.tool.call.result"])[0]["order_id"] == "A1001"
    # timed where the function ran: after the chat that asked, before the next one
    first_chat, second_chat = traced.named("chat")[:2]
    assert lookup.end_time - lookup.start_time >= slow["seconds"] * 1e9
    assert first_chat.end_time <= lookup.start_time and lookup.end_time <= second_chat.start_time
    # the agent's tool registry, as the model was given it
    definitions = [d["function"] for d in json.loads(attrs(first_chat)["gen_ai.tool.definitions"])]
    assert {d["name"] for d in definitions} == {"lookup_order", "calculate_refund"}
    assert all("order_id" in d["parameters"]["properties"] for d in definitions)


def test_a_tool_exception_fails_its_span_and_the_agent_goes_on(instrument):
    def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        raise PermissionError(f"order {order_id} is locked")

    scripts = {"cancel": [{"tool_calls": [_call("cancel_order", order_id="A1001")]},
                          {"content": "I could not cancel it."}]}
    with ScriptedOpenAIServer(scripts) as server:
        traced = instrument()
        from llama_index.core.agent.workflow import FunctionAgent

        agent = FunctionAgent(name="canceller", tools=_tools(cancel_order), llm=_llm(server))
        assert str(_run(agent, "cancel A1001")) == "I could not cancel it."
        tool_message = server.requests[-1]["messages"][-1]
    [tool] = traced.named("execute_tool")
    assert tool.status.status_code is StatusCode.ERROR
    assert attrs(tool)["error.type"] == "PermissionError"
    assert attrs(tool)["agent_trace.tool.outcome"] == "exception"
    assert attrs(tool)["gen_ai.tool.call.id"] == "call_0_0"
    assert any(e.name == "exception" and "locked" in e.attributes["exception.message"] for e in tool.events)
    assert tool_message["role"] == "tool" and "locked" in tool_message["content"]  # what the model read
    [run] = traced.runs()
    assert run.status.status_code is StatusCode.UNSET  # the agent recovered: the run did not fail
    assert [s.name for s in traced.children(run)] == ["agent_step 0", "agent_step 1"]


def test_a_model_error_fails_the_run_with_it(instrument):
    with ScriptedOpenAIServer({"*": [{"status": 500, "error": "model overloaded"}]}) as server:
        traced = instrument()
        from llama_index.core.agent.workflow import FunctionAgent

        agent = FunctionAgent(name="support", tools=_tools(support_agent.lookup_order), llm=_llm(server))
        with pytest.raises(Exception) as raised:
            _run(agent, "hello")
    [run] = traced.runs()
    assert run.status.status_code is StatusCode.ERROR
    assert attrs(run)["agent_trace.lifecycle.phase"] == "critical"
    assert attrs(run)["error.type"] == type(raised.value).__qualname__
    [chat] = traced.named("chat")
    assert chat.status.status_code is StatusCode.ERROR


def test_sync_predict_and_call_records_the_tool_with_its_call_id(instrument, demo_server):
    """`FunctionTool.call` (the sync path) inside the implicit run of a plain LLM call."""
    traced = instrument()
    output = _llm(demo_server).predict_and_call(_tools(support_agent.lookup_order), HEALTHY)
    assert output.sources[0].raw_output[0]["order_id"] == "A1001"  # an AgentChatResponse
    [run] = traced.runs()
    [step] = traced.children(run)
    assert [c.name for c in traced.children(step)] == ["chat openai/gpt-4o-mini", "execute_tool lookup_order"]
    [tool] = traced.named("execute_tool")
    assert attrs(tool)["agent_trace.tool.source"] == "explicit"
    assert attrs(tool)["gen_ai.tool.call.id"] == "call_0_0"


def test_react_agent_tools_are_recorded_without_call_ids(instrument):
    """ReAct asks for tools in text: no call id to link, the tool still runs inside its step."""
    scripts = {"react": [
        {"content": 'Thought: I need the order.\nAction: lookup_order\nAction Input: {"order_id": "A1001"}'},
        {"content": "Thought: I can answer without more tools.\nAnswer: order A1001 was delivered"}]}
    with ScriptedOpenAIServer(scripts) as server:
        traced = instrument()
        from llama_index.core.agent.workflow import ReActAgent

        agent = ReActAgent(name="reactor", tools=_tools(support_agent.lookup_order), llm=_llm(server))
        assert "delivered" in str(_run(agent, "react: where is A1001?"))
    [run] = traced.runs()
    assert attrs(run)["gen_ai.agent.name"] == "reactor"
    first, second = traced.children(run)
    assert [c.name for c in traced.children(first)] == ["chat openai/gpt-4o-mini", "execute_tool lookup_order"]
    [tool] = traced.named("execute_tool")
    assert "gen_ai.tool.call.id" not in attrs(tool)
    assert json.loads(attrs(tool)["gen_ai.tool.call.result"])[0]["order_id"] == "A1001"


def test_agent_workflow_is_one_run_named_after_its_root_agent(instrument):
    """A handoff between the agents of an AgentWorkflow stays in the workflow's run."""
    scripts = {"refund please": [
        {"tool_calls": [_call("handoff", to_agent="refunds", reason="a refund")]},
        {"tool_calls": [_call("lookup_order", order_id="A1001")]},
        {"content": "Your refund for order A1001 is $25.00."}]}
    with ScriptedOpenAIServer(scripts) as server:
        traced = instrument()
        from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent

        llm = _llm(server)
        triage = FunctionAgent(name="triage", description="routes", tools=[], llm=llm, can_handoff_to=["refunds"])
        refunds = FunctionAgent(name="refunds", description="refunds", tools=_tools(support_agent.lookup_order),
                                llm=llm)
        workflow = AgentWorkflow(agents=[triage, refunds], root_agent="triage")
        assert "$25.00" in str(_run(workflow, "refund please, order A1001"))
    [run] = traced.runs()
    assert attrs(run)["gen_ai.agent.name"] == "triage"
    assert [t.name for t in traced.named("execute_tool")] == ["execute_tool handoff", "execute_tool lookup_order"]
    assert all(attrs(t)["agent_trace.tool.source"] == "explicit" for t in traced.named("execute_tool"))
    assert len(traced.named("chat")) == 3 and {s.context.trace_id for s in traced.spans} == {run.context.trace_id}


def test_an_agent_called_from_a_tool_is_a_sub_agent_run_under_it(instrument):
    """An agent whose tool runs another agent: the inner agent's run nests under that tool span,
    linked `delegated_to`, and its own tools (the empty lookup) are recorded in its run."""
    from llama_index.core.agent.workflow import FunctionAgent

    scripts = {**support_agent.SCRIPTS, "front desk": [
        {"tool_calls": [_call("ask_refunds", question="refund for order A10O2")]},
        {"content": "The refunds desk says there is nothing to refund."}]}
    with ScriptedOpenAIServer(scripts) as server:
        traced = instrument()
        refunds = llama_index_agent.make_agent(server.base_url, name="refunds")

        async def ask_refunds(question: str) -> str:
            """Ask the refunds desk."""
            return str(await refunds.run(question))

        front = FunctionAgent(name="front", tools=_tools_async(ask_refunds), llm=_llm(server))
        assert "nothing to refund" in str(_run(front, "front desk: a refund please"))
    outer, inner = traced.runs()
    assert (attrs(outer)["gen_ai.agent.name"], attrs(inner)["gen_ai.agent.name"]) == ("front", "refunds")
    [ask] = [t for t in traced.named("execute_tool") if t.name == "execute_tool ask_refunds"]
    assert inner.parent.span_id == ask.context.span_id
    assert [(link.context.span_id, link.attributes["agent_trace.link.relation"]) for link in inner.links] == [
        (ask.context.span_id, "delegated_to")]
    assert [s.name for s in traced.children(inner)] == ["agent_step 0", "agent_step 1", "agent_step 2"]
    [lookup] = [t for t in traced.named("execute_tool") if t.name == "execute_tool lookup_order"]
    assert lookup in _subtree(traced, inner) and attrs(lookup)["agent_trace.tool.outcome"] == "empty_result"
    assert attrs(ask)["agent_trace.tool.outcome"] == "ok"


def test_concurrent_runs_in_tasks_and_threads_never_mix(instrument, demo_server):
    traced = instrument()
    agent = llama_index_agent.make_agent(demo_server.base_url)
    tickets = [HEALTHY, EMPTY] * 4

    async def many():
        return await asyncio.gather(*(agent.run(t) for t in tickets), return_exceptions=True)

    threads = [threading.Thread(target=lambda: asyncio.run(many())) for _ in range(3)]
    for thread in threads:
        thread.start()
    asyncio.run(many())
    for thread in threads:
        thread.join()

    runs = traced.runs()
    assert len(runs) == 4 * len(tickets)
    wanted = {"call_0_0": '{"order_id":"A1001"}', "call_1_0": None}
    order_ids = []
    for run in runs:
        inside = _subtree(traced, run)
        assert {s.context.trace_id for s in inside} == {run.context.trace_id}
        assert [s.name for s in traced.children(run)] == ["agent_step 0", "agent_step 1", "agent_step 2"]
        lookup, calc = [s for s in inside if s.name.startswith("execute_tool")]
        assert (attrs(lookup)["gen_ai.tool.call.id"], attrs(calc)["gen_ai.tool.call.id"]) == tuple(wanted)
        order = json.loads(attrs(lookup)["gen_ai.tool.call.arguments"])["order_id"]
        assert json.loads(attrs(calc)["gen_ai.tool.call.arguments"])["order_id"] == order  # one conversation
        order_ids.append(order)
    assert sorted(order_ids) == sorted(["A1001", "A10O2"] * (2 * len(tickets)))


LATE_IMPORT = """
import asyncio, sys
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_agent_trace.instrumentor import AgentTraceInstrumentor
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer
import otel_agent_trace, support_agent

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
for _ in range(5):   # each instrument() registers import hooks; llama-index is imported only after
    AgentTraceInstrumentor().instrument(tracer_provider=provider)
    AgentTraceInstrumentor().uninstrument()
AgentTraceInstrumentor().instrument(tracer_provider=provider)
import llama_index_agent
with ScriptedOpenAIServer(support_agent.SCRIPTS) as server:
    llama_index_agent.handle_ticket(llama_index_agent.make_agent(server.base_url), support_agent.TICKETS[0])
otel_agent_trace.end_implicit_runs()
names = [s.name for s in exporter.get_finished_spans()]
print(names.count("invoke_agent support"), len([n for n in names if n.startswith("execute_tool")]))
"""


def test_imported_after_repeated_instrumentation_it_is_wrapped_once(tmp_path):
    script = tmp_path / "late.py"
    script.write_text(LATE_IMPORT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "examples"), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["1", "2"]  # one run, two tools: no stacked wrappers


ZERO_CODE = """
import asyncio
import llama_index_agent
import support_agent
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

server = ScriptedOpenAIServer(support_agent.SCRIPTS).start()
agent = llama_index_agent.make_agent(server.base_url)
for ticket in (support_agent.TICKETS[0], support_agent.TICKETS[1]):
    llama_index_agent.handle_ticket(agent, ticket)   # the second raises: the program ends with a traceback
"""


def test_zero_code_the_analyzer_names_the_planted_origin_beside_openai_v2(tmp_path):
    """Under `opentelemetry-instrument` (openai-v2's instrumentor loaded too): one chat span of ours
    per model call with theirs nested under it, the tools recorded where they ran, and the empty
    lookup named as the origin of the ticket the program rejected after the agent's answer."""
    proc, traces = run_instrumented(ZERO_CODE, tmp_path,
                                    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="span_only")
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-2000:]
    spans = spans_of(traces)
    by_id = {s["spanId"]: (scope, s) for scope, s in spans}
    ours = [s for scope, s in spans if scope == "otel_agent_trace"]
    theirs = [s for scope, s in spans if scope != "otel_agent_trace" and s["name"].startswith("chat")]
    assert len([s for s in ours if s["name"].startswith("chat")]) == 6
    assert len(theirs) == 6, "the official openai instrumentation must be active here"
    for span in theirs:
        scope, parent = by_id[span["parentSpanId"]]
        assert scope == "otel_agent_trace" and parent["name"].startswith("chat")
    runs = [s for s in ours if s["name"].startswith("invoke_agent")]
    assert [attributes(r)["gen_ai.agent.name"] for r in runs] == ["support", "support"]
    tools = [attributes(s) for s in ours if s["name"].startswith("execute_tool")]
    assert [t["agent_trace.tool.source"] for t in tools] == ["explicit"] * 4

    report = analyze(traces)
    assert [r["status"] for r in report["runs"]] == ["ok", "failed"]
    failed = report["runs"][1]
    assert failed["critical"]["error_type"] == "run_exception"
    assert "MissingRefundAmount" in failed["critical"]["description"]
    assert (failed["origin"]["tool"], failed["origin"]["error_type"]) == ("lookup_order", "tool_empty_result")
    assert failed["bug_class"] == "tool"
