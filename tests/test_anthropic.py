"""anthropic Messages through the real anthropic client against the scripted server's
`/v1/messages`: the same run → step → chat + execute_tool tree as the openai clients, `tool_use`
/ `tool_result` ids linking them, streams (raw events and `messages.stream`), async, errors, the
SDK's own spans nested under ours and counted once, and the analyzer."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess

import anthropic
import anthropic_agent
import pytest
import support_agent
from client_helpers import BIN, assert_refund_tree, instrumented_run, spans_of
from opentelemetry.trace import StatusCode
from span_helpers import attrs, hexid

HEALTHY, _, RECOVERED, _ = support_agent.TICKETS
MODEL = anthropic_agent.MODEL


@pytest.fixture
def claude(demo_server):
    return anthropic.Anthropic(base_url=demo_server.base_url.removesuffix("/v1"), api_key="test", max_retries=0)


def _server_client(server, cls=anthropic.Anthropic):
    return cls(base_url=server.base_url.removesuffix("/v1"), api_key="test", max_retries=0)


def test_span_tree_and_call_ids(instrument, claude):
    traced = instrument()
    assert anthropic_agent.handle_ticket(claude, HEALTHY).startswith("Your refund for order A1001 is $25.00")
    [run] = traced.runs()
    steps = traced.children(run)
    assert [attrs(s)["agent_trace.step.kind"] for s in steps] == ["tool_call", "tool_call", "final"]
    assert [[c.name for c in traced.children(s)] for s in steps] == [
        [f"chat {MODEL}", "execute_tool lookup_order"],
        [f"chat {MODEL}", "execute_tool calculate_refund"],
        [f"chat {MODEL}"],
    ]
    chat = attrs(traced.children(steps[0])[0])
    assert chat["gen_ai.provider.name"] == "anthropic"
    assert chat["gen_ai.response.id"] == "msg_scripted-0"
    assert chat["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert chat["gen_ai.usage.input_tokens"] > 0 and chat["gen_ai.usage.output_tokens"] > 0
    lookup, calc = traced.named("execute_tool")
    assert attrs(lookup)["gen_ai.tool.call.id"] == "toolu_0_0"
    assert json.loads(attrs(lookup)["gen_ai.tool.call.arguments"]) == {"order_id": "A1001"}
    assert json.loads(attrs(lookup)["gen_ai.tool.call.result"])[0]["order_id"] == "A1001"
    assert attrs(calc)["gen_ai.tool.call.id"] == "toolu_1_0"
    assert [l.context.span_id for l in lookup.links] == [steps[0].context.span_id]
    assert attrs(steps[1])["agent_trace.depends_on"] == (hexid(lookup),)
    assert attrs(steps[2])["agent_trace.depends_on"] == (hexid(calc),)
    # system param, the ticket, then per turn the assistant's tool_use and the user's tool_result
    assert [attrs(s)["agent_trace.context.messages"] for s in steps] == [2, 4, 6]


def test_an_is_error_tool_result_is_a_failed_result(instrument, claude):
    traced = instrument()
    anthropic_agent.handle_ticket(claude, RECOVERED)  # the carrier API times out once
    first, second = traced.named("execute_tool")
    assert attrs(first)["agent_trace.tool.outcome"] == "error_result"
    assert attrs(second)["agent_trace.tool.outcome"] == "ok"


def test_thinking_blocks_are_not_stored_and_hash_like_none(instrument, claude):
    traced = instrument()
    call = {"type": "tool_use", "id": "toolu_x", "name": "lookup_order", "input": {"order_id": "A1001"}}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "[]"}]}
    secret = "private chain of thought about A1001"
    for assistant in ([{"type": "thinking", "thinking": secret, "signature": "sig"}, call], [call]):
        claude.messages.create(model=MODEL, max_tokens=64, messages=[
            {"role": "user", "content": HEALTHY}, {"role": "assistant", "content": assistant}, result])
    hashes = [attrs(s)["agent_trace.context.hash"] for s in traced.named("agent_step")]
    assert len(hashes) == 2 and hashes[0] == hashes[1]
    assert not any(secret in str(v) for s in traced.spans for v in attrs(s).values())


def test_a_streamed_run_is_recorded_like_a_whole_one(instrument, claude):
    def recorded(traced):
        steps = traced.named("agent_step")
        return ([attrs(s)["agent_trace.context.hash"] for s in steps],
                [attrs(s).get("agent_trace.step.tool_calls") for s in steps],
                [attrs(c)["gen_ai.usage.output_tokens"] for c in traced.named("chat")])

    traced = instrument()
    anthropic_agent.handle_ticket(claude, HEALTHY)
    whole = recorded(traced)
    traced = instrument()
    assert anthropic_agent.handle_ticket(claude, HEALTHY, stream=True).startswith("Your refund")
    assert recorded(traced) == whole
    traced = instrument()
    events = claude.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": HEALTHY}],
                                    tools=anthropic_agent.TOOLS, stream=True)
    assert [e.type for e in events][-1] == "message_stop"
    [step] = traced.named("agent_step")
    assert attrs(step)["agent_trace.step.tool_calls"] == ("lookup_order",)
    [tool_call] = json.loads(attrs(traced.named("chat")[0])["gen_ai.output.messages"])[0]["parts"]
    assert tool_call["arguments"] == {"order_id": "A1001"}


def test_streams_broken_mid_way_and_abandoned(instrument):
    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    text = "A long answer that arrives in several pieces over the stream."
    scripts = {"broken raw": [{"content": text, "break_after": 3}], "broken helper": [{"content": text, "break_after": 3}],
               "left raw": [{"content": text}], "left helper": [{"content": text}]}
    with ScriptedOpenAIServer(scripts) as server:
        traced = instrument()
        client = _server_client(server)
        ask = {"model": MODEL, "max_tokens": 64}
        with pytest.raises(Exception):  # httpx: the chunked body ended early
            for _ in client.messages.create(messages=[{"role": "user", "content": "broken raw"}], stream=True, **ask):
                pass
        with pytest.raises(Exception):
            with client.messages.stream(messages=[{"role": "user", "content": "broken helper"}], **ask) as stream:
                stream.get_final_message()
        left = client.messages.create(messages=[{"role": "user", "content": "left raw"}], stream=True, **ask)
        next(iter(left))
        del left
        gc.collect()
        with client.messages.stream(messages=[{"role": "user", "content": "left helper"}], **ask) as stream:
            next(iter(stream))
        chats = traced.named("chat")
    assert [c.status.status_code for c in chats] == [StatusCode.ERROR, StatusCode.ERROR, StatusCode.UNSET,
                                                     StatusCode.UNSET]
    assert all(c.end_time is not None for c in chats)
    assert attrs(chats[3])["gen_ai.response.id"] == "msg_scripted-0"  # from the SDK's snapshot so far


def test_async_create_and_stream(instrument, demo_server):
    traced = instrument()
    client = _server_client(demo_server, anthropic.AsyncAnthropic)
    assert asyncio.run(anthropic_agent.ahandle_ticket(client, HEALTHY)).startswith("Your refund")
    assert [s.name for s in traced.named("execute_tool")] == ["execute_tool lookup_order", "execute_tool calculate_refund"]

    async def streamed():
        client = _server_client(demo_server, anthropic.AsyncAnthropic)  # a client per event loop
        async with client.messages.stream(model=MODEL, max_tokens=64, tools=anthropic_agent.TOOLS,
                                          messages=[{"role": "user", "content": HEALTHY}]) as stream:
            return await stream.get_final_message()

    assert asyncio.run(streamed()).stop_reason == "tool_use"
    assert attrs(traced.named("agent_step")[-1])["agent_trace.step.tool_calls"] == ("lookup_order",)


def test_http_500_fails_the_chat_and_reaches_the_caller(instrument):
    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    with ScriptedOpenAIServer({"*": [{"status": 500, "error": "overloaded"}]}) as server:
        traced = instrument()
        with pytest.raises(anthropic.InternalServerError):
            _server_client(server).messages.create(model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    [chat] = traced.named("chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["error.type"] == "InternalServerError"


def test_the_sdk_spans_nest_under_ours_and_are_counted_once(tmp_path):
    (tmp_path / "sdk").mkdir()
    with_sdk, report = instrumented_run(tmp_path / "sdk", "anthropic_agent")
    spans = spans_of(with_sdk)
    by_id = {s["spanId"]: s for s in spans}
    sdk = [s for s in spans if s["scope"] == "com.anthropic.sdk.python"]
    ours = [s for s in spans if s["name"] == f"chat {MODEL}"]
    assert len(sdk) == len(ours) == 15
    assert all(by_id[s["parentSpanId"]]["name"] == f"chat {MODEL}" for s in sdk)
    assert [r["status"] for r in report["runs"]] == ["ok", "failed", "ok", "failed"]
    assert (report["runs"][1]["origin"]["tool"], report["runs"][1]["origin"]["error_type"]) == (
        "lookup_order", "tool_empty_result")
    # the same run without the SDK's spans: the same model calls and tokens
    (tmp_path / "off").mkdir()
    _, without = instrumented_run(tmp_path / "off", "anthropic_agent", ANTHROPIC_OPEN_TELEMETRY="false")
    assert without["summary"]["metrics"]["tokens_per_run"] == report["summary"]["metrics"]["tokens_per_run"]
    assert [r["steps"] for r in without["runs"]] == [r["steps"] for r in report["runs"]]


def test_sdk_spans_alone_are_analysed_as_foreign_chats(tmp_path):
    """Our processor redacts the SDK's spans but stamps nothing of ours on them; the analyzer reads
    them as another instrumentation's (by scope), also in a file written by an older version that
    did stamp `agent_trace.redaction.count` on them."""
    traces, report = instrumented_run(tmp_path, "anthropic_agent", OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="agent_trace")
    spans = spans_of(traces)
    assert spans and all(s["scope"] == "com.anthropic.sdk.python" for s in spans)
    assert not any(k.startswith("agent_trace.") for s in spans for k in s["attrs"])
    assert "127.0.0.1" not in traces.read_text()  # still redacted (server.address: an IP)
    assert report["summary"]["runs"] == len(spans) == 15  # one call per trace: nothing ties them into runs
    # the same file as an older version wrote it: the processor's stamp on every foreign span
    stamp = {"key": "agent_trace.redaction.count", "value": {"intValue": "1"}}
    old = tmp_path / "old.jsonl"
    with old.open("w") as out:
        for line in traces.read_text().splitlines():
            record = json.loads(line)
            for resource in record["resourceSpans"]:
                for scope in resource["scopeSpans"]:
                    for span in scope["spans"]:
                        span.setdefault("attributes", []).append(stamp)
            out.write(json.dumps(record) + "\n")
    again = subprocess.run([str(BIN / "otel-agent-trace"), "analyze", "--format", "json", str(old)],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["summary"]["runs"] == 15


def test_with_raw_response_plain_and_streamed(instrument, claude):
    traced = instrument()
    ask = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": HEALTHY}],
           "tools": anthropic_agent.TOOLS}
    assert claude.messages.with_raw_response.create(**ask).parse().content[0].name == "lookup_order"
    events = claude.messages.with_raw_response.create(stream=True, **ask).parse()
    assert [e.type for e in events][-1] == "message_stop"
    steps = traced.named("agent_step")
    assert [attrs(s)["agent_trace.step.tool_calls"] for s in steps] == [("lookup_order",)] * 2
    assert len(traced.named("chat")) == 2


def test_a_timeout_fails_the_chat(instrument):
    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    with ScriptedOpenAIServer({"*": [{"content": "late", "delay": 1.0}]}) as server:
        traced = instrument()
        client = anthropic.Anthropic(base_url=server.base_url.removesuffix("/v1"), api_key="test", max_retries=0,
                                     timeout=0.2)
        with pytest.raises(anthropic.APITimeoutError):
            client.messages.create(model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    [chat] = traced.named("chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["error.type"] == "APITimeoutError"


def test_beta_messages_create_and_stream_are_recorded_alike(instrument, claude):
    from types import SimpleNamespace

    beta = SimpleNamespace(messages=claude.beta.messages)  # the same agent, through `client.beta.messages`
    for stream in (False, True):
        traced = instrument()
        assert anthropic_agent.handle_ticket(beta, HEALTHY, stream=stream).startswith("Your refund for order A1001")
        assert_refund_tree(traced, f"chat {MODEL}")
        assert [attrs(t)["gen_ai.tool.call.id"] for t in traced.named("execute_tool")] == ["toolu_0_0", "toolu_1_0"]


def test_parse_and_beta_parse_record_the_structured_answer(instrument):
    from pydantic import BaseModel

    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    class Refund(BaseModel):
        order_id: str
        amount: float

    answer = '{"order_id": "A1001", "amount": 25.0}'
    with ScriptedOpenAIServer({"*": [{"content": answer}]}) as server:
        traced = instrument()
        client = _server_client(server)
        ask = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": HEALTHY}],
               "output_format": Refund}
        parsed = [client.messages.parse(**ask), client.beta.messages.parse(**ask)]
    assert [m.parsed_output.amount for m in parsed] == [25.0, 25.0]
    chats = traced.named("chat")
    assert len(chats) == 2 and len(traced.named("agent_step")) == 2  # one chat span per call
    for chat in chats:
        [message] = json.loads(attrs(chat)["gen_ai.output.messages"])
        assert json.loads(message["parts"][0]["content"]) == {"order_id": "A1001", "amount": 25.0}
        assert attrs(chat)["gen_ai.response.finish_reasons"] == ("end_turn",)
