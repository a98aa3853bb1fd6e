"""The failures issue 6 found on real stacks, reproduced with the real libraries, zero code:
langchain-openai's `with_raw_response` loop, openai-agents' context-switching runner, a program
that raises after its final answer, and the official openai-v2 instrumentation beside ours.

Each agent is the demo's refund ticket whose order lookup silently returns `[]` (the planted
origin); the program ends with the host's own MissingRefundAmount traceback."""

from __future__ import annotations


import pytest

from stacks.zero_code import analyze, attributes, run_instrumented, spans_of

SERVER = """
import sys
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer
import support_agent
server = ScriptedOpenAIServer(support_agent.SCRIPTS).start()
TICKET = support_agent.TICKETS[1]   # the malformed order id: lookup_order returns []
"""


def _failed_run(report: dict) -> dict:
    [run] = report["runs"]
    assert run["status"] == "failed", run
    return run


def _assert_planted_origin(report: dict) -> None:
    run = _failed_run(report)
    assert run["critical"]["error_type"] == "run_exception"
    assert "MissingRefundAmount" in run["critical"]["description"]
    assert run["origin"]["tool"] == "lookup_order", run["origin"]
    assert run["origin"]["error_type"] == "tool_empty_result"
    assert run["bug_class"] == "tool"


LANGCHAIN = SERVER + """
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI

llm = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="test", max_retries=0)
agent = llm.bind_tools(support_agent.TOOL_SCHEMAS)
messages = [SystemMessage(support_agent.SYSTEM), HumanMessage(TICKET)]
for _ in range(support_agent.MAX_TURNS):
    reply = agent.invoke(messages)
    messages.append(reply)
    if not reply.tool_calls:
        break
    for call in reply.tool_calls:
        messages.append(ToolMessage(support_agent.run_tool(call["name"], call["args"]), tool_call_id=call["id"]))
support_agent.check_reply(TICKET, reply.content)   # raises: the program ends with a traceback
"""


def test_langchain_bind_tools_loop_zero_code(tmp_path):
    """`with_raw_response` is recorded like `create`: tool calls, inferred tool spans, and the
    uncaught exception after the final answer marks the implicit run critical."""
    proc, traces = run_instrumented(LANGCHAIN, tmp_path)
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-2000:]
    ours = [s for scope, s in spans_of(traces) if scope == "otel_agent_trace"]
    steps = sorted((s for s in ours if s["name"].startswith("agent_step")), key=lambda s: s["startTimeUnixNano"])
    kinds = [attributes(s).get("agent_trace.step.kind") for s in steps]
    assert kinds == ["tool_call", "tool_call", "final"], kinds
    tools = [s["name"] for s in ours if s["name"].startswith("execute_tool")]
    assert sorted(tools) == ["execute_tool calculate_refund", "execute_tool lookup_order"]
    _assert_planted_origin(analyze(traces))


AGENTS_SDK = SERVER + """
import json
from typing import Any
import openai
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled

set_tracing_disabled(TRACING_DISABLED)

@function_tool(strict_mode=False)
def lookup_order(order_id: str) -> str:
    \"\"\"Look an order up.\"\"\"
    return json.dumps(support_agent.lookup_order(order_id))

@function_tool(strict_mode=False)
def calculate_refund(order_id: str, items: list[dict[str, Any]]) -> str:
    \"\"\"Compute a refund.\"\"\"
    return support_agent.run_tool("calculate_refund", {"order_id": order_id, "items": items})

client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
agent = Agent(name="support", instructions=support_agent.SYSTEM, tools=[lookup_order, calculate_refund],
              model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client))
result = Runner.run_sync(agent, TICKET)
support_agent.check_reply(TICKET, result.final_output)
"""


@pytest.mark.parametrize("tracing_disabled", [True, False])
def test_openai_agents_runner_without_entrypoints(tmp_path, tracing_disabled):
    """Each model call comes from a new asyncio context. With the SDK's tracing disabled the
    implicit run is found again by its conversation; with it on, the agent's run comes from our
    trace processor (frameworks/openai_agents.py). Either way the first step and the origin tool
    are in the one run, and the tools are recorded where they ran."""
    proc, traces = run_instrumented(f"TRACING_DISABLED = {tracing_disabled}\n" + AGENTS_SDK, tmp_path)
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-2000:]
    ours = [s for scope, s in spans_of(traces) if scope == "otel_agent_trace"]
    runs = [s for s in ours if s["name"].startswith("invoke_agent")]
    assert len(runs) == 1
    assert len({s["traceId"] for s in ours}) == 1
    steps = [s for s in ours if s["name"].startswith("agent_step")]
    assert sorted(int(attributes(s)["agent_trace.step.index"]) for s in steps) == [0, 1, 2]
    tools = [s for s in ours if s["name"].startswith("execute_tool")]
    assert sorted(attributes(t)["gen_ai.tool.call.id"] for t in tools) == ["call_0_0", "call_1_0"]
    assert runs[0]["name"] == ("invoke_agent" if tracing_disabled else "invoke_agent support")
    _assert_planted_origin(analyze(traces))


PLAIN_LOOP = SERVER + """
import openai
client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
support_agent.handle_ticket(client, TICKET)
"""


