"""The demo agent through the real openai client: span tree, attributes, inferred tools, links."""

from __future__ import annotations

import json

import pytest
import support_agent
from span_helpers import attrs, hexid
from opentelemetry.trace import SpanKind, StatusCode

from otel_agent_trace import hashing
from otel_agent_trace.messages import Message, context_hashes
from otel_agent_trace.providers.openai import to_message

HEALTHY, MALFORMED, RECOVERED, LOOP = support_agent.TICKETS


def run_ticket(client, ticket):
    try:
        return support_agent.handle_ticket(client, ticket)
    except (support_agent.MissingRefundAmount, support_agent.StepLimitExceeded) as exc:
        return exc


def test_span_tree_of_a_healthy_run(instrument, client):
    traced = instrument(entrypoints="support_agent:handle_ticket")
    reply = run_ticket(client, HEALTHY)
    assert reply.startswith("Your refund for order A1001 is $25.00")

    [run] = traced.runs()
    assert run.name == "invoke_agent handle_ticket"
    assert attrs(run)["gen_ai.operation.name"] == "invoke_agent"
    assert attrs(run)["gen_ai.agent.name"] == "handle_ticket"
    assert run.parent is None and run.status.status_code is StatusCode.UNSET

    steps = traced.children(run)
    assert [s.name for s in steps] == ["agent_step 0", "agent_step 1", "agent_step 2"]
    assert [attrs(s)["agent_trace.step.index"] for s in steps] == [0, 1, 2]
    assert [attrs(s)["agent_trace.step.kind"] for s in steps] == ["tool_call", "tool_call", "final"]
    assert [[c.name for c in traced.children(s)] for s in steps] == [
        ["chat gpt-4o-mini", "execute_tool lookup_order"],
        ["chat gpt-4o-mini", "execute_tool calculate_refund"],
        ["chat gpt-4o-mini"],
    ]
    chat = traced.children(steps[0])[0]
    a = attrs(chat)
    assert chat.kind is SpanKind.CLIENT
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.provider.name"] == "openai"
    assert a["gen_ai.request.model"] == "gpt-4o-mini"
    assert a["gen_ai.response.id"] == "chatcmpl-scripted-0"
    assert a["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
    # every step span closes when the next one starts: they do not overlap
    for earlier, later in zip(steps, steps[1:]):
        assert earlier.end_time <= later.start_time


def test_inferred_tool_spans_carry_call_arguments_and_results(instrument, client):
    traced = instrument(entrypoints="support_agent:handle_ticket")
    run_ticket(client, HEALTHY)
    lookup, calc = traced.named("execute_tool")
    a = attrs(lookup)
    assert a["gen_ai.operation.name"] == "execute_tool"
    assert a["gen_ai.tool.name"] == "lookup_order"
    assert a["gen_ai.tool.call.id"] == "call_0_0"
    assert json.loads(a["gen_ai.tool.call.arguments"]) == {"order_id": "A1001"}
    assert json.loads(a["gen_ai.tool.call.result"])[0]["order_id"] == "A1001"
    assert a["agent_trace.tool.outcome"] == "ok"
    assert a["agent_trace.tool.source"] == "inferred"
    assert attrs(calc)["gen_ai.tool.call.id"] == "call_1_0"
    assert json.loads(attrs(calc)["gen_ai.tool.call.result"]) == {"order_id": "A1001", "amount": 25.0, "currency": "USD"}
    # the tool span lies between the decision that asked for it and the next request
    chat0 = traced.named("chat")[0]
    step1 = traced.named("agent_step 1")[0]
    assert chat0.end_time <= lookup.start_time <= lookup.end_time <= step1.start_time


def test_links_decided_by_and_consumes_with_their_mirror(instrument, client):
    traced = instrument(entrypoints="support_agent:handle_ticket")
    run_ticket(client, HEALTHY)
    step0, step1, step2 = traced.named("agent_step")
    lookup, calc = traced.named("execute_tool")

    def edges(span):
        links = [(format(l.context.span_id, "016x"), l.attributes["agent_trace.link.relation"]) for l in span.links]
        mirror = list(zip(attrs(span).get("agent_trace.depends_on", ()),
                          attrs(span).get("agent_trace.depends_on.relations", ())))
        assert links == mirror
        return links

    assert edges(lookup) == [(hexid(step0), "decided_by")]
    # calculate_refund's arguments carry values (A1001, MUG-1) that first appeared in lookup's result
    assert edges(calc) == [(hexid(step1), "decided_by"), (hexid(lookup), "data")]
    assert edges(step0) == []
    assert edges(step1) == [(hexid(lookup), "consumes")]
    assert edges(step2) == [(hexid(calc), "consumes")]


def test_context_and_message_hashes(instrument, client):
    traced = instrument(entrypoints="support_agent:handle_ticket")
    run_ticket(client, HEALTHY)
    steps = traced.named("agent_step")
    # each step writes the hashes after the prefix it shares with the previous one (issue 31)
    assert [len(attrs(s)["agent_trace.context.message_hashes"]) for s in steps] == [2, 2, 2]
    assert [attrs(s).get("agent_trace.context.shared_prefix") for s in steps] == [None, 2, 4]
    hashes: list[list[str]] = []
    for s in steps:
        hashes.append(context_hashes(hashes[-1] if hashes else None, attrs(s)))
    assert [len(h) for h in hashes] == [2, 4, 6]
    assert [attrs(s)["agent_trace.context.messages"] for s in steps] == [2, 4, 6]
    # history only grows here: each step's messages start with the previous step's
    assert hashes[1][:2] == hashes[0] and hashes[2][:4] == hashes[1]
    system = Message(role="system", content=support_agent.SYSTEM)
    assert hashes[0][0] == hashing.message_hash(system)[:16]
    context = [attrs(s)["agent_trace.context.hash"] for s in steps]
    assert all(len(h) == 64 for h in context) and len(set(context)) == 3

    # the same context gives the same hash in a second run
    run_ticket(client, HEALTHY)
    again = [attrs(s)["agent_trace.context.hash"] for s in traced.named("agent_step")][3:]
    assert again == context


def test_equivalent_encodings_hash_alike():
    as_dict = {"role": "user", "content": "hi there"}
    as_parts = {"role": "user", "content": [{"type": "text", "text": "hi there"}]}
    assert hashing.message_hash(to_message(as_dict)) == hashing.message_hash(to_message(as_parts))
    a = {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"b": 1, "a": 2}'}}]}
    b = {"role": "assistant",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":2,"b":1}'}}]}
    assert hashing.message_hash(to_message(a)) == hashing.message_hash(to_message(b))


def test_failing_run_phases_and_error_types(instrument, client):
    traced = instrument(entrypoints="support_agent:handle_ticket")
    assert isinstance(run_ticket(client, MALFORMED), support_agent.MissingRefundAmount)
    [run] = traced.runs()
    assert run.status.status_code is StatusCode.ERROR
    assert attrs(run)["agent_trace.lifecycle.phase"] == "critical"
    assert attrs(run)["agent_trace.error.type"] == "run_exception"
    assert any(e.name == "exception" for e in run.events)
    lookup, calc = traced.named("execute_tool")
    assert attrs(lookup)["agent_trace.tool.outcome"] == "empty_result"
    assert attrs(lookup)["agent_trace.lifecycle.phase"] == "origin"
    assert attrs(lookup)["agent_trace.error.type"] == "tool_empty_result"
    assert attrs(calc)["agent_trace.tool.outcome"] == "error_result"
    assert attrs(calc)["agent_trace.error.type"] == "tool_error_result"
    step0, step1, step2 = traced.named("agent_step")
    assert "agent_trace.lifecycle.phase" not in attrs(step0)
    assert attrs(step1)["agent_trace.lifecycle.phase"] == "propagate"
    assert attrs(step2)["agent_trace.lifecycle.phase"] == "propagate"


def test_retry_that_succeeds_is_recovered(instrument, client):
    traced = instrument(entrypoints="support_agent:handle_ticket")
    assert run_ticket(client, RECOVERED).startswith("Order A1003 has shipped")
    [run] = traced.runs()
    assert run.status.status_code is StatusCode.UNSET
    first, second = traced.named("execute_tool")
    assert attrs(first)["agent_trace.tool.outcome"] == "error_result"
    assert attrs(first)["gen_ai.tool.call.result"].startswith("Error: TimeoutError")
    assert attrs(second)["agent_trace.lifecycle.phase"] == "recovered"
    assert ("retry_of", hexid(first)) in [(l.attributes["agent_trace.link.relation"], format(l.context.span_id, "016x"))
                                          for l in second.links]


def test_loop_of_identical_calls_is_flagged_at_the_threshold(instrument, client):
    traced = instrument(entrypoints="support_agent:handle_ticket", loop_threshold=3)
    assert isinstance(run_ticket(client, LOOP), support_agent.StepLimitExceeded)
    steps = traced.named("agent_step")
    assert len(steps) == support_agent.MAX_TURNS
    flagged = [attrs(s)["agent_trace.step.index"] for s in steps if attrs(s).get("agent_trace.error.type") == "loop_detected"]
    assert flagged == [2]
    assert [e.name for e in steps[2].events] == ["loop_detected"]
    assert steps[2].events[0].attributes["agent_trace.loop.count"] == 3


@pytest.mark.parametrize("capture", [True, False])
def test_content_capture_switch(instrument, client, capture):
    traced = instrument(entrypoints="support_agent:handle_ticket", capture_content=capture)
    run_ticket(client, HEALTHY)
    tool = traced.named("execute_tool")[0]
    step = traced.named("agent_step")[0]
    assert ("gen_ai.tool.call.result" in attrs(tool)) is capture
    assert ("agent_trace.context.new_messages" in attrs(step)) is capture
    assert attrs(tool)["agent_trace.tool.outcome"] == "ok"  # outcomes are recorded either way


def test_a_message_rewritten_in_place_gets_a_new_hash(instrument, client):
    """Identity caching must not hide state overwritten in place (content replaced)."""
    traced = instrument()
    messages = [{"role": "system", "content": support_agent.SYSTEM}, {"role": "user", "content": HEALTHY}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    call = first.choices[0].message.tool_calls[0]
    messages += [first.choices[0].message, {"role": "tool", "tool_call_id": call.id, "content": "[]"}]
    client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    messages[1]["content"] = HEALTHY.replace("A1001", "A1002")  # the agent overwrites its state
    client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    steps = traced.named("agent_step")
    contexts: list[list[str]] = []  # each step's whole context (a shared prefix expanded, issue 31)
    for s in steps:
        contexts.append(context_hashes(contexts[-1] if contexts else None, attrs(s)))
    before, after = contexts[1:3]
    assert attrs(steps[2]).get("agent_trace.context.shared_prefix") == 1  # the system message only
    assert before[0] == after[0] and before[2:] == after[2:4]
    assert before[1] != after[1]
    assert attrs(steps[2])["agent_trace.context.dropped_hashes"] == (before[1],)
