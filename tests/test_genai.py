"""google-genai through the real client against the scripted server's Gemini API paths
(`:generateContent`, `:streamGenerateContent?alt=sse`): the same run → step → chat +
execute_tool tree as the other clients, ids linking `function_call` → `function_response`
(Gemini sends none: they are named by place), automatic function calling recorded as real tool
spans, streams, async, errors, and the analyzer."""

from __future__ import annotations

import asyncio
import gc
import json

import genai_agent
import pytest
import support_agent
from client_helpers import assert_refund_tree, instrumented_run
from google import genai
from google.genai import errors, types
from opentelemetry.trace import StatusCode
from span_helpers import attrs, hexid

from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

HEALTHY, EMPTY, RECOVERED, _ = support_agent.TICKETS
MODEL = genai_agent.MODEL


def _client(server, **options):
    return genai.Client(api_key="test", http_options=types.HttpOptions(
        base_url=server.base_url.removesuffix("/v1"), **options))


@pytest.fixture
def gemini(demo_server):
    return _client(demo_server)


def test_span_tree_and_call_ids(instrument, gemini):
    traced = instrument()
    assert genai_agent.handle_ticket(gemini, HEALTHY).startswith("Your refund for order A1001 is $25.00")
    steps = assert_refund_tree(traced, f"chat {MODEL}")
    assert [attrs(s)["agent_trace.step.kind"] for s in steps] == ["tool_call", "tool_call", "final"]
    chat = attrs(traced.children(steps[0])[0])
    assert chat["gen_ai.provider.name"] == "gcp.gemini"
    assert chat["gen_ai.response.id"] == "genai-scripted-0"
    assert chat["gen_ai.response.finish_reasons"] == ("STOP",)
    assert chat["gen_ai.usage.input_tokens"] > 0 and chat["gen_ai.usage.output_tokens"] > 0
    lookup, calc = traced.named("execute_tool")
    # no ids on the wire: the call is named by its place (content 1, first call)
    assert attrs(lookup)["gen_ai.tool.call.id"] == "call_1_0"
    assert json.loads(attrs(lookup)["gen_ai.tool.call.arguments"]) == {"order_id": "A1001"}
    assert json.loads(attrs(lookup)["gen_ai.tool.call.result"])[0]["order_id"] == "A1001"
    assert attrs(calc)["gen_ai.tool.call.id"] == "call_3_0"
    # the system instruction, the ticket, then per turn the model's call and the user's response
    assert [attrs(s)["agent_trace.context.messages"] for s in steps] == [2, 4, 6]


def test_an_error_response_is_a_failed_result_and_an_empty_one_is_empty(instrument, gemini):
    traced = instrument()
    genai_agent.handle_ticket(gemini, RECOVERED)  # the carrier API times out once
    first, second = traced.named("execute_tool")
    assert attrs(first)["agent_trace.tool.outcome"] == "error_result"
    assert attrs(second)["agent_trace.tool.outcome"] == "ok"
    traced = instrument()
    with pytest.raises(support_agent.MissingRefundAmount):
        genai_agent.handle_ticket(gemini, EMPTY)
    assert attrs(traced.named("execute_tool")[0])["agent_trace.tool.outcome"] == "empty_result"


def test_automatic_function_calling_records_each_execution(instrument, gemini):
    traced = instrument()
    assert genai_agent.handle_ticket_afc(gemini, RECOVERED).startswith("Order A1003 has shipped")
    [run] = traced.runs()
    steps = traced.children(run)
    assert [[c.name for c in traced.children(s)] for s in steps] == [
        [f"chat {MODEL}", "execute_tool track_shipment"],
        [f"chat {MODEL}", "execute_tool track_shipment"],
        [f"chat {MODEL}"],
    ]
    failed, ok = traced.named("execute_tool")
    # real executions: the SDK ran the functions inside our spans, the exception is the tool's own
    assert [attrs(t)["agent_trace.tool.source"] for t in (failed, ok)] == ["explicit", "explicit"]
    assert failed.status.status_code is StatusCode.ERROR and attrs(failed)["error.type"] == "TimeoutError"
    assert ok.status.status_code is StatusCode.UNSET
    assert attrs(failed)["gen_ai.tool.call.id"] == "call_1_0" and attrs(ok)["gen_ai.tool.call.id"] == "call_3_0"
    assert attrs(steps[1])["agent_trace.depends_on"] == (hexid(failed),)
    # the next request's function_response is that execution: never inferred a second time
    assert len(traced.named("execute_tool")) == 2


