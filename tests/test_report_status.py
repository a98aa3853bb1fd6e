"""What the user reads in the JSON report (issue 16 §1): status `suspect` for a run that answered on
an unrecovered error, never for a healthy run; `errors[]` placed and ranked; `recovered[]` with
what recovered each. Runs through the real openai client, our exporter and the CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest
from scenario_agent import analyze_json, call, record_run, schema_for
from test_scenarios import SEED_004, fifty_step_script, fifty_step_tools, seed_004_tools

from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer


@pytest.fixture(scope="module")
def server():
    with ScriptedOpenAIServer({}) as s:
        yield s


def only_run(server, tmp_path, user, turns, tools, **kw):
    [run] = analyze_json(record_run(server, tmp_path / "t.jsonl", user, turns, tools, **kw))["runs"]
    return run


HEALTHY = {
    "amounts from tools": ([call("calculate_refund", order_id="A1001"),
                            {"content": "Your refund of $25.00 for order A1001 is on its way."}],
                           {"calculate_refund": lambda order_id: {"amount": 25.0}}),
    "seed 004": (SEED_004, None),
    "lookups then an answer": ([call("get_customer", name="Ada"), call("get_latest_order", customer_id="C-77"),
                                {"content": "Ada's latest order O-5521 totals $25.00."}],
                               {"get_customer": lambda name: {"id": "C-77", "name": name},
                                "get_latest_order": lambda customer_id: {"id": "O-5521", "total": 25.0}}),
    "a failure recovered by a retry": ([call("check_inventory", sku="SKU-10"), call("check_inventory", sku="SKU-10"),
                                        {"content": "SKU-10 has 12 in stock."}], "flaky"),
    "no tools": ([{"content": "Hello! How can I help?"}], {}),
}


USERS = {"amounts from tools": "Please refund A1001", "seed 004": "Compute the word counts of data.txt",
         "lookups then an answer": "Please refund Ada's latest order",
         "a failure recovered by a retry": "how many SKU-10 are in stock?"}


def _flaky():
    calls = []

    def check_inventory(sku):
        calls.append(sku)
        if len(calls) == 1:
            raise ConnectionError("inventory service reset the connection")
        return {"sku": sku, "stock": 12}

    return {"check_inventory": check_inventory}


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_healthy_runs_are_ok_never_suspect(server, tmp_path, name):
    turns, tools = HEALTHY[name]
    tools = seed_004_tools() if tools is None else _flaky() if tools == "flaky" else tools
    run = only_run(server, tmp_path, f"{name}: {USERS.get(name, 'please help')}", turns, tools)
    assert run["status"] == "ok" and run["errors"] == []
    if name == "a failure recovered by a retry":
        [recovered] = run["recovered"]
        assert recovered["error_type"] == "tool_error_result" and recovered["recovered_by_span_id"]
        assert recovered["recovered_by_span_id"] != recovered["span_id"]
        assert recovered["located_at"][0] == recovered["decision_span_id"]
        assert recovered["located_at"][1:] == [recovered["read_by_span_id"]]  # the step that retried read it


def test_small_talk_with_tools_at_hand_is_ok_and_no_unrecovered_error(server, tmp_path):
    """A greeting answered without a tool, tools at hand: `ok`; the low-confidence suspicion that
    the answer rests on no tool result stays listed (flagged), but it is no error of the
    recoverability metric (nothing could have retried it): that read 0/1 recovered before."""
    report = analyze_json(record_run(server, tmp_path / "t.jsonl", "hi there", [
        {"content": "Hello! How can I help you with your orders today?"}],
        {"lookup_order": lambda order_id: {}}))
    [run] = report["runs"]
    assert run["status"] == "ok" and run["critical"] is None
    assert [(e["error_type"], e["suspicion"]) for e in run["errors"]] == [("unsupported_answer", True)]
    assert report["summary"]["metrics"]["reliability"]["recoverability"] == {}


def test_an_answer_resting_on_a_fabricated_value_is_suspect(server, tmp_path):
    run = only_run(server, tmp_path, "refund A10O2 please", [
        call("lookup_order", order_id="A10O2"),
        {"content": "Your refund of $59.90 for order A10O2 is on its way."}], {"lookup_order": lambda order_id: []})
    assert run["status"] == "suspect"
    assert run["critical"] is None and run["origin"]["error_type"] == "tool_empty_result"
    assert run["chain"][0]["span_id"] == run["origin"]["span_id"]
    assert {e["error_type"] for e in run["errors"]} == {"tool_empty_result", "fabricated_value"}


def test_a_made_up_argument_is_placed_at_the_decision(server, tmp_path):
    """A model-made error is located at the step that made it; the tool's own failure stays listed."""
    schemas = [schema_for("lookup_order", {"order_id": {"type": "string"}}, ["order_id"])]
    run = only_run(server, tmp_path, "check A1001 please", [
        call("lookup_order", order_id=1001), {"content": "Order A1001 could not be checked."}],
        {"lookup_order": lambda order_id: {"error": "order_id must be a string"}}, schemas=schemas)
    by_type = {e["error_type"]: e for e in run["errors"]}
    invalid, failed = by_type["invalid_arguments"], by_type["tool_error_result"]
    assert invalid["span_name"] == "agent_step 0" and invalid["bug_class"] == "model_decision"
    assert failed["span_name"] == "execute_tool lookup_order" and failed["bug_class"] == "tool"
    assert failed["decision_span_id"] == invalid["span_id"]  # the step that ran the tool
    assert failed["read_by_span_id"] not in (None, failed["span_id"])  # the next decision read it
    assert invalid["located_at"] == [invalid["span_id"]]  # a model-made error: its decision only
    assert failed["located_at"] == [failed["decision_span_id"], failed["read_by_span_id"]]  # ran it, read it
    assert run["status"] == "suspect"


