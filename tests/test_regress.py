"""save -> regress round trip on runs recorded through the real client, SDK and file exporter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import support_agent
from demo_traces import record_demo_tickets

from otel_agent_trace.cli import main as cli_main
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

EMPTY_LOOKUP = support_agent.TICKETS[1]  # A10O2: lookup_order returns [] -> no amount -> failed


def _call(name, **arguments):
    return {"name": name, "arguments": arguments}


FIXED = {  # the order service knows A10O2 now: the same ticket ends with an amount
    "refund for order A10O2": [
        {"tool_calls": [_call("lookup_order", order_id="A10O2")]},
        {"tool_calls": [_call("calculate_refund", order_id="A10O2", items=[{"sku": "MUG-1", "price": 9.0, "qty": 2}])]},
        {"content": "Your refund for order A10O2 is $18.00."},
    ]}
OTHER_FAILURE = {  # ...but the model now forgets the amount: another failure mode
    "refund for order A10O2": [
        {"tool_calls": [_call("lookup_order", order_id="A10O2")]},
        {"content": "Your refund is on its way."},
    ]}


def record_ticket(path: Path, scripts: dict, monkeypatch: pytest.MonkeyPatch) -> Path:
    with monkeypatch.context() as patch:
        patch.setattr(support_agent, "TICKETS", [EMPTY_LOOKUP])
        patch.setitem(support_agent.ORDERS, "A10O2", {"order_id": "A10O2", "customer": "Jo",
                                                       "items": [{"sku": "MUG-1", "price": 9.0, "qty": 2}], "status": "delivered"})
        with ScriptedOpenAIServer(scripts) as server:
            return record_demo_tickets(path, server.base_url)


def cli(capsys, *args) -> tuple[int, str, str]:
    code = cli_main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def demo(tmp_path, demo_server, capsys):
    path = record_demo_tickets(tmp_path / "traces.jsonl", demo_server.base_url)
    code, out, _ = cli(capsys, "analyze", "--format", "json", path)
    runs = json.loads(out)["runs"]
    assert [r["status"] for r in runs] == ["ok", "failed", "ok", "failed"]
    return path, runs


def test_save_keeps_one_run_redacted_with_its_finding(tmp_path, demo, capsys):
    path, runs = demo
    cases = tmp_path / "cases"
    code, out, err = cli(capsys, "save", runs[1]["trace_id"][:12], path, "--to", cases, "--tier", "core",
                         "--name", "refund-empty-lookup")
    assert code == 0, err
    assert "saved refund-empty-lookup [core] (failed)" in out
    trace = (cases / "refund-empty-lookup" / "trace.jsonl").read_text()
    assert runs[1]["trace_id"] in trace and runs[0]["trace_id"] not in trace
    assert "jane.doe@example.com" not in trace and "555 0134" not in trace  # the ticket's seeded PII
    meta = json.loads((cases / "refund-empty-lookup" / "case.json").read_text())
    assert meta["tier"] == "core" and meta["finding"]["origin"]["tool"] == "lookup_order"
    assert meta["signature"][1:3] == ["tool_empty_result", "lookup_order"]
    # the saved run analyses as the original did
    code, out, _ = cli(capsys, "analyze", "--format", "json", cases / "refund-empty-lookup" / "trace.jsonl")
    assert json.loads(out)["runs"][0]["origin"] == runs[1]["origin"]


def test_regress_round_trip(tmp_path, demo, capsys, monkeypatch):
    path, runs = demo
    cases = tmp_path / "cases"
    assert cli(capsys, "save", runs[1]["trace_id"], path, "--to", cases, "--tier", "core", "--name", "refund-empty-lookup")[0] == 0
    assert cli(capsys, "save", runs[0]["trace_id"], path, "--to", cases, "--name", "refund-ok")[0] == 0
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"assert": {"no_unhandled_tool_error": True, "max_steps": 5}, "regular_threshold": 1.0}))
    # the stored failing case fails its assertions, with a readable message
    code, out, err = cli(capsys, "regress", cases, "--rules", rules)
    assert code == 1, err
    assert "FAIL  case refund-empty-lookup [core]: tool lookup_order returned [] at step 0" in out
    assert "PASS  case refund-ok [regular]: pass" in out
    assert "core     0/1 passed (0%" in out and "regular  1/1 passed (100%" in out
    assert "new failure modes since the last run: RUN_EXCEPTION | tool_empty_result | lookup_order | tool" in out
    assert "regression set: FAIL" in out
    # a fixed run of the same ticket passes against it (the other case has no new run: skipped)
    fixed = record_ticket(tmp_path / "fixed.jsonl", FIXED, monkeypatch)
    code, out, err = cli(capsys, "regress", cases, "--rules", rules, "--against", fixed)
    assert code == 0, out + err
    assert "PASS  case refund-empty-lookup [core]: pass" in out
    assert "SKIP  case refund-ok [regular]: no new run of this task" in out
    assert "new failure modes since the last run: none" in out
    # another failure of the same ticket is reported as a new failure mode, once
    other = record_ticket(tmp_path / "other.jsonl", OTHER_FAILURE, monkeypatch)
    code, out, _ = cli(capsys, "regress", cases, "--rules", rules, "--against", other)
    assert code == 1
    assert "case refund-empty-lookup [core]: a new failure mode (" in out
    new_line = next(line for line in out.splitlines() if line.startswith("new failure modes"))
    assert new_line != "new failure modes since the last run: none"
    code, out, _ = cli(capsys, "regress", cases, "--rules", rules, "--against", other)
    assert "new failure modes since the last run: none" in out


def test_unusable_input_exits_2(tmp_path, demo, capsys):
    path, runs = demo
    code, _, err = cli(capsys, "save", "ffffffff", path, "--to", tmp_path / "cases")
    assert code == 2 and "no agent run with trace id ffffffff" in err
    code, _, err = cli(capsys, "regress", tmp_path / "nothing")
    assert code == 2 and "not a directory" in err
    cases = tmp_path / "cases"
    cli(capsys, "save", runs[0]["trace_id"], path, "--to", cases, "--name", "ok")
    bad = tmp_path / "rules.json"
    bad.write_text(json.dumps({"assert": {"no_such_check": True}}))
    code, _, err = cli(capsys, "regress", cases, "--rules", bad)
    assert code == 2 and "unknown assertion(s) no_such_check" in err