def test_exception_after_the_final_answer_fails_the_implicit_run(tmp_path):
    proc, traces = run_instrumented(PLAIN_LOOP, tmp_path)
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr
    [run] = [s for scope, s in spans_of(traces) if s["name"].startswith("invoke_agent")]
    assert attributes(run)["agent_trace.lifecycle.phase"] == "critical"
    assert run["status"]["code"] == 2
    _assert_planted_origin(analyze(traces))


THREAD_LOOP = SERVER + """
import threading
import openai
client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
worker = threading.Thread(target=support_agent.handle_ticket, args=(client, TICKET))
worker.start()
worker.join()
"""


def test_exception_ending_a_thread_fails_its_implicit_run(tmp_path):
    proc, traces = run_instrumented(THREAD_LOOP, tmp_path)
    assert proc.returncode == 0 and "MissingRefundAmount" in proc.stderr
    _assert_planted_origin(analyze(traces))


ASYNC_LOOP = SERVER + """
import asyncio, gc, json
import openai
client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)

async def unrelated_failure():
    raise RuntimeError("a library's background task failed")

async def background_noise():
    # a task nobody awaits fails and is collected: asyncio reports "Task exception was never
    # retrieved" through the loop's exception handler, in the middle of the agent's run
    task = asyncio.ensure_future(unrelated_failure())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    del task
    gc.collect()

async def handle_ticket(ticket):
    messages = [{"role": "system", "content": support_agent.SYSTEM}, {"role": "user", "content": ticket}]
    for _ in range(support_agent.MAX_TURNS):
        response = await client.chat.completions.create(model=support_agent.MODEL, messages=messages,
                                                        tools=support_agent.TOOL_SCHEMAS)
        message = response.choices[0].message
        if not message.tool_calls:
            return support_agent.check_reply(ticket, message.content or "")
        messages.append(message)
        for call in message.tool_calls:
            if NOISE:
                await background_noise()
            result = support_agent.run_tool(call.function.name, json.loads(call.function.arguments or "{}"))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
"""


def test_an_unrelated_task_failing_mid_run_leaves_the_run_whole(tmp_path):
    """The asyncio loop's handler ends only the run that worked in the failed task: a library's
    background task (a client's `aclose` scheduled by the garbage collector on a closed loop) is
    not the agent crashing."""
    proc, traces = run_instrumented(ASYNC_LOOP.replace("NOISE", "True") + "asyncio.run(handle_ticket(TICKET))\n",
                                    tmp_path)
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr
    assert "a library's background task failed" in proc.stderr  # asyncio did report it
    [run] = [s for scope, s in spans_of(traces) if s["name"].startswith("invoke_agent")]
    assert len({s["traceId"] for scope, s in spans_of(traces)}) == 1
    assert attributes(run)["agent_trace.lifecycle.phase"] == "critical"
    _assert_planted_origin(analyze(traces))


def test_an_agent_task_whose_exception_is_never_retrieved_fails_its_run(tmp_path):
    main = """
async def main():
    task = asyncio.ensure_future(handle_ticket(TICKET))   # fire and forget
    while not task.done():
        await asyncio.sleep(0.01)
    del task
    gc.collect()
    await asyncio.sleep(0)
asyncio.run(main())
"""
    proc, traces = run_instrumented(ASYNC_LOOP.replace("NOISE", "False") + main, tmp_path)
    assert proc.returncode == 0 and "Task exception was never retrieved" in proc.stderr
    _assert_planted_origin(analyze(traces))


@pytest.mark.parametrize("coexist", ["nest", "adopt"])
def test_official_openai_v2_beside_ours(tmp_path, coexist):
    """opentelemetry-instrumentation-openai-v2 is installed in the test environment, so
    `opentelemetry-instrument` loads it with ours. Each request has one chat span of ours; with
    `nest` theirs sits under it; tokens are counted once; no run is made of theirs."""
    script = SERVER + """
import openai
client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
for ticket in support_agent.TICKETS[:3]:
    try:
        support_agent.handle_ticket(client, ticket)
    except support_agent.MissingRefundAmount:
        pass
"""
    proc, traces = run_instrumented(script, tmp_path, OTEL_AGENT_TRACE_COEXIST=coexist,
                                    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="span_only")
    assert proc.returncode == 0, proc.stderr[-2000:]
    spans = spans_of(traces)
    by_id = {s["spanId"]: (scope, s) for scope, s in spans}
    theirs = [s for scope, s in spans if scope != "otel_agent_trace" and s["name"].startswith("chat")]
    ours = [s for scope, s in spans if scope == "otel_agent_trace" and s["name"].startswith("chat")]
    assert len(ours) == 9
    assert len(theirs) == (9 if coexist == "nest" else 0), "the official instrumentation must be active here"
    if coexist == "nest":
        for span in theirs:
            scope, parent = by_id[span["parentSpanId"]]
            assert scope == "otel_agent_trace" and parent["name"].startswith("chat")
    report = analyze(traces)
    assert len(report["runs"]) == 3, [r.get("agent") for r in report["runs"]]  # no run made of theirs
    tokens = sum(int(attributes(s)["gen_ai.usage.input_tokens"]) for s in ours)
    assert report["summary"]["metrics"]["tokens_per_run"]["input"] == pytest.approx(tokens / 3, abs=0.05)
