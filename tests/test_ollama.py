"""Ollama's native client (`ollama.Client.chat` / `AsyncClient.chat`) through the real ollama
library against the scripted server's `/api/chat` (JSON and newline-delimited JSON): one chat span
per call with the GenAI attributes, the same run → step → chat + execute_tool tree as the other
clients with tool calls paired to their results although the wire carries no call ids, streams,
async, HTTP errors, and fail-open."""

from __future__ import annotations

import asyncio
import json
import logging

import ollama
import ollama_agent
import pytest
import support_agent
from opentelemetry.trace import StatusCode
from span_helpers import attrs, hexid

from otel_agent_trace.providers import ollama as ollama_provider
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

HEALTHY, _, RECOVERED, _ = support_agent.TICKETS
MODEL = ollama_agent.MODEL


def _client(server, cls=ollama.Client):
    return cls(host=server.base_url.removesuffix("/v1"))


@pytest.fixture
def llama(demo_server):
    return _client(demo_server)


def _assert_refund_tree(traced) -> None:
    [run] = traced.runs()
    steps = traced.children(run)
    assert [attrs(s)["agent_trace.step.kind"] for s in steps] == ["tool_call", "tool_call", "final"]
    assert [[c.name for c in traced.children(s)] for s in steps] == [
        [f"chat {MODEL}", "execute_tool lookup_order"],
        [f"chat {MODEL}", "execute_tool calculate_refund"],
        [f"chat {MODEL}"],
    ]
    lookup, calc = traced.named("execute_tool")
    assert json.loads(attrs(lookup)["gen_ai.tool.call.arguments"]) == {"order_id": "A1001"}
    assert json.loads(attrs(lookup)["gen_ai.tool.call.result"])[0]["order_id"] == "A1001"
    assert attrs(lookup)["agent_trace.tool.source"] == "inferred"
    # the derived call ids pair each call with its result: decided_by its step, consumed by the next
    assert attrs(lookup)["gen_ai.tool.call.id"] != attrs(calc)["gen_ai.tool.call.id"]
    assert [l.context.span_id for l in lookup.links] == [steps[0].context.span_id]
    assert attrs(steps[1])["agent_trace.depends_on"] == (hexid(lookup),)
    assert attrs(steps[2])["agent_trace.depends_on"] == (hexid(calc),)
    assert [attrs(s)["agent_trace.context.messages"] for s in steps] == [2, 4, 6]


def test_one_chat_span_per_call_with_the_genai_attributes(instrument, llama):
    traced = instrument()
    reply = ollama_agent.handle_ticket(llama, HEALTHY)
    assert reply.startswith("Your refund for order A1001 is $25.00")
    _assert_refund_tree(traced)
    chats = traced.named("chat")
    assert len(chats) == 3
    chat = attrs(chats[0])
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.provider.name"] == "ollama"
    assert chat["gen_ai.request.model"] == MODEL and chat["gen_ai.response.model"] == MODEL
    assert chat["gen_ai.response.finish_reasons"] == ("stop",)
    assert chat["gen_ai.usage.input_tokens"] > 0 and chat["gen_ai.usage.output_tokens"] > 0
    assert "lookup_order" in chat["gen_ai.tool.definitions"]
    output = json.loads(attrs(chats[0])["gen_ai.output.messages"])
    assert output[0]["parts"][0]["name"] == "lookup_order"
    assert json.loads(attrs(chats[2])["gen_ai.output.messages"])[0]["parts"][0]["content"].startswith("Your refund")


def test_an_error_result_read_by_the_model_is_a_failed_tool(instrument, llama):
    traced = instrument()
    ollama_agent.handle_ticket(llama, RECOVERED)  # the carrier API times out once
    first, second = traced.named("execute_tool")
    assert attrs(first)["agent_trace.tool.outcome"] == "error_result"
    assert attrs(second)["agent_trace.tool.outcome"] == "ok"
    assert attrs(second)["agent_trace.lifecycle.phase"] == "recovered"


