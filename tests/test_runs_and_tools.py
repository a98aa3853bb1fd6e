"""Run boundaries (entrypoints, agent_run, implicit) and the explicit tool surfaces."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest
import support_agent
from span_helpers import attrs
from opentelemetry.trace import StatusCode

import otel_agent_trace
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

HEALTHY, MALFORMED, RECOVERED, LOOP = support_agent.TICKETS


def test_implicit_runs_split_on_new_conversations(instrument, client):
    traced = instrument()
    support_agent.handle_ticket(client, HEALTHY)
    support_agent.handle_ticket(client, RECOVERED)
    runs = traced.runs()
    assert len(runs) == 2
    assert all(attrs(r)["agent_trace.run.implicit"] is True for r in runs)
    assert [len(traced.children(r)) for r in runs] == [3, 3]
    assert len({r.context.trace_id for r in runs}) == 2


def test_implicit_run_without_final_answer_ends_when_the_next_one_starts(instrument, client):
    traced = instrument()
    with pytest.raises(support_agent.StepLimitExceeded):
        support_agent.handle_ticket(client, LOOP)
    # still open: the conversation may go on (read the exporter as is, not as at the process's end)
    assert [s for s in traced.exporter.get_finished_spans() if s.name.startswith("invoke_agent")] == []
    support_agent.handle_ticket(client, HEALTHY)
    first, second = traced.runs()
    assert len(traced.children(first)) == support_agent.MAX_TURNS
    assert first.end_time <= second.start_time


def test_agent_run_context_manager_marks_failures_critical(instrument, client):
    traced = instrument()
    with pytest.raises(support_agent.MissingRefundAmount):
        with otel_agent_trace.agent_run("support"):
            support_agent.handle_ticket(client, MALFORMED)
    [run] = traced.runs()
    assert run.name == "invoke_agent support"
    assert run.status.status_code is StatusCode.ERROR
    assert "MissingRefundAmount" in run.status.description
    assert attrs(run)["agent_trace.lifecycle.phase"] == "critical"
    assert len(traced.children(run)) == 3


def test_decorated_tools_are_recorded_once_and_explicitly(instrument, client, monkeypatch):
    traced = instrument(entrypoints="support_agent:handle_ticket")
    for name, func in list(support_agent.TOOLS.items()):
        monkeypatch.setitem(support_agent.TOOLS, name, otel_agent_trace.tool(func))
    support_agent.handle_ticket(client, HEALTHY)
    tools = traced.named("execute_tool")
    assert [t.name for t in tools] == ["execute_tool lookup_order", "execute_tool calculate_refund"]
    assert [attrs(t)["agent_trace.tool.source"] for t in tools] == ["explicit", "explicit"]
    assert [attrs(t)["gen_ai.tool.call.id"] for t in tools] == ["call_0_0", "call_1_0"]
    assert json.loads(attrs(tools[0])["gen_ai.tool.call.arguments"]) == {"order_id": "A1001"}
    # the next step consumes the explicit span: no inferred twin was made
    step1 = traced.named("agent_step 1")[0]
    assert attrs(step1)["agent_trace.depends_on"] == (format(tools[0].context.span_id, "016x"),)


def test_explicit_tool_exception_is_recorded_and_reraised(instrument, client, monkeypatch):
    traced = instrument(entrypoints="support_agent:handle_ticket")
    monkeypatch.setitem(support_agent.TOOLS, "track_shipment", otel_agent_trace.tool(support_agent.track_shipment))
    assert support_agent.handle_ticket(client, RECOVERED).startswith("Order A1003")
    first, second = traced.named("execute_tool")
    assert attrs(first)["agent_trace.tool.outcome"] == "timeout"
    assert attrs(first)["agent_trace.error.type"] == "tool_timeout"
    assert first.status.status_code is StatusCode.ERROR
    assert attrs(second)["agent_trace.lifecycle.phase"] == "recovered"


def test_dispatcher_wrapped_by_import_path(instrument, client):
    traced = instrument(entrypoints="support_agent:handle_ticket", tools="support_agent:run_tool")
    support_agent.handle_ticket(client, HEALTHY)
    tools = traced.named("execute_tool")
    assert [attrs(t)["gen_ai.tool.name"] for t in tools] == ["lookup_order", "calculate_refund"]
    assert [attrs(t)["agent_trace.tool.source"] for t in tools] == ["explicit", "explicit"]
    assert [attrs(t)["gen_ai.tool.call.id"] for t in tools] == ["call_0_0", "call_1_0"]


def test_uninstrument_restores_everything(instrument, client):
    original_entry, original_dispatch = support_agent.handle_ticket, support_agent.run_tool
    instrumentor = otel_agent_trace.AgentTraceInstrumentor()
    traced = instrument(entrypoints="support_agent:handle_ticket", tools="support_agent:run_tool")
    assert support_agent.handle_ticket is not original_entry
    instrumentor.uninstrument()
    assert support_agent.handle_ticket is original_entry and support_agent.run_tool is original_dispatch
    support_agent.handle_ticket(client, HEALTHY)
    assert traced.spans == []


def _stream_loop(client, ticket):
    messages = [{"role": "system", "content": support_agent.SYSTEM}, {"role": "user", "content": ticket}]
    for _ in range(4):
        stream = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=support_agent.TOOL_SCHEMAS,
                                                stream=True, stream_options={"include_usage": True})
        text, calls = "", {}
        for chunk in stream:
            for choice in chunk.choices:
                text += choice.delta.content or ""
                for tc in choice.delta.tool_calls or ():
                    slot = calls.setdefault(tc.index, {"id": tc.id, "name": "", "arguments": ""})
                    slot["name"] += tc.function.name or ""
                    slot["arguments"] += tc.function.arguments or ""
        if not calls:
            return text
        messages.append({"role": "assistant", "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()]})
        for c in calls.values():
            messages.append({"role": "tool", "tool_call_id": c["id"],
                             "content": support_agent.run_tool(c["name"], json.loads(c["arguments"]))})
    raise AssertionError("no answer")


def test_streaming_responses_are_reassembled(instrument, client):
    traced = instrument()
    assert _stream_loop(client, HEALTHY).startswith("Your refund for order A1001 is $25.00")
    chats = traced.named("chat")
    assert len(chats) == 3
    assert attrs(chats[0])["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert attrs(chats[0])["gen_ai.usage.input_tokens"] > 0
    [lookup, calc] = traced.named("execute_tool")
    assert json.loads(attrs(lookup)["gen_ai.tool.call.arguments"]) == {"order_id": "A1001"}
    assert attrs(calc)["gen_ai.tool.name"] == "calculate_refund"
    assert [attrs(s)["agent_trace.step.kind"] for s in traced.named("agent_step")] == ["tool_call", "tool_call", "final"]


def test_stream_closed_early_finishes_the_chat_span_once(instrument, client):
    traced = instrument()
    messages = [{"role": "user", "content": HEALTHY}]
    with client.chat.completions.create(model="m", messages=messages, stream=True) as stream:
        next(iter(stream))
    [chat] = traced.named("chat")
    assert chat.end_time is not None


def test_async_client_and_async_stream(instrument, demo_server):
    traced = instrument()

    async def main():
        client = openai.AsyncOpenAI(base_url=demo_server.base_url, api_key="test", max_retries=0)
        messages = [{"role": "system", "content": support_agent.SYSTEM}, {"role": "user", "content": HEALTHY}]
        response = await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        call = response.choices[0].message.tool_calls[0]
        messages += [response.choices[0].message,
                     {"role": "tool", "tool_call_id": call.id, "content": support_agent.run_tool("lookup_order", {"order_id": "A1001"})}]
        stream = await client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)
        names = []
        async for chunk in stream:
            for choice in chunk.choices:
                names += [tc.function.name for tc in choice.delta.tool_calls or () if tc.function.name]
        await client.close()
        return names

    async def agent():
        with otel_agent_trace.agent_run("async-agent"):
            return await main()

    assert asyncio.run(agent()) == ["calculate_refund"]
    [run] = traced.runs()
    assert run.name == "invoke_agent async-agent"
    steps = traced.named("agent_step")
    assert all(s.parent.span_id == run.context.span_id for s in steps)
    assert len(steps) == 2
    assert attrs(steps[1])["agent_trace.step.tool_calls"] == ("calculate_refund",)
    [lookup] = traced.named("execute_tool")
    assert attrs(lookup)["gen_ai.tool.call.id"] == "call_0_0"


def test_provider_error_marks_chat_and_step_as_origin(instrument):
    traced = instrument()
    with ScriptedOpenAIServer({"boom": [{"status": 500, "error": "overloaded"}]}) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "boom"}])
    [chat] = traced.named("chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["agent_trace.error.type"] == "llm_error"
    assert attrs(chat)["error.type"] == "InternalServerError"