def test_a_streamed_run_is_recorded_like_a_whole_one(instrument, gemini):
    def recorded(traced):
        steps = traced.named("agent_step")
        return ([attrs(s)["agent_trace.context.hash"] for s in steps],
                [attrs(s).get("agent_trace.step.tool_calls") for s in steps],
                [attrs(c)["gen_ai.usage.output_tokens"] for c in traced.named("chat")],
                [attrs(c)["gen_ai.response.id"] for c in traced.named("chat")])

    traced = instrument()
    genai_agent.handle_ticket(gemini, HEALTHY)
    whole = recorded(traced)
    traced = instrument()
    assert genai_agent.handle_ticket(gemini, HEALTHY, stream=True).startswith("Your refund")
    assert recorded(traced) == whole


def test_streams_broken_mid_way_and_abandoned(instrument):
    text = "A long answer that arrives in several pieces over the stream."
    scripts = {"broken": [{"content": text, "break_after": 2}], "left": [{"content": text}]}
    with ScriptedOpenAIServer(scripts) as server:
        traced = instrument()
        client = _client(server)
        with pytest.raises(Exception):  # httpx: the chunked body ended early
            for _ in client.models.generate_content_stream(model=MODEL, contents="broken"):
                pass
        left = client.models.generate_content_stream(model=MODEL, contents="left")
        assert next(left).text == text[:16]
        del left
        gc.collect()
        chats = traced.named("chat")
    assert [c.status.status_code for c in chats] == [StatusCode.ERROR, StatusCode.UNSET]
    assert all(c.end_time is not None for c in chats)
    assert attrs(chats[1])["gen_ai.response.id"] == "genai-scripted-0"  # what had arrived


def test_async_generate_and_stream(instrument, demo_server):
    traced = instrument()
    assert asyncio.run(genai_agent.ahandle_ticket(_client(demo_server), HEALTHY)).startswith("Your refund")
    assert [s.name for s in traced.named("execute_tool")] == ["execute_tool lookup_order", "execute_tool calculate_refund"]

    async def streamed():
        chunks, client = [], _client(demo_server)
        async for chunk in await client.aio.models.generate_content_stream(
                model=MODEL, contents=HEALTHY, config=genai_agent._config()):
            chunks.append(chunk)
        return chunks

    assert any(c.function_calls for c in asyncio.run(streamed()))
    assert attrs(traced.named("agent_step")[-1])["agent_trace.step.tool_calls"] == ("lookup_order",)
    assert traced.named("chat")[-1].end_time is not None


def test_http_500_fails_the_chat_and_reaches_the_caller(instrument):
    with ScriptedOpenAIServer({"*": [{"status": 500, "error": "overloaded"}]}) as server:
        traced = instrument()
        client = _client(server)  # kept: a collected Client closes its HTTP client
        with pytest.raises(errors.ServerError):
            client.models.generate_content(model=MODEL, contents="hi")
    [chat] = traced.named("chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["error.type"] == "ServerError"


def test_analyzer_names_the_planted_origin(tmp_path):
    _, report = instrumented_run(tmp_path, "genai_agent")
    assert [r["status"] for r in report["runs"]] == ["ok", "failed", "ok", "failed"]
    # every call priced (genai-prices knows gemini-2.5-flash): the run's cost is their sum
    costs = [r["cost_usd"] for r in report["runs"]]
    assert all(c > 0 for c in costs)
    assert report["summary"]["metrics"]["cost_per_run"] == pytest.approx(sum(costs) / 4, abs=1e-6)
    assert (report["runs"][1]["origin"]["tool"], report["runs"][1]["origin"]["error_type"]) == (
        "lookup_order", "tool_empty_result")


def test_a_timeout_fails_the_chat(instrument):
    with ScriptedOpenAIServer({"*": [{"content": "late", "delay": 1.0}]}) as server:
        traced = instrument()
        client = _client(server, timeout=200)  # milliseconds
        with pytest.raises(Exception) as raised:
            client.models.generate_content(model=MODEL, contents="hi")
    [chat] = traced.named("chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["error.type"] == type(raised.value).__name__
    assert "Timeout" in type(raised.value).__name__


def test_a_chat_send_message_stream_is_one_chat_span(instrument, gemini):
    traced = instrument()
    chat = gemini.chats.create(model=MODEL, config=genai_agent._config())
    chunks = list(chat.send_message_stream(HEALTHY))
    assert any(c.function_calls for c in chunks)
    [step] = traced.named("agent_step")
    assert attrs(step)["agent_trace.step.tool_calls"] == ("lookup_order",)
    [span] = traced.named("chat")
    assert span.end_time is not None and attrs(span)["gen_ai.response.id"] == "genai-scripted-0"
