"""Replay for every other client recorded as decision steps: the OpenAI Responses API, anthropic
Messages, litellm, google-genai (its automatic function calling too). Each run is recorded
against the scripted server (whole, streamed, async), then replayed with the server stopped and
the client pointed at a closed port: the same tool calls, the same answer, the same contexts,
and a divergence named at its step and message.

Real parts throughout: the real client libraries and their own stream helpers
(`responses.stream`, `messages.stream`), the SDK writing our OTLP JSON Lines file, the analyzer's
readers loading it back.
"""

from __future__ import annotations

import asyncio
import json
import os
from types import SimpleNamespace
from typing import Any, Callable

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm is imported

import anthropic  # noqa: E402
import anthropic_agent  # noqa: E402
import genai_agent  # noqa: E402
import litellm  # noqa: E402
import litellm_agent  # noqa: E402
import openai  # noqa: E402
import responses_agent  # noqa: E402
import support_agent  # noqa: E402
from google import genai  # noqa: E402
from google.genai import types as genai_types  # noqa: E402
from replay_helpers import (  # noqa: E402
    Session, chat_async, chat_streamed, closed_port_url, diverges_at_the_changed_tool_result,
    falls_through_after_the_changed_tool_result, record, replayed_offline, tool_log,
)

import otel_agent_trace  # noqa: E402

TICKET = support_agent.TICKETS[0]  # refund A1001: lookup -> calculate -> answer


# --- the Responses API ---------------------------------------------------------------------------
def responses_plain(base_url: str) -> str:
    client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0)
    return responses_agent.handle_ticket(client, TICKET)


def responses_stream(base_url: str) -> str:  # responses.stream(): the SDK's ResponseStream over create(stream=True)
    client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0)
    return responses_agent.handle_ticket(client, TICKET, stream=True)


def responses_stream_whole(base_url: str) -> str:
    """Each turn re-sends the whole conversation: a live fallthrough needs no stored response."""
    client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0)
    return responses_agent.handle_ticket(client, TICKET, chained=False, stream=True)


def responses_async(base_url: str) -> str:
    client = openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    return asyncio.run(responses_agent.ahandle_ticket(client, TICKET))


def responses_async_events(base_url: str) -> str:
    """`create(stream=True)` read event by event, async, whole conversation re-sent each turn."""

    async def main() -> str:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
        items: list[Any] = [{"role": "user", "content": TICKET}]
        for _ in range(support_agent.MAX_TURNS):
            events = await client.responses.create(model=support_agent.MODEL, instructions=support_agent.SYSTEM,
                                                   input=items, tools=responses_agent.TOOLS, stream=True)
            text, calls = "", []
            async for event in events:
                if event.type == "response.output_text.delta":
                    text += event.delta
                elif event.type == "response.output_item.done" and event.item.type == "function_call":
                    calls.append(event.item)
            if not calls:
                return text
            for call in calls:
                items += [{"type": "function_call", "call_id": call.call_id, "name": call.name,
                           "arguments": call.arguments},
                          {"type": "function_call_output", "call_id": call.call_id,
                           "output": responses_agent.run_tool(call.name, json.loads(call.arguments))}]
        raise AssertionError("no answer")

    return asyncio.run(main())


# --- anthropic Messages --------------------------------------------------------------------------
def _claude(base_url: str, cls: Any = anthropic.Anthropic) -> Any:
    return cls(base_url=base_url.removesuffix("/v1"), api_key="test", max_retries=0)


def anthropic_plain(base_url: str) -> str:
    return anthropic_agent.handle_ticket(_claude(base_url), TICKET)


def anthropic_stream(base_url: str) -> str:  # messages.stream(): the SDK's MessageStreamManager
    return anthropic_agent.handle_ticket(_claude(base_url), TICKET, stream=True)


def anthropic_async(base_url: str) -> str:
    return asyncio.run(anthropic_agent.ahandle_ticket(_claude(base_url, anthropic.AsyncAnthropic), TICKET))