def test_errors_are_ranked_earliest_first(server, tmp_path):
    run = only_run(server, tmp_path, "Please audit refund request for A10O2", fifty_step_script(),
                   fifty_step_tools())
    starts = [e["start_time_unix_nano"] for e in run["errors"]]
    assert starts == sorted(starts) and run["errors"][0]["step_index"] == 3
    assert [r["step_index"] for r in run["recovered"]] == [10, 20]


def test_an_answer_value_inside_a_longer_result_value_is_unverified(server, tmp_path):
    """The answer's `A1001` occurs in a tool result only inside `XA1001Y`, another value: the
    answer is not verifiable (the check that reads only results holding a value as written must
    not take a substring for the value)."""
    path = record_run(server, tmp_path / "t.jsonl", "refund my last order please", [
        call("lookup_order", ref="last"), {"content": "Your refund for order A1001 is on its way."}],
        {"lookup_order": lambda ref: {"order": "XA1001Y", "state": "found"}})
    report = analyze_json(path)
    assert report["summary"]["metrics"]["reliability"]["verifiability"] == 0.0
    healthy = analyze_json(record_run(server, tmp_path / "h.jsonl", "refund my last order please", [
        call("lookup_order", ref="last"), {"content": "Your refund for order A1001 is on its way."}],
        {"lookup_order": lambda ref: {"order": "A1001", "state": "found"}}))
    assert healthy["summary"]["metrics"]["reliability"]["verifiability"] == 1.0


def test_repeats_of_one_error_are_one_entry_with_every_place(server, tmp_path):
    """A tool that fails three times (another tool's failure in between) is one `errors[]` entry,
    `count` 3, its three occurrences and all their places; the other failure is its own entry. The
    text, markdown and HTML reports say which error repeated (docs/analyzer.md, Folding)."""
    def search(q):
        raise LookupError("index offline")

    def fetch(url):
        raise ValueError("bad url")

    path = record_run(server, tmp_path / "t.jsonl", "find the Q3 report", [
        call("search", q="q3 report"), call("search", q="report q3"), call("fetch", url="intranet/q3"),
        call("search", q="quarterly report"), {"content": "I could not find the Q3 report."}],
        {"search": search, "fetch": fetch})
    [run] = analyze_json(path)["runs"]
    assert run["status"] == "failed" and run["origin"]["tool"] == "search"
    searched, fetched = run["errors"]
    assert (searched["span_name"], searched["count"], fetched["span_name"], fetched["count"]) == \
        ("execute_tool search", 3, "execute_tool fetch", 1)
    assert [o["step_index"] for o in searched["occurrences"]] == [0, 1, 3]
    assert searched["occurrences"][0]["span_id"] == searched["span_id"] == run["origin"]["span_id"]
    assert searched["located_at"] == list(dict.fromkeys(x for o in searched["occurrences"] for x in o["located_at"]))
    assert len({o["span_id"] for o in searched["occurrences"]}) == 3  # nothing dropped
    line = "tool_error_result at execute_tool search, 3 times (steps 0, 1, 3)"
    for fmt in ("text", "md", "html"):
        out = tmp_path / f"r.{fmt}"
        subprocess.run([sys.executable, "-m", "otel_agent_trace.cli", "analyze", str(path), "--format", fmt,
                        "-o", str(out)], check=True, capture_output=True)
        assert line in out.read_text(), fmt
        assert "execute_tool fetch, 1 times" not in out.read_text()
