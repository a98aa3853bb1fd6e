"""The OpenAI Responses API through the real openai client against the scripted server's
`/v1/responses`: the same run → step → chat + execute_tool tree as Chat Completions, chains by
`previous_response_id` hashed like whole conversations, streams, async, errors, the analyzer."""

from __future__ import annotations

import asyncio
import gc
import json

import openai
import pytest
import responses_agent
import support_agent
from client_helpers import assert_refund_tree, instrumented_run
from opentelemetry.trace import StatusCode
from span_helpers import attrs, hexid

from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

HEALTHY = support_agent.TICKETS[0]


def test_span_tree_and_call_ids_of_a_chained_run(instrument, client):
    traced = instrument()
    reply = responses_agent.handle_ticket(client, HEALTHY)
    assert reply.startswith("Your refund for order A1001 is $25.00")
    [run] = traced.runs()
    steps = traced.children(run)
    assert [s.name for s in steps] == ["agent_step 0", "agent_step 1", "agent_step 2"]
    assert [attrs(s)["agent_trace.step.kind"] for s in steps] == ["tool_call", "tool_call", "final"]
    assert [[c.name for c in traced.children(s)] for s in steps] == [
        ["chat gpt-4o-mini", "execute_tool lookup_order"],
        ["chat gpt-4o-mini", "execute_tool calculate_refund"],
        ["chat gpt-4o-mini"],
    ]
    chat = attrs(traced.children(steps[0])[0])
    assert chat["gen_ai.response.id"].startswith("resp_scripted_")
    assert chat["gen_ai.response.finish_reasons"] == ("completed",)
    assert chat["gen_ai.usage.input_tokens"] > 0 and chat["gen_ai.usage.output_tokens"] > 0
    # the tool's call id is the function_call's call_id; its result came from the next request's
    # function_call_output, and the next step consumes it
    lookup, calc = traced.named("execute_tool")
    assert attrs(lookup)["gen_ai.tool.call.id"] == "call_0_0"
    assert json.loads(attrs(lookup)["gen_ai.tool.call.arguments"]) == {"order_id": "A1001"}
    assert json.loads(attrs(lookup)["gen_ai.tool.call.result"])[0]["order_id"] == "A1001"
    assert attrs(calc)["gen_ai.tool.call.id"] == "call_1_0"
    assert [(l.context.span_id, l.attributes["agent_trace.link.relation"]) for l in lookup.links] == [
        (steps[0].context.span_id, "decided_by")]
    assert attrs(steps[1])["agent_trace.depends_on"] == (hexid(lookup),)
    assert attrs(steps[2])["agent_trace.depends_on"] == (hexid(calc),)


def _step_hashes(traced):
    steps = traced.named("agent_step")
    return ([attrs(s)["agent_trace.context.hash"] for s in steps],
            [attrs(s)["agent_trace.context.messages"] for s in steps])


def test_a_chained_context_hashes_like_the_whole_conversation(instrument, client):
    traced = instrument()
    responses_agent.handle_ticket(client, HEALTHY, chained=True)
    chained = _step_hashes(traced)
    traced = instrument()
    responses_agent.handle_ticket(client, HEALTHY, chained=False)
    assert _step_hashes(traced) == chained
    assert chained[1] == [2, 4, 6]  # instructions, ticket, then a call and its result per turn


def test_with_raw_response_and_parse_are_recorded(instrument, demo_server):
    traced = instrument()
    client = openai.OpenAI(base_url=demo_server.base_url, api_key="test", max_retries=0)
    kwargs = {"model": "gpt-4o-mini", "instructions": support_agent.SYSTEM, "input": HEALTHY,
              "tools": responses_agent.TOOLS}
    raw = client.responses.with_raw_response.create(**kwargs)
    assert raw.parse().output[0].name == "lookup_order"
    assert client.responses.parse(**kwargs).output[0].name == "lookup_order"
    events = client.responses.with_raw_response.create(stream=True, **kwargs).parse()
    assert [e.item.name for e in events if e.type == "response.output_item.done"] == ["lookup_order"]
    chats = traced.named("chat")
    assert len(chats) == 3
    assert all(attrs(s)["agent_trace.step.tool_calls"] == ("lookup_order",) for s in traced.named("agent_step"))


