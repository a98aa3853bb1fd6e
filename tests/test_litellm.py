"""litellm `completion` / `acompletion` routed to the scripted server as an OpenAI-compatible
provider: exactly one chat span per call (litellm's own call into the openai client is passed
through), the same tree and links as the openai client, streams, async, errors, the analyzer."""

from __future__ import annotations

import asyncio
import gc
import json
import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm is imported

import litellm  # noqa: E402
import litellm_agent  # noqa: E402
import support_agent  # noqa: E402
from client_helpers import assert_refund_tree, instrumented_run  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402
from span_helpers import attrs, hexid  # noqa: E402

from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer  # noqa: E402

HEALTHY = support_agent.TICKETS[0]
ASK = {"model": "openai/gpt-4o-mini", "api_key": "test", "num_retries": 0, "max_retries": 0}


def test_one_chat_span_per_call_and_the_same_tree(instrument, demo_server):
    traced = instrument()
    reply = litellm_agent.handle_ticket(litellm_agent.litellm_client(demo_server.base_url), HEALTHY)
    assert reply.startswith("Your refund for order A1001 is $25.00")
    [run] = traced.runs()
    steps = traced.children(run)
    assert [[c.name for c in traced.children(s)] for s in steps] == [
        ["chat openai/gpt-4o-mini", "execute_tool lookup_order"],
        ["chat openai/gpt-4o-mini", "execute_tool calculate_refund"],
        ["chat openai/gpt-4o-mini"],
    ]
    chats = traced.named("chat")
    assert len(chats) == 3 and all(traced.children(c) == [] for c in chats)  # nothing of ours inside
    assert attrs(chats[0])["gen_ai.provider.name"] == "openai"
    assert attrs(chats[0])["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert attrs(chats[0])["gen_ai.usage.input_tokens"] > 0
    lookup, calc = traced.named("execute_tool")
    assert attrs(lookup)["gen_ai.tool.call.id"] == "call_0_0"
    assert json.loads(attrs(lookup)["gen_ai.tool.call.result"])[0]["order_id"] == "A1001"
    assert [l.context.span_id for l in lookup.links] == [steps[0].context.span_id]
    assert attrs(steps[1])["agent_trace.depends_on"] == (hexid(lookup),)
    assert attrs(steps[2])["agent_trace.depends_on"] == (hexid(calc),)


def test_async_acompletion_is_one_chat_span(instrument, demo_server):
    traced = instrument()

    async def ask():
        return await litellm.acompletion(api_base=demo_server.base_url, tools=support_agent.TOOL_SCHEMAS,
                                         messages=[{"role": "user", "content": HEALTHY}], **ASK)

    assert asyncio.run(ask()).choices[0].message.tool_calls[0].function.name == "lookup_order"
    [chat] = traced.named("chat")
    assert attrs(traced.named("agent_step")[0])["agent_trace.step.tool_calls"] == ("lookup_order",)
    assert chat.status.status_code is StatusCode.UNSET


def test_streams_complete_broken_and_abandoned(instrument):
    text = "A long answer that arrives in several pieces over the stream."
    scripts = {"whole": [{"content": text}], "broken": [{"content": text, "break_after": 2}],
               "left": [{"content": text}], "async": [{"content": text}]}
    with ScriptedOpenAIServer(scripts) as server:
        traced = instrument()
        ask = {"api_base": server.base_url, "stream": True, **ASK}
        chunks = litellm.completion(messages=[{"role": "user", "content": "whole"}], **ask)
        assert "".join(c.choices[0].delta.content or "" for c in chunks) == text
        with pytest.raises(Exception):  # the chunked body ended early
            for _ in litellm.completion(messages=[{"role": "user", "content": "broken"}], **ask):
                pass
        left = litellm.completion(messages=[{"role": "user", "content": "left"}], **ask)
        next(iter(left))
        del left
        gc.collect()

        async def streamed():
            stream = await litellm.acompletion(messages=[{"role": "user", "content": "async"}], **ask)
            return "".join([c.choices[0].delta.content or "" async for c in stream])

        assert asyncio.run(streamed()) == text
        whole, broken, left, async_chat = traced.named("chat")
    assert whole.status.status_code is StatusCode.UNSET
    assert json.loads(attrs(whole)["gen_ai.output.messages"])[0]["parts"][0]["content"] == text
    assert broken.status.status_code is StatusCode.ERROR
    assert left.status.status_code is StatusCode.UNSET and left.end_time is not None
    assert json.loads(attrs(async_chat)["gen_ai.output.messages"])[0]["parts"][0]["content"] == text


def test_http_500_is_one_failed_chat(instrument):
    with ScriptedOpenAIServer({"*": [{"status": 500, "error": "model overloaded"}]}) as server:
        traced = instrument()
        with pytest.raises(Exception) as raised:
            litellm.completion(api_base=server.base_url, messages=[{"role": "user", "content": "hi"}], **ASK)
    [chat] = traced.named("chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["error.type"] == type(raised.value).__name__


def test_analyzer_names_the_planted_origin_under_opentelemetry_instrument(tmp_path):
    _, data = instrumented_run(tmp_path, "litellm_agent", LITELLM_LOCAL_MODEL_COST_MAP="True")
    assert [r["status"] for r in data["runs"]] == ["ok", "failed", "ok", "failed"]
    assert (data["runs"][1]["origin"]["tool"], data["runs"][1]["origin"]["error_type"]) == (
        "lookup_order", "tool_empty_result")
    assert [r["steps"] for r in data["runs"]][:3] == [3, 3, 3]


def test_a_timeout_is_one_failed_chat(instrument):
    with ScriptedOpenAIServer({"*": [{"content": "late", "delay": 1.0}]}) as server:
        traced = instrument()
        with pytest.raises(Exception) as raised:
            litellm.completion(api_base=server.base_url, messages=[{"role": "user", "content": "hi"}], timeout=0.2, **ASK)
    assert "Timeout" in type(raised.value).__name__
    [chat] = traced.named("chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["error.type"] == type(raised.value).__name__


def _responses_client(base_url, call=None):
    from types import SimpleNamespace

    call = call or litellm.responses

    def create(model, **kwargs):
        return call(model=f"openai/{model}", api_base=base_url, api_key="test", **kwargs)

    return SimpleNamespace(responses=SimpleNamespace(create=create))


def test_responses_is_one_chat_span_per_call_and_chains(instrument, demo_server):
    import responses_agent

    traced = instrument()
    reply = responses_agent.handle_ticket(_responses_client(demo_server.base_url), HEALTHY)  # previous_response_id
    assert reply.startswith("Your refund for order A1001 is $25.00")
    steps = assert_refund_tree(traced, "chat openai/gpt-4o-mini")
    chats = traced.named("chat")
    assert all(traced.children(c) == [] for c in chats)  # litellm's own HTTP call: nothing of ours inside
    assert attrs(chats[0])["gen_ai.provider.name"] == "openai"
    # chained requests hold only the new items; the step's context is the whole conversation
    assert [attrs(s)["agent_trace.context.messages"] for s in steps] == [2, 4, 6]


def test_aresponses_and_a_responses_stream(instrument, demo_server):
    import responses_agent

    traced = instrument()
    reply = asyncio.run(responses_agent.ahandle_ticket(_responses_client(demo_server.base_url, litellm.aresponses),
                                                       HEALTHY))
    assert reply.startswith("Your refund")
    assert len(traced.named("chat")) == 3 and len(traced.named("execute_tool")) == 2
    traced = instrument()
    events = litellm.responses(model="openai/gpt-4o-mini", api_base=demo_server.base_url, api_key="test",
                               input=HEALTHY, tools=responses_agent.TOOLS, stream=True)
    assert [getattr(e, "type", None) for e in events][-1] == "response.completed"
    [chat] = traced.named("chat")
    assert chat.end_time is not None
    assert attrs(traced.named("agent_step")[0])["agent_trace.step.tool_calls"] == ("lookup_order",)


def test_the_router_completion_is_one_chat_span(instrument, demo_server):
    traced = instrument()
    router = litellm.Router(model_list=[{"model_name": "support", "litellm_params": {
        "model": "openai/gpt-4o-mini", "api_base": demo_server.base_url, "api_key": "test"}}], num_retries=0)
    response = router.completion(model="support", messages=[{"role": "user", "content": HEALTHY}],
                                 tools=support_agent.TOOL_SCHEMAS)
    assert response.choices[0].message.tool_calls[0].function.name == "lookup_order"
    [chat] = traced.named("chat")
    assert attrs(chat)["gen_ai.provider.name"] == "openai"
    assert len(traced.named("agent_step")) == 1


def test_router_acompletion_is_one_chat_span(instrument, demo_server):
    traced = instrument()
    router = litellm.Router(model_list=[{"model_name": "support", "litellm_params": {
        "model": "openai/gpt-4o-mini", "api_base": demo_server.base_url, "api_key": "test"}}], num_retries=0)

    async def call():
        return await router.acompletion(model="support", messages=[{"role": "user", "content": HEALTHY}],
                                        tools=support_agent.TOOL_SCHEMAS)

    response = asyncio.run(call())
    assert response.choices[0].message.tool_calls[0].function.name == "lookup_order"
    [chat] = traced.named("chat")
    assert attrs(chat)["gen_ai.provider.name"] == "openai"
    assert attrs(chat)["gen_ai.request.model"] == "openai/gpt-4o-mini"  # the deployment the router chose
    assert len(traced.named("agent_step")) == 1
