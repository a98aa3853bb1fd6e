"""Every way the openai client makes a Chat Completions call is recorded like `create`:
`with_raw_response` (langchain-openai's path), `parse`, raw streams; and a fault in the handler
leaves each of them exactly as it was."""

from __future__ import annotations

import logging

import openai
import pytest
import support_agent
from span_helpers import attrs

from otel_agent_trace.recorder import handler as recorder_handler

HEALTHY = support_agent.TICKETS[0]
MESSAGES = [{"role": "system", "content": support_agent.SYSTEM}, {"role": "user", "content": HEALTHY}]


def _calls(client, how):
    completions = client.chat.completions
    kwargs = {"model": "gpt-4o-mini", "messages": MESSAGES, "tools": support_agent.TOOL_SCHEMAS}
    if how == "create":
        return completions.create(**kwargs).choices[0].message.tool_calls
    if how == "raw":
        return completions.with_raw_response.create(**kwargs).parse().choices[0].message.tool_calls
    if how == "parse":  # parse wants strict function tools
        strict = [{"type": "function", "function": {**t["function"], "strict": True, "parameters": {
            **t["function"]["parameters"], "additionalProperties": False}}} for t in support_agent.TOOL_SCHEMAS[:1]]
        return completions.parse(**{**kwargs, "tools": strict}).choices[0].message.tool_calls
    if how == "raw-stream":
        stream = completions.with_raw_response.create(stream=True, **kwargs).parse()
        names = [tc.function.name for chunk in stream for choice in chunk.choices
                 for tc in choice.delta.tool_calls or () if tc.function.name]
        return names
    raise ValueError(how)


def _names(calls):
    return [c if isinstance(c, str) else c.function.name for c in calls]


@pytest.mark.parametrize("how", ["create", "raw", "parse", "raw-stream"])
def test_each_path_records_the_decision(instrument, client, how):
    traced = instrument()
    assert _names(_calls(client, how)) == ["lookup_order"]
    [step] = traced.named("agent_step")
    assert attrs(step)["agent_trace.step.kind"] == "tool_call"
    assert attrs(step)["agent_trace.step.tool_calls"] == ("lookup_order",)
    [chat] = traced.named("chat")
    assert chat.parent.span_id == step.context.span_id


@pytest.mark.parametrize("how", ["create", "raw", "parse", "raw-stream"])
def test_a_fault_in_the_handler_leaves_each_path_unchanged(instrument, client, demo_server, caplog, monkeypatch, how):
    expected = _names(_calls(client, how))
    traced = instrument()
    # a new client: `with_raw_response` binds `create` when first read, so the one read above
    # (uninstrumented) would bypass the patch altogether
    client = openai.OpenAI(base_url=demo_server.base_url, api_key="test", max_retries=0)

    def boom(*args, **kwargs):
        raise RuntimeError("injected failure inside otel-agent-trace")

    monkeypatch.setattr(recorder_handler.Handler, "_start_chat", boom)
    caplog.set_level(logging.WARNING, logger="otel_agent_trace")
    assert _names(_calls(client, how)) == expected
    assert _names(_calls(client, how)) == expected
    ours = [r for r in caplog.records if r.name == "otel_agent_trace" and "instrumentation error" in r.getMessage()]
    assert len(ours) == 1
    assert traced.named("chat") == []