def test_a_streamed_run_is_recorded_like_a_whole_one(instrument, client):
    traced = instrument()
    responses_agent.handle_ticket(client, HEALTHY, stream=False)
    whole = _step_hashes(traced), [attrs(s)["agent_trace.step.tool_calls"] for s in traced.named("agent_step")[:2]]
    traced = instrument()
    reply = responses_agent.handle_ticket(client, HEALTHY, stream=True)
    assert reply.startswith("Your refund for order A1001 is $25.00")
    streamed = _step_hashes(traced), [attrs(s)["agent_trace.step.tool_calls"] for s in traced.named("agent_step")[:2]]
    assert streamed == whole
    assert all(attrs(c)["gen_ai.response.id"].startswith("resp_scripted_") for c in traced.named("chat"))
    assert [s.name for s in traced.named("execute_tool")] == ["execute_tool lookup_order", "execute_tool calculate_refund"]


def test_create_stream_true_broken_and_abandoned(instrument):
    text = "A long answer that arrives in several pieces over the stream."
    scripts = {"broken": [{"content": text, "break_after": 4}], "whole": [{"content": text}],
               "left": [{"content": text}]}
    with ScriptedOpenAIServer(scripts) as server:
        traced = instrument()
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        events = client.responses.create(model="m", input="whole", stream=True)
        assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == text
        with pytest.raises(Exception) as broken:  # httpx: the chunked body ended early
            for _ in client.responses.create(model="m", input="broken", stream=True):
                pass
        left = client.responses.create(model="m", input="left", stream=True)
        next(iter(left))
        del left
        gc.collect()
        whole_chat, broken_chat, left_chat = traced.named("chat")
    assert attrs(whole_chat)["gen_ai.response.finish_reasons"] == ("completed",)
    assert whole_chat.status.status_code is StatusCode.UNSET
    assert broken_chat.status.status_code is StatusCode.ERROR
    assert type(broken.value).__name__ in attrs(broken_chat)["error.type"]
    assert left_chat.status.status_code is StatusCode.UNSET and left_chat.end_time is not None


def test_async_chained_run(instrument, demo_server):
    traced = instrument()
    client = openai.AsyncOpenAI(base_url=demo_server.base_url, api_key="test", max_retries=0)
    reply = asyncio.run(responses_agent.ahandle_ticket(client, HEALTHY))
    assert reply.startswith("Your refund for order A1001 is $25.00")
    assert [s.name for s in traced.named("execute_tool")] == ["execute_tool lookup_order", "execute_tool calculate_refund"]
    assert _step_hashes(traced)[1] == [2, 4, 6]


def test_async_stream(instrument, demo_server):
    traced = instrument()
    client = openai.AsyncOpenAI(base_url=demo_server.base_url, api_key="test", max_retries=0)

    async def streamed():
        events = await client.responses.create(model="gpt-4o-mini", input=HEALTHY, tools=responses_agent.TOOLS,
                                               stream=True)
        return [e.type async for e in events]

    assert asyncio.run(streamed())[-1] == "response.completed"
    [step] = traced.named("agent_step")
    assert attrs(step)["agent_trace.step.tool_calls"] == ("lookup_order",)