def anthropic_raw_events(base_url: str, raw: bool = False) -> str:
    """`create(stream=True)`: raw events, tool input as JSON deltas (`raw`: through `with_raw_response`)."""
    client = _claude(base_url)
    api = _raw(client.messages) if raw else client.messages
    messages: list[Any] = [{"role": "user", "content": TICKET}]
    for _ in range(support_agent.MAX_TURNS):
        blocks: dict[int, dict[str, Any]] = {}
        for event in api.create(model=anthropic_agent.MODEL, max_tokens=1024, system=support_agent.SYSTEM,
                                            messages=messages, tools=anthropic_agent.TOOLS, stream=True):
            if event.type == "content_block_start":
                blocks[event.index] = {**event.content_block.model_dump(), "partial": ""}
            elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                blocks[event.index]["text"] += event.delta.text
            elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                blocks[event.index]["partial"] += event.delta.partial_json
        content = [{"type": "text", "text": b["text"]} if b["type"] == "text" else
                   {"type": "tool_use", "id": b["id"], "name": b["name"], "input": json.loads(b["partial"] or "{}")}
                   for _, b in sorted(blocks.items())]
        calls = [b for b in content if b["type"] == "tool_use"]
        if not calls:
            return "".join(b["text"] for b in content)
        messages += [{"role": "assistant", "content": content},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": c["id"],
                                                   "content": anthropic_agent.run_tool(c["name"], c["input"])}
                                                  for c in calls]}]
    raise AssertionError("no answer")


# --- litellm -------------------------------------------------------------------------------------
def litellm_plain(base_url: str) -> str:
    return litellm_agent.handle_ticket(litellm_agent.litellm_client(base_url), TICKET)


def litellm_stream(base_url: str) -> str:
    return chat_streamed(lambda messages: litellm.completion(
        model=f"openai/{support_agent.MODEL}", api_base=base_url, api_key="test", messages=messages,
        tools=support_agent.TOOL_SCHEMAS, stream=True))


def litellm_async(base_url: str) -> str:
    return chat_async(lambda messages: litellm.acompletion(
        model=f"openai/{support_agent.MODEL}", api_base=base_url, api_key="test", messages=messages,
        tools=support_agent.TOOL_SCHEMAS))


# --- google-genai --------------------------------------------------------------------------------
def _gemini(base_url: str) -> Any:
    return genai.Client(api_key="test", http_options=genai_types.HttpOptions(base_url=base_url.removesuffix("/v1")))


def genai_plain(base_url: str) -> str:
    return genai_agent.handle_ticket(_gemini(base_url), TICKET)


def genai_stream(base_url: str) -> str:  # generate_content_stream: text in pieces, function calls whole
    return genai_agent.handle_ticket(_gemini(base_url), TICKET, stream=True)


def genai_async(base_url: str) -> str:
    return asyncio.run(genai_agent.ahandle_ticket(_gemini(base_url), TICKET))


def genai_async_stream(base_url: str) -> str:
    """`aio.models.generate_content_stream` read chunk by chunk."""

    async def main() -> str:
        client = _gemini(base_url)
        contents: list[Any] = [genai_types.Content(role="user", parts=[genai_types.Part(text=TICKET)])]
        for _ in range(support_agent.MAX_TURNS):
            parts = []
            async for chunk in await client.aio.models.generate_content_stream(
                    model=genai_agent.MODEL, contents=contents, config=genai_agent._config()):
                parts += [p for p in chunk.candidates[0].content.parts or () if p.function_call or p.text]
            content = genai_types.Content(role="model", parts=parts)
            if not any(p.function_call for p in parts):
                return "".join(p.text or "" for p in parts)
            contents += [content, genai_agent._answer(content)]
        raise AssertionError("no answer")

    return asyncio.run(main())


# --- with_raw_response / with_streaming_response: the SDKs' own HTTP response objects -------------
def _raw(resource: Any) -> SimpleNamespace:
    """`resource.create(...)` through `with_raw_response` (the SDK's `LegacyAPIResponse`), parsed."""
    return SimpleNamespace(create=lambda **kwargs: resource.with_raw_response.create(**kwargs).parse())


