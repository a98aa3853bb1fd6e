"""mcp: an async openai loop (examples/mcp_agent.py) whose tools run on a real MCP server
(examples/mcp_server.py, mcp's `MCPServer` over stdio) through a real `ClientSession`.

Each `call_tool` is an `execute_tool` span where the tool runs, with the call id of the chat's
tool call it answers; `isError` results are failed results; the listing is the run's
`gen_ai.tool.definitions`; mcp's own `MCP send tools/call` spans nest under ours; an exception
group leaving the session's task groups is recorded, and reported, as the exception inside it."""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from pathlib import Path

import mcp_agent
import openai
import pytest
import support_agent
from client_helpers import instrumented_run, spans_of
from mcp import ClientSession
from mcp.client.stdio import stdio_client
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import StatusCode
from span_helpers import attrs
from stacks.zero_code import analyze, run_instrumented

from otel_agent_trace import agent_run
from otel_agent_trace.exporter import AgentTraceFileExporter

HEALTHY, EMPTY_LOOKUP, FLAKY = support_agent.TICKETS[:3]


def with_session(demo_server, body):
    """Run `body(client, session)` inside a real stdio MCP session; its result."""

    async def main():
        client = openai.AsyncOpenAI(base_url=demo_server.base_url, api_key="test", max_retries=0)
        async with stdio_client(mcp_agent.server_parameters()) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(client, session)

    return asyncio.run(main())


def test_tool_calls_are_spans_where_they_run_with_the_call_ids_and_the_listing(instrument, demo_server):
    traced = instrument()
    reply = with_session(demo_server, lambda client, session: mcp_agent.handle_ticket(client, session, HEALTHY))
    assert reply.startswith("Your refund for order A1001 is $25.00")
    [run] = traced.runs()
    steps = traced.children(run)
    assert [[c.name for c in traced.children(s)] for s in steps] == [
        ["chat gpt-4o-mini", "execute_tool lookup_order"],
        ["chat gpt-4o-mini", "execute_tool calculate_refund"],
        ["chat gpt-4o-mini"],
    ]
    lookup, refund = traced.named("execute_tool")  # one span per call: none inferred besides
    assert attrs(lookup)["gen_ai.tool.call.id"] == "call_0_0" and attrs(refund)["gen_ai.tool.call.id"] == "call_1_0"
    assert {attrs(t)["agent_trace.tool.source"] for t in (lookup, refund)} == {"explicit"}
    assert json.loads(attrs(lookup)["gen_ai.tool.call.result"]) == [support_agent.ORDERS["A1001"]]
    assert json.loads(attrs(refund)["gen_ai.tool.call.result"])["amount"] == 25.0
    chats = traced.named("chat")
    assert chats[0].end_time <= lookup.start_time and lookup.end_time <= chats[1].start_time  # where it ran
    definitions = json.loads(attrs(run)["gen_ai.tool.definitions"])
    assert {d["name"] for d in definitions} == {"lookup_order", "track_shipment", "calculate_refund",
                                                "lookup_refund", "slow_lookup"}
    lookup_def = next(d for d in definitions if d["name"] == "lookup_order")
    assert lookup_def["parameters"]["required"] == ["order_id"] and lookup_def["description"] == "Find an order by id."


def test_the_silent_empty_result_is_read_from_the_structured_content(instrument, demo_server):
    """mcp sends a tool's `[]` as no content blocks and `{"result": []}`: recorded as `[]`, the origin."""
    traced = instrument()

    async def body(client, session):
        with pytest.raises(support_agent.MissingRefundAmount):
            await mcp_agent.handle_ticket(client, session, EMPTY_LOOKUP)

    with_session(demo_server, body)
    lookup, refund = traced.named("execute_tool")
    assert attrs(lookup)["gen_ai.tool.call.result"] == "[]"
    assert attrs(lookup)["agent_trace.tool.outcome"] == "empty_result"
    assert attrs(lookup)["agent_trace.lifecycle.phase"] == "origin"
    assert attrs(refund)["agent_trace.tool.outcome"] == "error_result"  # {"success": false, ...}


def test_is_error_results_are_failed_results_and_a_raising_call_fails_its_span(instrument, demo_server):
    traced = instrument()

    async def body(client, session):
        reply = await mcp_agent.handle_ticket(client, session, FLAKY)  # the tool raises once: isError
        with agent_run("refunds"):
            refund = await session.call_tool("lookup_refund", {"order_id": "Z9"})  # isError, returned by the tool
            with pytest.raises(Exception) as raised:
                await session.call_tool("slow_lookup", {"order_id": "A1001"}, read_timeout_seconds=0.2)
        return reply, refund, raised.value

    reply, refund, error = with_session(demo_server, body)
    assert reply.startswith("Order A1003 has shipped") and refund.is_error
    first, retry, lookup_refund, slow = traced.named("execute_tool")
    assert attrs(first)["gen_ai.tool.call.result"] == "Error executing tool track_shipment"
    assert attrs(first)["agent_trace.tool.outcome"] == "error_result"
    assert attrs(retry)["agent_trace.lifecycle.phase"] == "recovered"
    assert attrs(lookup_refund)["gen_ai.tool.call.result"] == "Error: no refund record for Z9"
    assert attrs(lookup_refund)["agent_trace.tool.outcome"] == "error_result"
    assert slow.status.status_code is StatusCode.ERROR
    assert attrs(slow)["agent_trace.tool.outcome"] in ("exception", "timeout")
    [event] = [e for e in slow.events if e.name == "exception"]
    assert event.attributes["exception.type"].endswith(type(error).__qualname__)