def test_http_500_fails_the_chat_and_reaches_the_caller(instrument):
    with ScriptedOpenAIServer({"*": [{"status": 500, "error": "model overloaded"}]}) as server:
        traced = instrument()
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        with pytest.raises(openai.InternalServerError):
            client.responses.create(model="m", input="hello")
    [chat] = traced.named("chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["error.type"] == "InternalServerError"


def test_analyzer_names_the_planted_origin_under_opentelemetry_instrument(tmp_path):
    _, data = instrumented_run(tmp_path, "responses_agent")
    assert [r["status"] for r in data["runs"]] == ["ok", "failed", "ok", "failed"]
    assert (data["runs"][1]["origin"]["tool"], data["runs"][1]["origin"]["error_type"]) == (
        "lookup_order", "tool_empty_result")


def test_a_timeout_fails_the_chat(instrument):
    with ScriptedOpenAIServer({"*": [{"content": "late", "delay": 1.0}]}) as server:
        traced = instrument()
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=0.2)
        with pytest.raises(openai.APITimeoutError):
            client.responses.create(model="m", input="hello")
    [chat] = traced.named("chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["error.type"] == "APITimeoutError"


def _conversation_run(client, ticket, seeded):
    """The support agent in a server-side conversation: each request sends only its new items."""
    first = [{"role": "user", "content": ticket}]
    conversation = client.conversations.create(items=first if seeded == "at-create" else [])
    if seeded == "added":  # items added outside any model call
        client.conversations.items.create(conversation.id, items=first)
    items = first if seeded == "in-request" else []
    for _ in range(support_agent.MAX_TURNS):
        response = client.responses.create(model=responses_agent.MODEL, instructions=support_agent.SYSTEM,
                                           tools=responses_agent.TOOLS, conversation=conversation.id, input=items)
        if not any(item.type == "function_call" for item in response.output):
            return response.output_text
        items = responses_agent._next_items(response, items, chained=True)
    raise AssertionError("no answer")


@pytest.mark.parametrize("seeded", ["in-request", "at-create", "added"],
                         ids=["items-in-request", "items-at-create", "items-added"])
def test_a_conversation_run_is_recorded_like_the_whole_conversation(instrument, client, seeded):
    traced = instrument()
    responses_agent.handle_ticket(client, HEALTHY, chained=False)
    whole = [attrs(s)["agent_trace.context.hash"] for s in traced.named("agent_step")]
    traced = instrument()
    assert _conversation_run(client, HEALTHY, seeded).startswith("Your refund for order A1001 is $25.00")
    steps = assert_refund_tree(traced, "chat gpt-4o-mini")
    assert [attrs(s)["agent_trace.context.messages"] for s in steps] == [2, 4, 6]
    assert [attrs(s)["agent_trace.context.hash"] for s in steps] == whole


def test_built_in_tool_calls_are_execute_tool_spans(instrument):
    output = [
        {"type": "web_search_call", "id": "ws_1", "status": "completed",
         "action": {"type": "search", "query": "carrier delays DHL"}},
        {"type": "file_search_call", "id": "fs_1", "status": "failed", "queries": ["refund policy"], "results": None},
        {"type": "code_interpreter_call", "id": "ci_1", "status": "completed", "code": "print(12.5 * 2)",
         "container_id": "cntr_1", "outputs": [{"type": "logs", "logs": "25.0"}]},
        {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
         "content": [{"type": "output_text", "text": "The refund is $25.00.", "annotations": []}]},
    ]
    body = {"id": "resp_builtin", "object": "response", "created_at": 0, "status": "completed", "model": "gpt-4o-mini",
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": 20, "output_tokens": 9, "total_tokens": 29,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}
    with ScriptedOpenAIServer({"*": [{"body": body}]}) as server:
        traced = instrument()
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        response = client.responses.create(model="gpt-4o-mini", input="refund A1001?",
                                           tools=[{"type": "web_search"}, {"type": "code_interpreter",
                                                                           "container": {"type": "auto"}}])
    assert response.output_text == "The refund is $25.00."
    [step] = traced.named("agent_step")
    assert [c.name for c in traced.children(step)] == [
        "chat gpt-4o-mini", "execute_tool web_search", "execute_tool file_search", "execute_tool code_interpreter"]
    search, files, code = traced.named("execute_tool")
    assert attrs(search)["gen_ai.tool.call.id"] == "ws_1"
    assert json.loads(attrs(search)["gen_ai.tool.call.arguments"])["action"]["query"] == "carrier delays DHL"
    assert attrs(search)["agent_trace.tool.outcome"] == "ok"
    assert attrs(files)["agent_trace.tool.outcome"] == "error_result"
    assert json.loads(attrs(code)["gen_ai.tool.call.arguments"])["code"] == "print(12.5 * 2)"
    assert json.loads(attrs(code)["gen_ai.tool.call.result"])["outputs"][0]["logs"] == "25.0"
