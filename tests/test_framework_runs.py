"""One rule for a framework run's life, for every framework, as a user runs it: `opentelemetry-
instrument python agent.py`, then `otel-agent-trace analyze --format json`.

Each framework's small refund agent (the real library, the real openai client, the scripted
server): `lookup_order` returns `[]` for the malformed order id, the refund comes out as $0.00 /
nothing, and the program raises `MissingRefundAmount` when it checks the reply, after the agent
answered. With `OTEL_AGENT_TRACE_ENTRYPOINTS=refund_app:handle_ticket` around the agent call and
the check, the agent runs in the entry point's run; without, the agent's own run stays open after
its answer and the program's uncaught exception fails it. Either way: exactly one run, `failed`
with the program's exception, the empty lookup named as origin, every step in it."""

from __future__ import annotations

import pytest

from stacks.zero_code import analyze, attributes, run_instrumented, spans_of

PYDANTIC_AI = """
import openai, support_agent
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

server = ScriptedOpenAIServer(support_agent.SCRIPTS).start()
client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client)),
              name="support", system_prompt=support_agent.SYSTEM)
agent.tool_plain(support_agent.lookup_order)
agent.tool_plain(support_agent.calculate_refund)

def answer(ticket):
    return agent.run_sync(ticket).output
"""

SMOLAGENTS = """
from typing import Any
import support_agent
from smolagents import OpenAIServerModel, ToolCallingAgent, tool
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

def _final(turns):
    return [t if "content" not in t else {"tool_calls": [support_agent._call("final_answer", answer=t["content"])]}
            for t in turns]

server = ScriptedOpenAIServer({k: _final(v) for k, v in support_agent.SCRIPTS.items()}).start()

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

def answer(ticket):
    return agent.run(ticket)
"""

LANGGRAPH = """
import support_agent, langgraph_agent
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

server = ScriptedOpenAIServer(support_agent.SCRIPTS).start()
agent = langgraph_agent.build_agent(server.base_url)

def answer(ticket):
    return agent.invoke({"messages": [("user", ticket)]})["messages"][-1].content
"""

LLAMA_INDEX = """
import asyncio, support_agent, llama_index_agent
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

server = ScriptedOpenAIServer(support_agent.SCRIPTS).start()
agent = llama_index_agent.make_agent(server.base_url)

async def _answer(ticket):
    return str(await agent.run(ticket, max_iterations=support_agent.MAX_TURNS))

def answer(ticket):
    return asyncio.run(_answer(ticket))
"""

OPENAI_AGENTS = """
import json
from typing import Any
import openai, support_agent
from agents import Agent, Runner, function_tool, set_default_openai_client
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

server = ScriptedOpenAIServer(support_agent.SCRIPTS).start()
set_default_openai_client(openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0),
                          use_for_tracing=False)

@function_tool(strict_mode=False)
def lookup_order(order_id: str) -> str:
    \"\"\"Look an order up.\"\"\"
    return json.dumps(support_agent.lookup_order(order_id))

@function_tool(strict_mode=False)
def calculate_refund(order_id: str, items: list[dict[str, Any]]) -> str:
    \"\"\"Compute a refund.\"\"\"
    return support_agent.run_tool("calculate_refund", {"order_id": order_id, "items": items})

agent = Agent(name="support", instructions=support_agent.SYSTEM, tools=[lookup_order, calculate_refund],
              model="gpt-4o-mini")

def answer(ticket):
    return Runner.run_sync(agent, ticket).final_output
"""

APP_END = """
def handle_ticket(ticket):
    return support_agent.check_reply(ticket, answer(ticket))
"""

PROGRAM = """
import refund_app, support_agent
refund_app.handle_ticket(support_agent.TICKETS[1])   # raises MissingRefundAmount after the agent answered
"""

FRAMEWORKS = {"pydantic_ai": PYDANTIC_AI, "smolagents": SMOLAGENTS, "langgraph": LANGGRAPH,
              "llama_index": LLAMA_INDEX, "openai_agents": OPENAI_AGENTS}


@pytest.mark.parametrize("entry_point", [False, True], ids=["own-run", "entry-point"])
@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_one_failed_run_with_the_origin_at_the_empty_lookup(tmp_path, framework, entry_point):
    pytest.importorskip({"openai_agents": "agents"}.get(framework, framework))
    (tmp_path / "refund_app.py").write_text(FRAMEWORKS[framework] + APP_END)
    env = {"OTEL_AGENT_TRACE_ENTRYPOINTS": "refund_app:handle_ticket"} if entry_point else {}
    proc, traces = run_instrumented(PROGRAM, tmp_path, **env)
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-3000:]
    ours = [s for scope, s in spans_of(traces) if scope == "otel_agent_trace"]
    runs = [s for s in ours if s["name"].startswith("invoke_agent")]
    assert len(runs) == 1, [r["name"] for r in runs]  # no second run around or inside the agent's
    [run_span] = runs
    steps = [s for s in ours if s["name"].startswith("agent_step")]
    assert steps and {s["parentSpanId"] for s in steps} == {run_span["spanId"]}  # the failed run holds the steps
    if entry_point:  # the entry point's run, listing the agent
        assert attributes(run_span)["gen_ai.agent.name"] == "handle_ticket"
        assert attributes(run_span)["agent_trace.run.agents"] == {"values": [{"stringValue": "support"}]}
    else:
        assert attributes(run_span)["gen_ai.agent.name"] == "support"

    [run] = analyze(traces)["runs"]
    assert run["status"] == "failed", run
    assert run["critical"]["error_type"] == "run_exception"
    assert "MissingRefundAmount" in run["critical"]["description"]
    assert (run["origin"]["tool"], run["origin"]["error_type"]) == ("lookup_order", "tool_empty_result"), run
    assert run["bug_class"] == "tool"