def test_streamed_parts_make_the_same_tree(instrument, llama):
    traced = instrument()
    reply = ollama_agent.handle_ticket(llama, HEALTHY, stream=True)
    assert reply.startswith("Your refund for order A1001 is $25.00")
    _assert_refund_tree(traced)
    last = attrs(traced.named("chat")[-1])
    assert last["gen_ai.response.finish_reasons"] == ("stop",)
    assert last["gen_ai.usage.output_tokens"] > 0
    assert json.loads(last["gen_ai.output.messages"])[0]["parts"][0]["content"].startswith("Your refund")


def test_async_client(instrument, demo_server):
    traced = instrument()
    reply = asyncio.run(ollama_agent.ahandle_ticket(_client(demo_server, ollama.AsyncClient), HEALTHY))
    assert reply.startswith("Your refund for order A1001 is $25.00")
    _assert_refund_tree(traced)


def test_async_stream(instrument, demo_server):
    traced = instrument()

    async def collect():
        client = _client(demo_server, ollama.AsyncClient)
        parts = await client.chat(model=MODEL, messages=[{"role": "user", "content": HEALTHY}], stream=True)
        return [part async for part in parts]

    parts = asyncio.run(collect())
    assert parts[-1].done and parts[-1].message.tool_calls is None
    assert any(p.message.tool_calls for p in parts)
    [chat] = traced.named("chat")
    [step] = traced.named("agent_step")
    assert attrs(step)["agent_trace.step.kind"] == "tool_call"
    assert attrs(step)["agent_trace.step.tool_calls"] == ("lookup_order",)
    assert chat.status.status_code is StatusCode.UNSET


def test_an_http_error_fails_the_chat_span_and_reaches_the_agent_unchanged(instrument):
    traced = instrument()
    with ScriptedOpenAIServer({"*": [{"status": 500, "error": "model crashed"}]}) as server:
        with pytest.raises(ollama.ResponseError) as raised:
            _client(server).chat(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 500
    [chat] = traced.named("chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["error.type"] == "ResponseError"
    assert attrs(traced.named("agent_step")[0])["agent_trace.error.type"] == "llm_error"


def test_an_error_in_our_translation_leaves_the_result_unchanged(instrument, llama, caplog, monkeypatch):
    messages = [{"role": "user", "content": HEALTHY}]
    expected = llama.chat(model=MODEL, messages=messages, tools=support_agent.TOOL_SCHEMAS)
    traced = instrument()

    def boom(*args, **kwargs):
        raise RuntimeError("injected failure inside otel-agent-trace")

    monkeypatch.setattr(ollama_provider, "parse_response", boom)
    caplog.set_level(logging.WARNING, logger="otel_agent_trace")
    got = llama.chat(model=MODEL, messages=messages, tools=support_agent.TOOL_SCHEMAS)
    streamed = list(llama.chat(model=MODEL, messages=messages, tools=support_agent.TOOL_SCHEMAS, stream=True))
    assert got.message == expected.message and got.done_reason == expected.done_reason
    assert any(p.message.tool_calls for p in streamed) and streamed[-1].done
    warnings = [r for r in caplog.records if "instrumentation error" in r.getMessage()]
    assert warnings and all("injected failure" in str(w.exc_info[1]) for w in warnings)
    assert len(traced.named("chat")) == 2  # both spans still ended, once each


def test_python_function_tools_are_defined_through_ollamas_conversion(instrument, llama):
    traced = instrument()

    def lookup_order(order_id: str) -> str:
        """Look up an order.

        Args:
          order_id: the order's id
        """
        return order_id

    llama.chat(model=MODEL, messages=[{"role": "user", "content": HEALTHY}], tools=[lookup_order])
    definitions = json.loads(attrs(traced.named("chat")[0])["gen_ai.tool.definitions"])
    assert definitions[0]["function"]["name"] == "lookup_order"
    assert "order_id" in definitions[0]["function"]["parameters"]["properties"]
