"""smolagents through its real public API (`ToolCallingAgent`, `CodeAgent`, `@tool`, managed
agents, `OpenAIServerModel` over the real openai client) against the scripted server: each
`agent.run` is one named run, each tool runs inside an explicit `execute_tool` span (a
`ToolCallingAgent` call matched to the model's call id by name and arguments, a `CodeAgent` call
with no id inside the step whose code made it), parallel tool calls in smolagents' thread pool
stay in their run, a managed agent is a run nested under its tool span, and the analyzer CLI
names the planted origin with no code change."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import support_agent
from opentelemetry.trace import StatusCode
from smolagents import CodeAgent, OpenAIServerModel, ToolCallingAgent, tool
from span_helpers import attrs, hexid
from stacks.zero_code import analyze, run_instrumented, spans_of

from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

HEALTHY, EMPTY = support_agent.TICKETS[0], support_agent.TICKETS[1]


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def answered(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The demo's scripts for a ToolCallingAgent: it answers through its `final_answer` tool."""
    return [t if "content" not in t else {"tool_calls": [_call("final_answer", answer=t["content"])]} for t in turns]


SCRIPTS = {key: answered(turns) for key, turns in support_agent.SCRIPTS.items()}


@tool
def lookup_order(order_id: str) -> Any:
    """Find an order by id.

    Args:
        order_id: the order's id
    """
    return support_agent.lookup_order(order_id)


@tool
def calculate_refund(order_id: str, items: list) -> Any:
    """Refund amount for order items.

    Args:
        order_id: the order's id
        items: the items to refund
    """
    return support_agent.calculate_refund(order_id, items)


def model(base_url: str) -> OpenAIServerModel:
    return OpenAIServerModel("gpt-4o-mini", api_base=base_url, api_key="test", client_kwargs={"max_retries": 0})


def tool_agent(base_url: str, tools: list | None = None, **kwargs: Any) -> ToolCallingAgent:
    return ToolCallingAgent(tools=tools or [lookup_order, calculate_refund], model=model(base_url), name="support",
                            verbosity_level=0, **kwargs)


@pytest.fixture(scope="module")
def smol_server():
    with ScriptedOpenAIServer(SCRIPTS) as server:
        yield server


def test_tool_calling_agent_tree_call_ids_name_and_definitions(instrument, smol_server):
    traced = instrument()
    assert tool_agent(smol_server.base_url).run(HEALTHY).startswith("Your refund for order A1001 is $25.00")
    [run] = traced.runs()
    assert run.name == "invoke_agent support" and attrs(run)["gen_ai.agent.name"] == "support"
    steps = traced.children(run)
    assert [[c.name for c in traced.children(s)] for s in steps] == [
        ["chat gpt-4o-mini", "execute_tool lookup_order"],
        ["chat gpt-4o-mini", "execute_tool calculate_refund"],
        ["chat gpt-4o-mini", "execute_tool final_answer"],
    ]
    assert [attrs(s)["agent_trace.step.kind"] for s in steps] == ["tool_call", "tool_call", "final"]
    assert len(traced.named("chat")) == 3  # one chat span per model call
    lookup, calc, final = traced.named("execute_tool")
    assert [attrs(t)["gen_ai.tool.call.id"] for t in (lookup, calc, final)] == ["call_0_0", "call_1_0", "call_2_0"]
    assert attrs(lookup)["agent_trace.tool.source"] == "explicit"
    assert json.loads(attrs(lookup)["gen_ai.tool.call.result"])[0]["order_id"] == "A1001"
    chat0, chat1 = (traced.children(s)[0] for s in steps[:2])
    assert chat0.end_time <= lookup.start_time <= lookup.end_time <= chat1.start_time
    definitions = json.loads(attrs(chat0)["gen_ai.tool.definitions"])
    assert {d["function"]["name"] for d in definitions} >= {"lookup_order", "calculate_refund", "final_answer"}
    # smolagents feeds results back as `Observation:` user messages: the next step still consumes them
    assert hexid(lookup) in attrs(steps[1])["agent_trace.depends_on"]


def test_empty_result_is_the_origin_and_propagates(instrument, smol_server):
    traced = instrument()
    tool_agent(smol_server.base_url).run(EMPTY)
    lookup, calc, _ = traced.named("execute_tool")
    assert attrs(lookup)["agent_trace.tool.outcome"] == "empty_result"
    assert attrs(lookup)["agent_trace.lifecycle.phase"] == "origin"
    assert attrs(calc)["agent_trace.lifecycle.phase"] == "propagate"


