"""Issue 16 §2, through the real openai client, our exporter and the CLI: error payloads inside
successful results (a documented, configurable rule set), and made-up argument values."""

from __future__ import annotations

import json

import pytest
from scenario_agent import analyze_json, call, record_run

import otel_agent_trace
from otel_agent_trace.detectors import ERROR_PAYLOAD_RULES_ENV, classify_result
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer


@pytest.fixture(scope="module")
def server():
    with ScriptedOpenAIServer({}) as s:
        yield s


def tool_errors(run):
    return [(e["span_name"], e["error_type"]) for e in run["errors"]]


@pytest.mark.parametrize("payload", [{"status": 503, "message": "service unavailable"}, {"status": "error"},
                                     {"error": {"code": "E42"}}, {"ok": False}, {"status_code": "404"},
                                     {"data": None, "errors": [{"message": "denied"}]}])
def test_error_payloads_inside_successful_results_are_failed_results(server, tmp_path, payload):
    [run] = analyze_json(record_run(server, tmp_path / "t.jsonl", "ship order A1001 please", [
        call("ship_order", order_id="A1001"), {"content": "Order A1001 could not be shipped."}],
        {"ship_order": lambda order_id: payload}))["runs"]
    assert tool_errors(run) == [("execute_tool ship_order", "tool_error_result")]


def test_healthy_payloads_stay_ok(server, tmp_path):
    [run] = analyze_json(record_run(server, tmp_path / "t.jsonl", "ship order A1001 now", [
        call("ship_order", order_id="A1001"), {"content": "Order A1001 is shipped."}],
        {"ship_order": lambda order_id: {"status": 200, "code": 404, "state": "shipped"}}))["runs"]
    assert run["status"] == "ok" and run["errors"] == []


def test_the_rule_set_is_configurable(server, tmp_path, monkeypatch):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"field": "result", "test": "in", "value": ["denied"]},
                                 {"field": "ok", "enabled": False}]))
    monkeypatch.setenv(ERROR_PAYLOAD_RULES_ENV, str(rules))  # read online and offline alike
    assert classify_result({"result": "denied"}).value == "error_result"
    assert classify_result({"ok": False}).value == "ok"  # that default rule is off
    [run] = analyze_json(record_run(server, tmp_path / "t.jsonl", "ship order A1001 today", [
        call("ship_order", order_id="A1001"), {"content": "Order A1001 was not shipped."}],
        {"ship_order": lambda order_id: {"result": "denied"}}))["runs"]
    assert tool_errors(run) == [("execute_tool ship_order", "tool_error_result")]


@pytest.mark.parametrize("result, outcome", [
    ({"type": "text", "text": '{"success": false, "message": "nothing to refund"}'}, "error_result"),
    ('{"type": "text", "text": "[]"}', "empty_result"),  # as a framework passes an MCP result on, as JSON
    ([{"type": "text", "text": "Error: order service down"}], "error_result"),
    ([{"type": "text", "text": "Order A1001"}, {"type": "text", "text": "shipped"}], "ok"),
    ([{"type": "text", "text": "[]"}, {"type": "image", "data": "..."}], "ok"),  # not text blocks only
    ({"type": "text", "text": "[]", "source": "cache"}, "ok"),  # a record with a text field, not a block
])
def test_text_content_blocks_are_classified_by_their_text(result, outcome):
    """An MCP result's text blocks (as the OpenAI Agents SDK hands them to the model) say what the tool returned."""
    assert classify_result(result).value == outcome


def test_a_made_up_argument_value_is_a_model_decision(server, tmp_path):
    """The refund fails in the tool, but the order id was never seen: the model made it up."""
    [run] = analyze_json(record_run(server, tmp_path / "t.jsonl", "Please refund my last order", [
        call("list_orders"), call("refund", order_id="ORD-7731"), {"content": "The refund failed."}],
        {"list_orders": lambda: {"orders": ["ORD-1001", "ORD-1002"]},
         "refund": lambda order_id: {"error": f"order {order_id} not found"}}))["runs"]
    refund = next(e for e in run["errors"] if e["span_name"] == "execute_tool refund")
    assert refund["error_type"] == "tool_error_result"
    assert run["origin"]["span_id"] == refund["span_id"]
    assert run["bug_class"] == "model_decision"
    assert any("value ORD-7731 was never seen" in line for line in run["evidence"])


