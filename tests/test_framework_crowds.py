"""A hundred concurrent runs per framework, through the real libraries against the scripted
server: half from a thread pool, half as asyncio tasks on a loop running at the same time, on two
tickets (A1001 healthy, A10O2 whose lookup returns `[]`). Each run holds its own steps, its own
tools (on its own order) and its own chat spans in its own trace, and every run of one ticket
counts the same tokens: nothing of another run leaked into it."""

from __future__ import annotations

import asyncio
import json
import os
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm is imported

import support_agent  # noqa: E402
from span_helpers import attrs  # noqa: E402

from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer  # noqa: E402

HEALTHY, EMPTY = support_agent.TICKETS[0], support_agent.TICKETS[1]
HALF = 50
ORDER = {HEALTHY: "A1001", EMPTY: "A10O2"}


def crowd(sync_one: Callable[[str], Any], async_one: Callable[[str], Any]) -> None:
    """HALF runs in 8 threads while HALF asyncio tasks run on the main thread's loop."""
    tickets = [HEALTHY, EMPTY] * (HALF // 2)
    with ThreadPoolExecutor(8) as pool:
        threaded = [pool.submit(sync_one, t) for t in tickets]

        async def tasks() -> list[Any]:
            return await asyncio.gather(*(async_one(t) for t in tickets))

        asyncio.run(tasks())
        for future in threaded:
            future.result()


def assert_never_mixed(traced: Any, steps: int, tools: int) -> None:
    runs = traced.runs()
    assert len(runs) == 2 * HALF and len({r.context.trace_id for r in runs}) == 2 * HALF
    tokens: dict[str, set[int]] = defaultdict(set)
    orders = []
    for run in runs:
        run_steps = traced.children(run)
        assert [s.name for s in run_steps] == [f"agent_step {i}" for i in range(steps)]
        inside = [c for s in run_steps for c in traced.children(s) if c.instrumentation_scope.name == "otel_agent_trace"]
        chats = [c for c in inside if c.name.startswith("chat")]
        calls = [c for c in inside if c.name.startswith("execute_tool")]
        assert len(chats) == steps and len(calls) == tools, [c.name for c in inside]
        assert {c.context.trace_id for c in inside} == {run.context.trace_id}
        order = {json.loads(attrs(t)["gen_ai.tool.call.arguments"]).get("order_id") for t in calls} - {None}
        assert len(order) == 1, order  # one ticket's order in all its tools
        orders.append(order.pop())
        tokens[orders[-1]].add(sum(attrs(c)["gen_ai.usage.input_tokens"] + attrs(c)["gen_ai.usage.output_tokens"]
                                   for c in chats))
    assert sorted(orders) == sorted(["A1001", "A10O2"] * HALF)
    assert all(len(v) == 1 for v in tokens.values()), tokens  # same conversation, same tokens


def test_pydantic_ai_hundred_runs(instrument):
    from test_pydantic_ai import make_agent

    traced = instrument()
    with ScriptedOpenAIServer(support_agent.SCRIPTS) as threads, ScriptedOpenAIServer(support_agent.SCRIPTS) as tasks:
        agent = make_agent(tasks.base_url)

        async def one(ticket: str) -> Any:
            return (await agent.run(ticket)).output

        crowd(lambda t: make_agent(threads.base_url).run_sync(t), one)
    assert_never_mixed(traced, steps=3, tools=2)


def test_smolagents_hundred_runs(instrument):
    from test_smolagents import SCRIPTS, tool_agent

    traced = instrument()
    with ScriptedOpenAIServer(SCRIPTS) as server:

        async def one(ticket: str) -> Any:  # a sync library: an async host hands it to a thread
            return await asyncio.to_thread(tool_agent(server.base_url).run, ticket)

        crowd(lambda t: tool_agent(server.base_url).run(t), one)
    assert_never_mixed(traced, steps=3, tools=3)  # lookup, calculate, final_answer


def test_langgraph_hundred_runs(instrument):
    import langgraph_agent
    from test_langchain import llm_at

    from langgraph.prebuilt import create_react_agent

    traced = instrument()
    # (a server for the loop: langchain-openai caches its async HTTP client per URL, bound to a loop)
    with ScriptedOpenAIServer(support_agent.SCRIPTS) as threads, ScriptedOpenAIServer(support_agent.SCRIPTS) as tasks:
        sync_agent = create_react_agent(llm_at(threads.base_url), langgraph_agent.build_tools(), name="support")
        async_agent = create_react_agent(llm_at(tasks.base_url), langgraph_agent.build_tools(), name="support")

        async def one(ticket: str) -> Any:
            return await async_agent.ainvoke({"messages": [("user", ticket)]})

        crowd(lambda t: sync_agent.invoke({"messages": [("user", t)]}), one)
    assert_never_mixed(traced, steps=3, tools=2)


def test_llama_index_hundred_runs(instrument):
    import llama_index_agent

    traced = instrument()
    with ScriptedOpenAIServer(support_agent.SCRIPTS) as server:
        agent = llama_index_agent.make_agent(server.base_url)
        agent.streaming = False  # (litellm's streamed chunks carry no usage: the token check needs it)

        async def one(ticket: str) -> Any:
            return await agent.run(ticket)

        # a thread runs its agent on a loop of its own
        crowd(lambda t: asyncio.run(one(t)), one)
    assert_never_mixed(traced, steps=3, tools=2)


def test_openai_agents_hundred_runs(instrument):
    pytest.importorskip("agents")
    import openai
    from agents import Agent, Runner, function_tool

    traced = instrument()

    @function_tool(strict_mode=False)
    def lookup_order(order_id: str) -> str:
        """Look an order up."""
        return json.dumps(support_agent.lookup_order(order_id))

    @function_tool(strict_mode=False)
    def calculate_refund(order_id: str, items: list[dict[str, Any]]) -> str:
        """Compute a refund."""
        return support_agent.run_tool("calculate_refund", {"order_id": order_id, "items": items})

    from agents import OpenAIResponsesModel

    with ScriptedOpenAIServer(support_agent.SCRIPTS) as server:
        def agent() -> Any:  # a client per loop (the async client is bound to the loop it first ran on)
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
            return Agent(name="support", instructions=support_agent.SYSTEM, tools=[lookup_order, calculate_refund],
                         model=OpenAIResponsesModel("gpt-4o-mini", client))

        shared = agent()

        async def one(ticket: str) -> Any:
            return (await Runner.run(shared, ticket)).final_output

        crowd(lambda t: Runner.run_sync(agent(), t).final_output, one)
    assert_never_mixed(traced, steps=3, tools=2)