def test_tool_exception_fails_its_span_and_the_model_reads_the_error(instrument, smol_server):
    @tool
    def lookup_order(order_id: str) -> Any:
        """Find an order by id.

        Args:
            order_id: the order's id
        """
        raise ConnectionError("order service unreachable")

    traced = instrument()
    tool_agent(smol_server.base_url, tools=[lookup_order, calculate_refund]).run(HEALTHY)
    failed = traced.named("execute_tool lookup_order")[0]
    assert failed.status.status_code is StatusCode.ERROR
    assert attrs(failed)["agent_trace.tool.outcome"] == "exception" and attrs(failed)["error.type"] == "ConnectionError"
    assert attrs(failed)["gen_ai.tool.call.id"] == "call_0_0"
    assert attrs(failed)["agent_trace.lifecycle.phase"] == "origin"


def test_parallel_tool_calls_run_in_smolagents_thread_pool_inside_their_step(instrument):
    scripts = {"two orders": [
        {"tool_calls": [_call("lookup_order", order_id="A1001"), _call("lookup_order", order_id="A1003")]},
        {"tool_calls": [_call("final_answer", answer="both found")]},
    ]}
    with ScriptedOpenAIServer(scripts) as server:
        traced = instrument()
        assert tool_agent(server.base_url).run("two orders A1001 and A1003") == "both found"
    step0 = traced.named("agent_step 0")[0]
    lookups = traced.named("execute_tool lookup_order")
    assert len(lookups) == 2 and all(t.parent.span_id == step0.context.span_id for t in lookups)
    by_id = {attrs(t)["gen_ai.tool.call.id"]: json.loads(attrs(t)["gen_ai.tool.call.arguments"]) for t in lookups}
    assert by_id == {"call_0_0": {"order_id": "A1001"}, "call_0_1": {"order_id": "A1003"}}


def test_concurrent_runs_in_threads_never_mix(instrument, smol_server):
    traced = instrument()
    tickets = [HEALTHY if i % 2 == 0 else EMPTY for i in range(8)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda t: tool_agent(smol_server.base_url).run(t), tickets))
    runs = traced.runs()
    assert len(runs) == 8 and len({r.context.trace_id for r in runs}) == 8
    for run in runs:
        steps = traced.children(run)
        assert [s.name for s in steps] == ["agent_step 0", "agent_step 1", "agent_step 2"]
        ids = [attrs(c)["gen_ai.tool.call.id"] for s in steps for c in traced.children(s) if c.name.startswith("execute_tool")]
        assert ids == ["call_0_0", "call_1_0", "call_2_0"]
    empties = [t for t in traced.named("execute_tool lookup_order") if attrs(t)["agent_trace.tool.outcome"] == "empty_result"]
    assert len(empties) == 4


CODE_SCRIPTS = {"refund for order A10O2": [
    {"content": "Thought: look the order up.\n<code>\norders = lookup_order(order_id='A10O2')\nprint(orders)\n</code>"},
    {"content": "Thought: compute it.\n<code>\nrefund = calculate_refund(order_id='A10O2', items=orders)\n"
                "print(refund)\n</code>"},
    {"content": "Thought: answer.\n<code>\nfinal_answer('I could not find any order under that number.')\n</code>"},
]}


def test_code_agent_tool_calls_have_no_id_and_sit_in_the_step_whose_code_made_them(instrument):
    with ScriptedOpenAIServer(CODE_SCRIPTS) as server:
        traced = instrument()
        agent = CodeAgent(tools=[lookup_order, calculate_refund], model=model(server.base_url), name="coder",
                          verbosity_level=0)
        assert agent.run(EMPTY) == "I could not find any order under that number."
    [run] = traced.runs()
    assert attrs(run)["gen_ai.agent.name"] == "coder"
    steps = traced.children(run)
    assert [[c.name for c in traced.children(s)] for s in steps] == [
        ["chat gpt-4o-mini", "execute_tool lookup_order"],
        ["chat gpt-4o-mini", "execute_tool calculate_refund"],
        ["chat gpt-4o-mini", "execute_tool final_answer"],
    ]
    lookup, calc, _ = traced.named("execute_tool")
    assert "gen_ai.tool.call.id" not in attrs(lookup)
    assert json.loads(attrs(lookup)["gen_ai.tool.call.arguments"]) == {"order_id": "A10O2"}
    assert attrs(lookup)["agent_trace.lifecycle.phase"] == "origin"
    assert attrs(calc)["agent_trace.lifecycle.phase"] == "propagate"  # its `items` came from the empty lookup
    assert [attrs(s)["agent_trace.step.kind"] for s in steps] == ["tool_call", "tool_call", "final"]
    assert attrs(steps[0])["agent_trace.step.tool_calls"] == ("lookup_order",)