def _refuse_empty(tool_name, result):
    """The host's own check of a tool result before the model sees it (a tool output guardrail)."""
    if result == []:
        raise LookupError(f"{tool_name} found nothing")


def test_a_run_stopped_on_a_tools_result_has_that_tool_as_origin(server, tmp_path):
    """The host raises on an empty lookup before any model call reads it: no later step read the
    result, yet the run ended on it, so the recorded lookup is the origin, one hop from the run's
    exception."""
    lookup = otel_agent_trace.tool(name="lookup_order")(lambda order_id: [])
    [run] = analyze_json(record_run(server, tmp_path / "t.jsonl", "Where is my order A1O?", [
        call("lookup_order", order_id="A1O"), {"content": "I could not find it."}],
        {"lookup_order": lookup}, check_result=_refuse_empty))["runs"]
    assert run["status"] == "failed" and "LookupError" in run["critical"]["description"]
    assert (run["origin"]["tool"], run["origin"]["error_type"], run["bug_class"]) == (
        "lookup_order", "tool_empty_result", "tool")
    assert [(h["phase"], h["span_name"]) for h in run["chain"]] == [
        ("origin", "execute_tool lookup_order"), ("critical", "invoke_agent agent")]


def test_a_run_stopped_before_its_tool_results_were_recorded_says_so(server, tmp_path):
    """The same with undecorated tools: a plain loop's tool result reaches the trace only with the
    next model call, and none came. The report does not pretend step 0 answered (no
    `unsupported_answer`, no model_decision): it names the tools the run stopped in."""
    [run] = analyze_json(record_run(server, tmp_path / "t.jsonl", "Where is my order A1O?", [
        call("lookup_order", order_id="A1O"), {"content": "I could not find it."}],
        {"lookup_order": lambda order_id: []}, check_result=_refuse_empty))["runs"]
    assert run["status"] == "failed" and run["origin"] is None and run["errors"] == []
    assert run["bug_class"] is None, run
    assert any("stopped after step 0 requested lookup_order, before any model call read the results" in line
               for line in run["evidence"]), run["evidence"]


def test_an_argument_value_from_a_tool_result_is_the_tools_failure(server, tmp_path):
    [run] = analyze_json(record_run(server, tmp_path / "t.jsonl", "Please refund my latest order", [
        call("list_orders"), call("refund", order_id="ORD-1002"), {"content": "The refund failed."}],
        {"list_orders": lambda: {"orders": ["ORD-1001", "ORD-1002"]},
         "refund": lambda order_id: {"error": "refund service down"}}))["runs"]
    assert run["bug_class"] == "tool"
    assert not any("never seen" in line for line in run["evidence"])


def test_a_degenerate_value_carried_to_a_failing_call_is_the_origin(server, tmp_path):
    """The quote said 0; the charge failed on it: the origin is the quote, the crash site the charge."""
    [run] = analyze_json(record_run(server, tmp_path / "t.jsonl", "Please pay order A1001", [
        call("get_quote", order_id="A1001"), call("charge", order_id="A1001", amount=0),
        {"content": "The payment failed."}],
        {"get_quote": lambda order_id: {"order_id": order_id, "amount": 0},
         "charge": lambda order_id, amount: {"error": "amount must be positive"}}))["runs"]
    by_name = {e["span_name"]: e for e in run["errors"]}
    quote, charge = by_name["execute_tool get_quote"], by_name["execute_tool charge"]
    assert quote["error_type"] == "degenerate_value" and "amount=0" in quote["reason"]
    assert charge["error_type"] == "tool_error_result"
    assert run["origin"]["span_id"] == quote["span_id"]
    assert run["chain"][0]["span_id"] == quote["span_id"]
    assert any(h["span_id"] == charge["span_id"] for h in run["chain"])