def test_an_exception_group_is_recorded_as_the_exception_that_caused_it(instrument, demo_server):
    """Raised inside the session, MissingRefundAmount leaves it wrapped in two task groups' ExceptionGroups."""
    traced = instrument()

    async def main():
        client = openai.AsyncOpenAI(base_url=demo_server.base_url, api_key="test", max_retries=0)
        with agent_run("support"):
            async with stdio_client(mcp_agent.server_parameters()) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await mcp_agent.handle_ticket(client, session, EMPTY_LOOKUP)

    with pytest.raises(BaseException) as raised:
        asyncio.run(main())
    assert type(raised.value).__name__.endswith("ExceptionGroup")  # the host's exception is unchanged
    [run] = traced.runs()
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description.startswith("MissingRefundAmount: refund reply without an amount")
    assert attrs(run)["error.type"] == "MissingRefundAmount"
    [event] = [e for e in run.events if e.name == "exception"]
    assert event.attributes["exception.type"] == "support_agent.MissingRefundAmount"


def test_concurrent_runs_through_one_session_never_mix(instrument, demo_server):
    traced = instrument()

    async def body(client, session):
        return await asyncio.gather(*(mcp_agent.handle_ticket(client, session, t) for t in (HEALTHY, EMPTY_LOOKUP)),
                                    return_exceptions=True)

    healthy, failed = with_session(demo_server, body)
    assert healthy.startswith("Your refund") and isinstance(failed, support_agent.MissingRefundAmount)
    runs = traced.runs()
    assert len(runs) == 2 and len({r.context.trace_id for r in runs}) == 2
    for run in runs:
        tools = [s for s in traced.named("execute_tool") if s.context.trace_id == run.context.trace_id]
        assert [t.name for t in tools] == ["execute_tool lookup_order", "execute_tool calculate_refund"]
        order_ids = {json.loads(attrs(t)["gen_ai.tool.call.arguments"])["order_id"] for t in tools}
        assert len(order_ids) == 1  # one ticket's calls only
        assert all(attrs(t)["gen_ai.tool.call.id"] in ("call_0_0", "call_1_0") for t in tools)


# --- under opentelemetry-instrument, with the analyzer CLI -------------------------------------
def test_the_example_zero_code_with_entrypoints_names_the_origin_and_nests_mcp_spans(tmp_path):
    traces, report = instrumented_run(tmp_path, "mcp_agent")
    failed = {r["origin"]["tool"] if r.get("origin") else None: r for r in report["runs"] if r["status"] == "failed"}
    origin = failed["lookup_order"]["origin"]
    assert origin["error_type"] == "tool_empty_result" and failed["lookup_order"]["bug_class"] == "tool"
    spans = spans_of(traces)
    by_id = {s["spanId"]: s for s in spans}
    ours = [s for s in spans if s["scope"] == "otel_agent_trace" and s["name"].startswith("execute_tool")]
    assert ours and {s["attrs"]["agent_trace.tool.source"] for s in ours} == {"explicit"}
    assert all(s["attrs"].get("gen_ai.tool.call.id") for s in ours)
    sends = [s for s in spans if s["scope"] == "mcp-python-sdk" and s["name"].startswith("MCP send tools/call")]
    assert len(sends) == len(ours)
    for send in sends:  # under our tool span, never beside it
        parent = by_id[send["parentSpanId"]]
        assert parent["name"] == "execute_tool " + send["name"].rsplit(" ", 1)[1] and parent["scope"] == "otel_agent_trace"
    tool_spans = [s for s in spans if s["attrs"].get("gen_ai.operation.name") == "execute_tool"]
    assert len(tool_spans) == len(ours)  # no second tool span for a call from anyone


ZERO_CODE = """
import asyncio
import mcp_agent, openai, support_agent
from mcp import ClientSession
from mcp.client.stdio import stdio_client
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

async def main(base_url):
    client = openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    async with stdio_client(mcp_agent.server_parameters()) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await mcp_agent.handle_ticket(client, session, support_agent.TICKETS[1])

with ScriptedOpenAIServer(support_agent.SCRIPTS) as server:
    asyncio.run(main(server.base_url))   # ends with an ExceptionGroup around MissingRefundAmount
"""