def test_a_managed_agent_is_a_run_nested_under_its_tool_span(instrument):
    scripts = {**SCRIPTS, "desk ticket": answered([
        {"tool_calls": [_call("refunds", task=HEALTHY)]}, {"content": "Done: $25.00"}])}
    with ScriptedOpenAIServer(scripts) as server:
        traced = instrument()
        refunds = ToolCallingAgent(tools=[lookup_order, calculate_refund], model=model(server.base_url), name="refunds",
                                   description="the refund desk", verbosity_level=0)
        desk = ToolCallingAgent(tools=[], managed_agents=[refunds], model=model(server.base_url), name="desk",
                                verbosity_level=0)
        desk.run("desk ticket A1001")
    outer, inner = traced.runs()
    assert attrs(outer)["gen_ai.agent.name"] == "desk" and attrs(inner)["gen_ai.agent.name"] == "refunds"
    [call] = traced.named("execute_tool refunds")
    assert inner.parent.span_id == call.context.span_id
    assert attrs(call)["gen_ai.tool.call.id"] == "call_0_0"
    assert len(traced.children(inner)) == 3


def test_streamed_run_is_one_run(instrument, smol_server):
    traced = instrument()
    steps = list(tool_agent(smol_server.base_url).run(HEALTHY, stream=True))
    assert steps
    [run] = traced.runs()
    assert [s.name for s in traced.children(run)] == ["agent_step 0", "agent_step 1", "agent_step 2"]


AGENT = """
from typing import Any
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer
import support_agent
from smolagents import OpenAIServerModel, ToolCallingAgent, tool

def answered(turns):
    return [t if "content" not in t else {"tool_calls": [{"name": "final_answer", "arguments": {"answer": t["content"]}}]}
            for t in turns]

server = ScriptedOpenAIServer({k: answered(v) for k, v in support_agent.SCRIPTS.items()}).start()

@tool
def lookup_order(order_id: str) -> Any:
    \"\"\"Find an order by id.

    Args:
        order_id: the order's id
    \"\"\"
    return support_agent.lookup_order(order_id)

@tool
def calculate_refund(order_id: str, items: list) -> Any:
    \"\"\"Refund amount for order items.

    Args:
        order_id: the order's id
        items: the items to refund
    \"\"\"
    return support_agent.calculate_refund(order_id, items)

model = OpenAIServerModel("gpt-4o-mini", api_base=server.base_url, api_key="test", client_kwargs={"max_retries": 0})
agent = ToolCallingAgent(tools=[lookup_order, calculate_refund], model=model, name="support", verbosity_level=0)
ticket = support_agent.TICKETS[1]   # lookup_order returns []: the host raises MissingRefundAmount
support_agent.check_reply(ticket, agent.run(ticket))
"""


def test_zero_code_the_analyzer_names_the_empty_lookup_as_origin(tmp_path):
    """`opentelemetry-instrument python agent.py` (openai-v2's instrumentation loaded beside ours):
    one run, three model calls counted once, the planted origin found."""
    proc, traces = run_instrumented(AGENT, tmp_path)
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-3000:]
    spans = spans_of(traces)
    mine = [s for scope, s in spans if scope == "otel_agent_trace"]
    assert len([s for s in mine if s["name"].startswith("chat")]) == 3
    assert [s["name"] for scope, s in spans if scope != "otel_agent_trace" and s["name"].startswith("chat")]
    report = analyze(traces)
    [run] = report["runs"]
    assert run["agent"] == "support" and run["status"] == "failed"  # the run lingers: the exception fails it
    assert run["origin"]["tool"] == "lookup_order" and run["origin"]["error_type"] == "tool_empty_result"
    assert report["summary"]["metrics"]["tool_calls"] == 3


def test_runs_from_asyncio_tasks_never_mix(instrument, smol_server):
    """smolagents is synchronous: an async host runs agents with `asyncio.to_thread`, which copies
    the task's context into the worker; each task's run keeps its own steps and tools."""
    import asyncio

    traced = instrument()

    async def main() -> list[str]:
        return await asyncio.gather(*(asyncio.to_thread(tool_agent(smol_server.base_url).run, t)
                                      for t in [HEALTHY, EMPTY] * 3))

    outputs = asyncio.run(main())
    assert outputs[0].startswith("Your refund") and outputs[1].startswith("I could not find")
    runs = traced.runs()
    assert len(runs) == 6 and len({r.context.trace_id for r in runs}) == 6
    for run in runs:
        tools = [c for s in traced.children(run) for c in traced.children(s) if c.name.startswith("execute_tool")]
        assert [attrs(t)["gen_ai.tool.call.id"] for t in tools] == ["call_0_0", "call_1_0", "call_2_0"]


def test_uninstrument_leaves_smolagents_as_it_was(instrument, smol_server):
    import smolagents.local_python_executor as executor
    from smolagents.tools import Tool

    from otel_agent_trace.instrumentor import AgentTraceInstrumentor

    traced = instrument()
    assert hasattr(vars(Tool)["__call__"], "__wrapped__") and hasattr(executor.timeout, "__wrapped__")
    AgentTraceInstrumentor().uninstrument()
    assert not hasattr(vars(Tool)["__call__"], "__wrapped__") and not hasattr(executor.timeout, "__wrapped__")
    assert tool_agent(smol_server.base_url).run(HEALTHY).startswith("Your refund")
    assert traced.spans == []