def _streaming(resource: Any) -> SimpleNamespace:
    """async `resource.create(...)` through `with_streaming_response` (the SDK's `AsyncAPIResponse`)."""

    async def create(**kwargs: Any) -> Any:
        async with resource.with_streaming_response.create(**kwargs) as response:
            return await response.parse()

    return SimpleNamespace(create=create)


def _openai(base_url: str, cls: Any = openai.OpenAI) -> Any:
    return cls(base_url=base_url, api_key="test", max_retries=0)


def chat_raw(base_url: str) -> str:
    completions = _raw(_openai(base_url).chat.completions)
    return support_agent.handle_ticket(SimpleNamespace(chat=SimpleNamespace(completions=completions)), TICKET)


def chat_raw_stream(base_url: str) -> str:  # parse() of a raw streamed call: the SDK's Stream over the SSE body
    completions = _raw(_openai(base_url).chat.completions)
    return chat_streamed(lambda messages: completions.create(
        model=support_agent.MODEL, messages=messages, tools=support_agent.TOOL_SCHEMAS, stream=True))


def chat_streaming_async(base_url: str) -> str:
    completions = _streaming(_openai(base_url, openai.AsyncOpenAI).chat.completions)
    return chat_async(lambda messages: completions.create(
        model=support_agent.MODEL, messages=messages, tools=support_agent.TOOL_SCHEMAS))


def responses_raw(base_url: str) -> str:
    return responses_agent.handle_ticket(SimpleNamespace(responses=_raw(_openai(base_url).responses)), TICKET)


def responses_streaming_async(base_url: str) -> str:
    responses = _streaming(_openai(base_url, openai.AsyncOpenAI).responses)
    return asyncio.run(responses_agent.ahandle_ticket(SimpleNamespace(responses=responses), TICKET))


def anthropic_raw(base_url: str) -> str:
    return anthropic_agent.handle_ticket(SimpleNamespace(messages=_raw(_claude(base_url).messages)), TICKET)


def anthropic_streaming_async(base_url: str) -> str:
    messages = _streaming(_claude(base_url, anthropic.AsyncAnthropic).messages)
    return asyncio.run(anthropic_agent.ahandle_ticket(SimpleNamespace(messages=messages), TICKET))


AGENTS: dict[str, Callable[[str], str]] = {
    "responses-plain": responses_plain, "responses-stream": responses_stream, "responses-async": responses_async,
    "responses-async-events": responses_async_events, "responses-stream-whole": responses_stream_whole,
    "anthropic-plain": anthropic_plain, "anthropic-stream": anthropic_stream, "anthropic-async": anthropic_async,
    "anthropic-raw-events": anthropic_raw_events,
    "litellm-plain": litellm_plain, "litellm-stream": litellm_stream, "litellm-async": litellm_async,
    "chat-raw": chat_raw, "chat-raw-stream": chat_raw_stream, "chat-streaming-async": chat_streaming_async,
    "responses-raw": responses_raw, "responses-streaming-async": responses_streaming_async,
    "anthropic-raw": anthropic_raw, "anthropic-raw-stream": lambda base_url: anthropic_raw_events(base_url, raw=True),
    "anthropic-streaming-async": anthropic_streaming_async,
    "genai-plain": genai_plain, "genai-stream": genai_stream, "genai-async": genai_async,
    "genai-async-stream": genai_async_stream,
}


@pytest.mark.parametrize("name", list(AGENTS))
def test_replay_with_the_server_gone_gives_the_same_run(tmp_path, monkeypatch, name):
    agent = AGENTS[name]
    calls = tool_log(monkeypatch)
    path, answer = record(tmp_path, agent)
    recorded_calls = list(calls)
    assert [tool for tool, _ in recorded_calls] == ["lookup_order", "calculate_refund"]
    assert "$25.00" in answer
    calls.clear()
    steps, chats = replayed_offline(path, agent, answer)
    assert calls == recorded_calls
    assert [s.attributes.get("agent_trace.step.kind") for s in steps] == ["tool_call", "tool_call", "final"]
    assert len(chats) == 3 and all(not s.status.status_code.value == 2 for s in chats)