def test_zero_code_the_critical_failure_is_the_exception_inside_the_group(tmp_path):
    proc, traces = run_instrumented(ZERO_CODE, tmp_path)
    assert proc.returncode == 1 and "ExceptionGroup" in proc.stderr, proc.stderr[-2000:]
    [run] = analyze(traces)["runs"]
    assert run["status"] == "failed" and run["critical"]["error_type"] == "run_exception"
    assert run["critical"]["description"].startswith("MissingRefundAmount: refund reply without an amount")
    assert run["origin"]["tool"] == "lookup_order" and run["origin"]["error_type"] == "tool_empty_result"


IN_PROCESS = """
import asyncio, json
import mcp_agent, openai, support_agent
from mcp import Client
from mcp_server import server as tools_server
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

async def ticket(client, tools_client, text):
    tools = mcp_agent.openai_tools(await tools_client.list_tools())
    messages = [{"role": "system", "content": support_agent.SYSTEM}, {"role": "user", "content": text}]
    while True:
        message = (await client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)).choices[0].message
        if not message.tool_calls:
            return support_agent.check_reply(text, message.content)
        messages.append(message)
        for call in message.tool_calls:
            result = await tools_client.call_tool(call.function.name, json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": mcp_agent.result_text(result)})

async def main(base_url):
    client = openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    async with Client(tools_server) as tools_client:   # the server runs in this process: its spans are ours too
        await ticket(client, tools_client, support_agent.TICKETS[2])
        await ticket(client, tools_client, support_agent.TICKETS[1])

with ScriptedOpenAIServer(support_agent.SCRIPTS) as server:
    asyncio.run(main(server.base_url))
"""


def test_an_in_process_servers_tool_spans_restate_ours(tmp_path):
    """`mcp.Client(server)`: the server's `tools/call {name}` spans (`gen_ai.operation.name=execute_tool`)
    nest inside ours; the analyzer counts each call once and takes no failure of theirs for a second one."""
    proc, traces = run_instrumented(IN_PROCESS, tmp_path)
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-2000:]
    spans = spans_of(traces)
    by_id = {s["spanId"]: s for s in spans}
    theirs = [s for s in spans if s["scope"] == "mcp-python-sdk" and s["attrs"].get("gen_ai.operation.name") == "execute_tool"]
    ours = [s for s in spans if s["scope"] == "otel_agent_trace" and s["name"].startswith("execute_tool")]
    assert len(theirs) == len(ours) == 4  # track_shipment twice (Client.call_tool: one span), lookup, refund
    assert all(by_id[s["parentSpanId"]]["scope"] == "otel_agent_trace" for s in theirs)
    flaky, failed = sorted(analyze(traces)["runs"], key=lambda r: r["status"], reverse=True)
    assert flaky["status"] == "ok" and flaky["errors"] == [] and len(flaky["recovered"]) == 1
    assert failed["origin"]["tool"] == "lookup_order" and failed["origin"]["error_type"] == "tool_empty_result"
    assert failed["critical"]["description"].startswith("MissingRefundAmount")
    assert [e["span_name"] for e in failed["errors"]] == ["execute_tool lookup_order", "execute_tool calculate_refund"]


def _group() -> BaseException:
    """A real two-level task-group failure, as anyio raises it."""
    try:
        try:
            support_agent.check_reply(EMPTY_LOOKUP, "nothing to refund")
        except support_agent.MissingRefundAmount as inner:
            raise BaseExceptionGroup("unhandled errors in a TaskGroup", [asyncio.CancelledError(), inner]) from None
    except BaseExceptionGroup as group:
        try:
            raise BaseExceptionGroup("unhandled errors in a TaskGroup", [group]) from None
        except BaseExceptionGroup as outer:
            return outer


@pytest.mark.skipif(sys.version_info < (3, 11), reason="ExceptionGroup is builtin from Python 3.11")
def test_the_analyzer_unwraps_groups_another_instrumentation_recorded(tmp_path: Path):
    """A span recorded by someone else (the SDK's own `record_exception`) holds the group: the
    report names the exception inside it, from the event's stacktrace."""
    path = tmp_path / "other.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(str(path))))
    tracer = provider.get_tracer("someone-else")
    group = _group()
    assert "MissingRefundAmount" in "".join(traceback.format_exception(group))
    with tracer.start_as_current_span("invoke_agent support", attributes={"gen_ai.operation.name": "invoke_agent"}) as run:
        with tracer.start_as_current_span("chat gpt-4o-mini", attributes={"gen_ai.operation.name": "chat"}):
            pass
        run.record_exception(group)
        run.set_status(StatusCode.ERROR, f"{type(group).__name__}: {group}")
    provider.shutdown()
    [found] = analyze(path)["runs"]
    assert found["status"] == "failed"
    assert found["critical"]["description"].startswith("support_agent.MissingRefundAmount: refund reply"), found
