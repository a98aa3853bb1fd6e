"""Never break the host: an error forced inside our code leaves the agent's result unchanged
and is logged once, however often it happens."""

from __future__ import annotations

import logging

import pytest
import support_agent

import otel_agent_trace
from otel_agent_trace.providers import openai as openai_provider
from otel_agent_trace.recorder import chat as recorder_chat
from otel_agent_trace.recorder import handler as recorder_handler

HEALTHY, MALFORMED, RECOVERED, LOOP = support_agent.TICKETS


def _boom(*args, **kwargs):
    raise RuntimeError("injected failure inside otel-agent-trace")


def _our_warnings(caplog):
    return [r for r in caplog.records if r.name == "otel_agent_trace" and "instrumentation error" in r.getMessage()]


@pytest.fixture
def baseline(client):
    """The replies of the demo's tickets with no instrumentation at all."""
    replies = [support_agent.handle_ticket(client, t) for t in (HEALTHY, RECOVERED)]
    support_agent._carrier_calls.clear()
    return replies


@pytest.mark.parametrize("target,attribute", [
    (recorder_chat.hashing, "context_hash"),  # while opening a step
    (openai_provider, "parse_response"),  # while reading the response
    (recorder_chat.guards, "check_tool_calls"),  # after the response, inside the run's lock
])
def test_error_in_chat_wrapper_leaves_result_unchanged(instrument, client, baseline, caplog, monkeypatch, target, attribute):
    instrument(entrypoints="support_agent:handle_ticket")
    monkeypatch.setattr(target, attribute, _boom)
    caplog.set_level(logging.WARNING, logger="otel_agent_trace")
    replies = [support_agent.handle_ticket(client, t) for t in (HEALTHY, RECOVERED)]
    assert replies == baseline
    warnings = _our_warnings(caplog)
    assert len(warnings) == 1, [w.getMessage() for w in warnings]
    assert "injected failure" in str(warnings[0].exc_info[1])


def test_error_in_stream_accumulator_leaves_stream_unchanged(instrument, client, caplog, monkeypatch):
    messages = [{"role": "user", "content": HEALTHY}]

    def collect():
        chunks = client.chat.completions.create(model="m", messages=messages, stream=True)
        return [c.model_dump() for c in chunks]

    expected = collect()
    traced = instrument()
    monkeypatch.setattr(openai_provider.StreamAccumulator, "add", _boom)
    caplog.set_level(logging.WARNING, logger="otel_agent_trace")
    got = collect()
    assert [c["choices"] for c in got] == [c["choices"] for c in expected]
    assert len(_our_warnings(caplog)) == 1
    assert len(traced.named("chat")) == 1  # the span still ended, once


def test_error_in_tool_wrapper_leaves_tool_result_unchanged(instrument, client, caplog, monkeypatch):
    instrument(entrypoints="support_agent:handle_ticket")
    monkeypatch.setattr(recorder_handler, "start_tool", _boom)
    lookup = otel_agent_trace.tool(support_agent.lookup_order)
    caplog.set_level(logging.WARNING, logger="otel_agent_trace")
    with otel_agent_trace.agent_run("direct"):
        results = [lookup("A1001"), lookup(order_id="A10O2"), lookup("A1001")]
    assert results == [[support_agent.ORDERS["A1001"]], [], [support_agent.ORDERS["A1001"]]]
    assert len(_our_warnings(caplog)) == 1


def test_tool_exceptions_pass_through_unchanged(instrument):
    instrument()

    @otel_agent_trace.tool
    def broken():
        raise KeyError("the host's own error")

    with otel_agent_trace.agent_run("direct"):
        with pytest.raises(KeyError, match="the host's own error"):
            broken()