@pytest.mark.parametrize("name", ["responses-plain", "anthropic-stream", "litellm-async", "genai-stream"])
def test_divergence_names_the_step_and_the_first_differing_message(tmp_path, monkeypatch, capsys, name):
    diverges_at_the_changed_tool_result(tmp_path, monkeypatch, capsys, AGENTS[name])


# (a chained Responses run would go on live with the recorded response ids, which a live provider
# must still hold; the restarted scripted server does not: the whole-conversation variant here)
@pytest.mark.parametrize("name", ["responses-stream-whole", "anthropic-plain", "litellm-plain", "genai-async"])
def test_fallthrough_goes_on_live_after_a_divergence(tmp_path, monkeypatch, name):
    falls_through_after_the_changed_tool_result(tmp_path, monkeypatch, AGENTS[name])


def _parse_responses(base_url: str, model: Any) -> Any:
    client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0)
    return client.responses.parse(model="gpt-4o-mini", input="refund as json", text_format=model).output_parsed


def _parse_anthropic(base_url: str, model: Any) -> Any:
    return _claude(base_url).messages.parse(model=anthropic_agent.MODEL, max_tokens=256, output_format=model,
                                            messages=[{"role": "user", "content": "refund as json"}]).parsed_output


def _parse_chat_raw(base_url: str, model: Any) -> Any:  # LangChain's structured output: with_raw_response.parse
    raw = _openai(base_url).chat.completions.with_raw_response.parse(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "refund as json"}], response_format=model)
    return raw.parse().choices[0].message.parsed


def _parse_responses_raw(base_url: str, model: Any) -> Any:
    raw = _openai(base_url).responses.with_raw_response.parse(model="gpt-4o-mini", input="refund as json",
                                                             text_format=model)
    return raw.parse().output_parsed


def _parse_genai(base_url: str, model: Any) -> Any:  # response_schema: the SDK fills `.parsed`
    config = genai_types.GenerateContentConfig(response_mime_type="application/json", response_schema=model)
    client = _gemini(base_url)  # kept: a collected Client closes its HTTP client
    return client.models.generate_content(model=genai_agent.MODEL, contents="refund as json", config=config).parsed


@pytest.mark.parametrize("ask", [_parse_responses, _parse_anthropic, _parse_chat_raw, _parse_responses_raw, _parse_genai],
                         ids=["responses", "anthropic", "chat-raw", "responses-raw", "genai"])
def test_parse_replays_the_sdks_parsed_objects(tmp_path, ask):
    """`responses.parse(text_format=...)`, `messages.parse(output_format=...)`, genai's
    `response_schema`: the SDKs' own parsers."""
    from pydantic import BaseModel

    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    class Refund(BaseModel):
        order_id: str
        amount: float

    path = tmp_path / "parsed.jsonl"
    with ScriptedOpenAIServer({"refund as json": [{"content": '{"order_id": "A1001", "amount": 25.0}'}]}) as server, \
            Session(path):
        live = ask(server.base_url, Refund)
    with Session(), otel_agent_trace.replay(str(path)) as replayer:
        replayed = ask(closed_port_url(), Refund)
    assert replayer.diverged is None
    assert replayed == live == Refund(order_id="A1001", amount=25.0)


def test_what_raw_replay_relies_on():
    """A raw call is told by the SDKs' raw-response header and answered at `send` of their HTTP
    client (replay/wire.py): this fails when an SDK renames the header or moves to another HTTP
    library, instead of raw calls silently going live."""
    import anthropic._constants
    import openai._constants

    from otel_agent_trace.providers._replayed import RAW_HEADER
    from otel_agent_trace.replay.wire import LIBRARIES

    assert openai._constants.RAW_RESPONSE_HEADER == anthropic._constants.RAW_RESPONSE_HEADER == RAW_HEADER
    for client in (_openai("http://127.0.0.1:9/v1"), _claude("http://127.0.0.1:9/v1"),
                   _openai("http://127.0.0.1:9/v1", openai.AsyncOpenAI), _claude("http://127.0.0.1:9", anthropic.AsyncAnthropic)):
        bases = {f"{c.__module__.split('.')[0]}.{c.__name__}" for c in type(client._client).__mro__}
        assert bases & {f"{lib}.{name}" for lib in LIBRARIES for name in ("Client", "AsyncClient")}, bases


