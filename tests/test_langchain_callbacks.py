"""LangChain chat models on a backend we do not patch, recorded by our callback handler with no
code change: a custom `BaseChatModel` (tests/langchain_scripted_model.py) driven by LangGraph's
`create_react_agent` and langchain's `create_agent` gives the same tree as a plain loop (run →
`agent_step N` → chat + `execute_tool` with the call ids), async too; ChatOpenAI keeps exactly one
chat span per call (its client's) even with concurrent runs of both kinds; a model error fails
its chat; a fault of ours leaves the agent's answer unchanged; and under `opentelemetry-instrument`
the analyzer names the empty lookup as origin."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import langgraph_agent
import pytest
import support_agent
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManager
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent
from langchain_scripted_model import LATENCY, MODEL, ScriptedChatModel
from opentelemetry.trace import StatusCode
from span_helpers import attrs
from stacks.zero_code import analyze, run_instrumented

from otel_agent_trace.frameworks import langchain_callbacks
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

HEALTHY, EMPTY = support_agent.TICKETS[0], support_agent.TICKETS[1]
TWO_STEPS = [[f"chat {MODEL}", "execute_tool lookup_order"],
             [f"chat {MODEL}", "execute_tool calculate_refund"],
             [f"chat {MODEL}"]]


def model(**kwargs: Any) -> ScriptedChatModel:
    return ScriptedChatModel(scripts=support_agent.SCRIPTS, **kwargs)


def ask(agent: Any, ticket: str) -> str:
    return agent.invoke({"messages": [("user", ticket)]})["messages"][-1].content


def runs(traced: Any) -> list[Any]:
    return [s for s in traced.spans if s.name.startswith("invoke_agent")]


def tree(traced: Any, run: Any) -> list[list[str]]:
    return [[c.name for c in traced.children(step)] for step in traced.children(run)]


@pytest.mark.parametrize("factory", [create_react_agent, create_agent])
def test_custom_chat_model_gives_the_plain_loop_tree(instrument, factory):
    traced = instrument()
    agent = factory(model(), langgraph_agent.build_tools(), name="support")
    assert ask(agent, HEALTHY).startswith("Your refund for order A1001 is $25.00")
    (run,) = runs(traced)
    assert attrs(run)["gen_ai.agent.name"] == "support"
    assert tree(traced, run) == TWO_STEPS
    steps = traced.children(run)
    for index, step in enumerate(steps):
        chat = traced.children(step)[0]
        a = attrs(chat)
        assert a["gen_ai.request.model"] == MODEL and a["gen_ai.response.id"] == f"scripted-{index}"
        assert a["gen_ai.usage.input_tokens"] == 10 * (2 * index + 1) and a["gen_ai.usage.output_tokens"] == 7
        # recorded at the call's end, timed from its start: the span covers the model's latency
        assert chat.end_time - chat.start_time >= LATENCY * 1e9 * 0.9
        assert chat.start_time >= step.start_time
        if index < 2:
            tool_span = traced.children(step)[1]
            assert attrs(tool_span)["gen_ai.tool.call.id"] == f"call_{index}_0"
            assert attrs(tool_span)["agent_trace.tool.source"] == "explicit"
            decided_by = [l.context.span_id for l in tool_span.links
                          if l.attributes["agent_trace.link.relation"] == "decided_by"]
            assert decided_by == [step.context.span_id]
            assert chat.end_time <= tool_span.start_time <= tool_span.end_time <= steps[index + 1].start_time
    definitions = json.loads(attrs(traced.children(steps[0])[0])["gen_ai.tool.definitions"])
    assert {d["function"]["name"] for d in definitions} == {"lookup_order", "track_shipment", "calculate_refund"}
    assert json.loads(attrs(steps[1])["agent_trace.context.new_messages"])[0]["message"]["tool_calls"][0]["id"] == "call_0_0"


def test_plain_bind_tools_loop_is_an_implicit_run(instrument):
    """No graph: `bind_tools(...).invoke` and `tool.invoke(call)` in a hand-written loop. The run is
    implicit (found by conversation), opened by the first recorded call and enclosing its steps."""
    traced = instrument()
    tools = {t.name: t for t in langgraph_agent.build_tools()}
    bound = model().bind_tools(list(tools.values()))
    messages: list[Any] = [("user", HEALTHY)]
    while True:
        reply = bound.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            break
        messages += [tools[call["name"]].invoke(call) for call in reply.tool_calls]
    assert reply.content.startswith("Your refund")
    (run,) = runs(traced)
    assert tree(traced, run) == TWO_STEPS
    assert run.start_time <= min(s.start_time for s in traced.children(run))


def test_async_custom_chat_model(instrument):
    traced = instrument()
    agent = create_react_agent(model(), langgraph_agent.build_tools(), name="support")

    async def main() -> list[str]:
        return await asyncio.gather(*(agent.ainvoke({"messages": [("user", t)]}) for t in (HEALTHY, EMPTY)))

    answers = [r["messages"][-1].content for r in asyncio.run(main())]
    assert answers[0].startswith("Your refund") and answers[1].startswith("I could not find")
    assert len(runs(traced)) == 2
    for run in runs(traced):
        assert tree(traced, run) == TWO_STEPS


def test_chat_openai_keeps_its_clients_one_chat_per_call(instrument):
    """Our handler is on LangChain's callback managers, yet ChatOpenAI's calls are its openai
    client's chats only: one per call, provider openai, the server's response ids."""
    traced = instrument()
    assert any(type(h).__name__ == "AgentTraceCallbackHandler" for h in CallbackManager([]).inheritable_handlers)
    with ScriptedOpenAIServer(support_agent.SCRIPTS) as server:
        agent = langgraph_agent.build_agent(server.base_url)
        assert ask(agent, HEALTHY).startswith("Your refund")
    (run,) = runs(traced)
    assert tree(traced, run) == [[n.replace(MODEL, "gpt-4o-mini") for n in step] for step in TWO_STEPS]
    chats = [s for s in traced.spans if s.name.startswith("chat")]
    assert {attrs(c)["gen_ai.provider.name"] for c in chats} == {"openai"}
    assert all(attrs(c)["gen_ai.response.id"].startswith("chatcmpl") for c in chats)


def test_concurrent_runs_of_both_kinds_never_mix(instrument):
    """Each call decides in its own context: a ChatOpenAI call claimed by its client never
    silences a custom model's call running beside it, nor the reverse."""
    traced = instrument()
    with ScriptedOpenAIServer(support_agent.SCRIPTS) as server:
        agents = [langgraph_agent.build_agent(server.base_url, name="openai_agent"),
                  create_react_agent(model(), langgraph_agent.build_tools(), name="custom_agent")]
        jobs = [(agents[i % 2], (HEALTHY, EMPTY)[i // 2 % 2]) for i in range(12)]
        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(lambda job: ask(*job), jobs))

        async def tasks() -> list[Any]:
            return await asyncio.gather(*(a.ainvoke({"messages": [("user", t)]}) for a, t in jobs))

        answers += [r["messages"][-1].content for r in asyncio.run(tasks())]
    assert all(a.startswith(("Your refund", "I could not find")) for a in answers)
    assert len(runs(traced)) == 24
    for run in runs(traced):
        name = attrs(run)["gen_ai.agent.name"]
        steps = traced.children(run)
        assert [len([c for c in traced.children(s) if c.name.startswith("chat")]) for s in steps] == [1, 1, 1]
        providers = {attrs(traced.children(s)[0])["gen_ai.provider.name"] for s in steps}
        assert providers == ({"openai"} if name == "openai_agent" else {"scriptedchatmodel"})


def test_model_error_fails_its_chat(instrument):
    traced = instrument()
    agent = create_react_agent(model(fail_on="A1001"), langgraph_agent.build_tools(), name="support")
    with pytest.raises(ConnectionError, match="scripted backend unreachable"):
        ask(agent, HEALTHY)
    (chat,) = [s for s in traced.spans if s.name.startswith("chat")]
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["agent_trace.error.type"] == "llm_error"
    assert runs(traced)[0].status.status_code is StatusCode.ERROR


@pytest.mark.parametrize("target", ["to_request", "to_response"])
def test_fault_in_our_callback_leaves_the_answer_unchanged(instrument, monkeypatch, caplog, target):
    baseline = ask(create_react_agent(model(), langgraph_agent.build_tools()), HEALTHY)
    traced = instrument()

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected failure inside otel-agent-trace")

    monkeypatch.setattr(langchain_callbacks, target, boom)
    assert ask(create_react_agent(model(), langgraph_agent.build_tools()), HEALTHY) == baseline
    assert "injected failure" in caplog.text
    assert not [s for s in traced.spans if s.name.startswith("chat")]  # nothing half-recorded
    assert len([s for s in traced.spans if s.name.startswith("execute_tool")]) == 2


def test_uninstrument_removes_the_handler(instrument):
    instrument()
    assert any(type(h).__name__ == "AgentTraceCallbackHandler" for h in CallbackManager([]).handlers)
    from otel_agent_trace.instrumentor import AgentTraceInstrumentor

    AgentTraceInstrumentor().uninstrument()
    assert not any(type(h).__name__ == "AgentTraceCallbackHandler" for h in CallbackManager([]).handlers)


PROGRAM = """
import support_agent, langgraph_agent
from langgraph.prebuilt import create_react_agent
from langchain_scripted_model import ScriptedChatModel
agent = create_react_agent(ScriptedChatModel(scripts=support_agent.SCRIPTS), langgraph_agent.build_tools(),
                           prompt=support_agent.SYSTEM, name="support")
langgraph_agent.handle_ticket(agent, support_agent.TICKETS[0])
langgraph_agent.handle_ticket(agent, support_agent.TICKETS[1])   # raises: the program ends with a traceback
"""


def test_zero_code_custom_model_empty_result_is_the_origin(tmp_path):
    proc, traces = run_instrumented(PROGRAM, tmp_path)
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-2000:]
    report = analyze(traces)
    ok, failed = report["runs"]
    assert ok["status"] == "ok" and ok["agent"] == "support"
    assert failed["status"] == "failed" and "MissingRefundAmount" in failed["critical"]["description"]
    assert failed["origin"]["tool"] == "lookup_order"
    assert failed["origin"]["error_type"] == "tool_empty_result"
    assert failed["bug_class"] == "tool"