def test_uninstrument_takes_the_send_wrapper_off_and_the_next_replay_puts_it_back(tmp_path, monkeypatch):
    """The `send` wrapper of a replayed raw call (replay/wire.py) leaves with the instrumentation:
    after `uninstrument` the HTTP clients' `send` is the library's own again."""
    import httpx2

    tool_log(monkeypatch)
    path, answer = record(tmp_path, chat_raw)
    for _ in range(2):  # installed by the replay, removed by uninstrument, installed again
        replayed_offline(path, chat_raw, answer)
        assert not hasattr(httpx2.Client.send, "__wrapped__")
        assert not hasattr(httpx2.AsyncClient.send, "__wrapped__")


# --- google-genai's automatic function calling: the SDK runs the functions itself ------------------
def _afc(ticket: str) -> Callable[[str], str]:
    return lambda base_url: genai_agent.handle_ticket_afc(_gemini(base_url), ticket)


def test_genai_automatic_function_calling_replays_with_the_functions_run_for_real(tmp_path, monkeypatch):
    """`chats.send_message` with Python functions as tools: the replayed responses carry the
    recorded function calls, the SDK runs the real functions again (the carrier's first call
    times out again, the SDK sends that error back as recorded), the same answer."""
    agent = _afc(support_agent.TICKETS[2])  # track_shipment A1003: a timeout, then shipped
    calls = tool_log(monkeypatch)
    path, answer = record(tmp_path, agent)
    recorded_calls = list(calls)
    assert recorded_calls == [("track_shipment", {"order_id": "A1003"})] * 2
    assert answer.startswith("Order A1003 has shipped")
    calls.clear()
    steps, _ = replayed_offline(path, agent, answer)
    assert calls == recorded_calls
    assert [s.attributes.get("agent_trace.step.tool_calls") for s in steps] == [("track_shipment",)] * 2 + [None]


def test_genai_automatic_function_calling_with_recorded_tools_runs_no_function(tmp_path, monkeypatch, capsys):
    """replay_tools=recorded: the functions the SDK calls are explicit tools, answered from the
    recording (the order service is emptied: only the recording can answer lookup_order).
    calculate_refund never runs, live or replayed: the SDK cannot convert its arguments
    (`list[dict[str, Any]]`) and sends the error back itself, so the recorder inferred that call
    from the conversation, and the replay says it cannot stub it (it is the same either way)."""
    agent = _afc(TICKET)
    calls = tool_log(monkeypatch)
    path, answer = record(tmp_path, agent)
    assert ("lookup_order", {"order_id": "A1001"}) in calls and "$25.00" in answer
    calls.clear()
    monkeypatch.setattr(support_agent, "ORDERS", {})
    _, chats = replayed_offline(path, agent, answer, tools="recorded")
    assert not [name for name, _ in calls if name == "lookup_order"]
    err = capsys.readouterr().err
    assert err.count("replay_tools=recorded cannot stub calculate_refund:") == 1


def test_genai_recorded_tool_exception_is_raised_again_as_recorded(tmp_path, monkeypatch):
    """replay_tools=recorded and a tool that raised in the recording (the carrier's timeout):
    the replay raises it again named and worded like the original, so the error the SDK sends back
    to the model is the recorded one and strict replay goes through (no function runs)."""
    agent = _afc(support_agent.TICKETS[2])  # track_shipment A1003: a timeout, then shipped
    calls = tool_log(monkeypatch)
    path, answer = record(tmp_path, agent)
    assert calls == [("track_shipment", {"order_id": "A1003"})] * 2
    calls.clear()
    steps, _ = replayed_offline(path, agent, answer, tools="recorded")
    assert calls == []  # both answered from the recording: the raise and the result
    assert [s.attributes.get("agent_trace.step.tool_calls") for s in steps] == [("track_shipment",)] * 2 + [None]
