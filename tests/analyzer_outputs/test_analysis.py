"""Analysis: offline lifecycle, ranked candidates and several chains, rules, bug classes, metrics."""

from __future__ import annotations

import json

import pytest
from trace_builder import TraceBuilder, run_span, step, tool, write

from otel_agent_trace.cli import main as cli_main


def report(capsys, *args):
    code = cli_main(["analyze", "--format", "json", *map(str, args)])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def dep(*pairs):
    """agent_trace.depends_on / .relations attributes from (span id, relation) pairs."""
    return {"agent_trace__depends_on": [p[0] for p in pairs], "agent_trace__depends_on__relations": [p[1] for p in pairs]}


# --- the demo, through the real pipeline ------------------------------------------------------
def test_demo_origins_confidence_rules_and_metrics(demo, capsys):
    code, data, _ = report(capsys, demo)
    assert code == 0
    healthy, malformed, recovered, loop = data["runs"]
    assert malformed["origin"]["tool"] == "lookup_order" and malformed["origin"]["step_index"] == 0
    assert malformed["bug_class"] == "tool"
    # two weak (consumes) hops between the empty lookup and the failure: 0.9 ** 2
    assert malformed["confidence"] == pytest.approx(0.81)
    assert [c["span_id"] for c in malformed["candidates"]] == [malformed["origin"]["span_id"]]
    assert malformed["chains"] == [malformed["chain"]]
    assert [r["rule_id"] for r in malformed["rules"]] == ["RUN_EXCEPTION"]
    assert [e["error_type"] for e in malformed["errors"]] == ["tool_empty_result", "tool_error_result"]
    assert any("well-formed" in e for e in malformed["evidence"])
    assert loop["origin"]["error_type"] == "loop_detected"
    assert [r["rule_id"] for r in loop["rules"]] == ["RUN_EXCEPTION", "LOOP_DETECTED"]
    assert healthy["rules"] == [] and recovered["rules"] == [] and recovered["status"] == "ok"

    m = data["summary"]["metrics"]
    assert m["runs"] == 4
    assert m["steps_per_run"] == {"mean": 3.75, "p50": 3.0, "p95": 6.0}
    assert m["loop_abort_rate"] == 0.25
    assert m["trace_capture_rate"] == 1.0
    assert m["tool_error_rate"]["lookup_order"] == {"calls": 2, "errors": 1, "rate": 0.5}
    assert m["tool_error_rate"]["track_shipment"]["errors"] == 1  # the timeout, though a retry recovered it
    assert m["failures"] == {"by_origin_error_type": {"loop_detected": 1, "tool_empty_result": 1},
                             "by_bug_class": {"model_decision": 1, "tool": 1}}
    assert m["tokens_per_run"]["input"] > 0 and m["tokens_per_run"]["output"] > 0
    # wrong calls: the loop's repeats of an identical call that had succeeded; the retry after a timeout is not one
    assert 0 < m["wrong_tool_rate"] < 0.5
    # no price table: the costs recorded on the chat spans (genai-prices, in the test extra, prices gpt-4o-mini)
    costs = [r["cost_usd"] for r in data["runs"]]
    assert all(c > 0 for c in costs)
    assert m["cost_per_run"] == pytest.approx(sum(costs) / len(costs), abs=1e-6)


def test_prices_give_cost_per_run(demo, tmp_path, capsys):
    rules = tmp_path / "team.json"
    rules.write_text(json.dumps({"criticalFailures": [], "prices": {"gpt-4o-mini": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}}}))
    _, data, _ = report(capsys, demo, "--rules", rules)
    m = data["summary"]["metrics"]
    expected = (m["tokens_per_run"]["input"] * 1.0 + m["tokens_per_run"]["output"] * 2.0) / 1e6
    assert m["cost_per_run"] == pytest.approx(expected, rel=1e-3)


def test_seed_003_reliability_metrics_in_every_format(demo, tmp_path, capsys):
    """Task success, partial completion, recoverability per error type, verifiability and cost
    within budget: in summary.metrics.reliability, and shown by text, md and html."""
    rules = tmp_path / "team.json"
    rules.write_text(json.dumps({"prices": {"gpt-4o-mini": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}}}))
    _, data, _ = report(capsys, demo, "--rules", rules, "--budget-usd", "0.0001")
    r = data["summary"]["metrics"]["reliability"]
    statuses = [run["status"] for run in data["runs"]]
    assert r["task_success_rate"] == round(statuses.count("ok") / len(statuses), 4) == 0.5
    assert 0 < r["partial_completion"] < 1  # the failed runs' steps before their origin succeeded
    assert r["recoverability"]["tool_error_result"] == {"errors": 2, "recovered": 1, "rate": 0.5}
    assert r["recoverability"]["tool_empty_result"]["recovered"] == 0
    assert r["verifiable_answers"] >= 1 and r["verifiability"] is not None
    assert r["cost_within_budget"] is not None and 0 <= r["cost_within_budget"] <= 1 and r["budget_usd"] == 0.0001
    for fmt, needle in (("text", "task success rate 50%"), ("md", "| task success rate | 50% |"),
                        ("html", "task success rate")):
        cli_main(["analyze", "--format", fmt, "--color", "never", str(demo)] if fmt == "text" else
                 ["analyze", "--format", fmt, str(demo)])
        assert needle in capsys.readouterr().out, fmt


# --- foreign-shaped traces: no phases, no outcomes, no dependency attributes -------------------
def test_foreign_trace_phases_and_edges_recomputed_offline(tmp_path, capsys):
    b = TraceBuilder()
    run = run_span(b, "gaia", )
    s0 = step(b, run, 0)
    search = tool(b, s0, 0, "web_search", '{"q": "clownfish USGS"}', "[]")
    s1 = step(b, run, 1)
    tool(b, s1, 1, "visit_page", '{"url": "https://example.org"}', "some page text")
    step(b, run, 2)
    b.spans[0]["status"] = {"code": 2, "message": "AgentError: no answer"}
    _, data, _ = report(capsys, write(tmp_path / "t.jsonl", b))
    r = data["runs"][0]
    assert r["status"] == "failed" and r["derived_graph"] is True
    assert r["origin"]["span_id"] == search and r["origin"]["error_type"] == "tool_empty_result"
    assert r["bug_class"] == "tool"
    assert r["candidates"][0]["derived"] is True
    assert r["confidence"] == pytest.approx(0.8 * 0.8 * 0.9 ** 2, abs=1e-3)  # derived error, derived graph, two weak hops
    assert [h["span_name"] for h in r["chain"]] == ["execute_tool web_search", "agent_step 1", "execute_tool visit_page",
                                                    "agent_step 2", "invoke_agent gaia"]
    assert r["errors"][0]["reason"] == "tool status/result"


# --- several chains, ranking prefers strong evidence ------------------------------------------
def test_independent_chains_ranked_strong_before_weak(tmp_path, capsys):
    """A (step 0, empty) reaches the failure over 2 weak hops, B (step 1, exception) over 1: B ranks first."""
    b = TraceBuilder()
    run = run_span(b)
    s0 = step(b, run, 0)
    a = tool(b, s0, 0, "fetch_price", '{"sku": "1"}', "[]", agent_trace__tool__outcome="empty_result",
             **dep((s0, "decided_by")))
    s1 = step(b, run, 1)
    bb = tool(b, s1, 1, "fetch_stock", '{"sku": "1"}', None, agent_trace__tool__outcome="exception",
              **dep((s1, "decided_by")))
    s2 = step(b, run, 2, **dep((a, "consumes")))
    c = tool(b, s2, 2, "write_report", '{"x": 1}', '{"ok": true}', agent_trace__tool__outcome="ok",
             **dep((s2, "decided_by"), (bb, "data")))
    step(b, run, 3, **dep((c, "consumes")))
    b.spans[0]["status"] = {"code": 2, "message": "ReportError: empty report"}
    _, data, _ = report(capsys, write(tmp_path / "t.jsonl", b))
    r = data["runs"][0]
    assert [c["span_id"] for c in r["candidates"]] == [bb, a]
    assert [c["weak_hops"] for c in r["candidates"]] == [1, 2]
    conf = [c["confidence"] for c in r["candidates"]]
    assert conf[0] > conf[1] and conf[0] == pytest.approx(0.9 / 1.71 * 0.9, abs=1e-3)
    assert len(r["chains"]) == 2
    assert [h["relation"] for h in r["chains"][0]] == ["data", "consumes", "result_of", None]
    assert r["chains"][1][0]["span_id"] == a and r["chains"][1][-1]["phase"] == "critical"
    assert any("2 independent origins" in e for e in r["evidence"])


def _three_failed_charges(b: TraceBuilder) -> tuple[str, list[str]]:
    """A run whose steps 0-2 each call charge_card, which fails each time."""
    run = run_span(b)
    failures = []
    for i in range(3):
        s = step(b, run, i)
        failures.append(tool(b, s, i, "charge_card", '{"amount": 5}', '{"error": "gateway 503"}'))
    return run, failures


def test_retry_exceeded_and_origin_is_first_failure(tmp_path, capsys):
    b = TraceBuilder()
    run, failures = _three_failed_charges(b)
    step(b, run, 3)
    _, data, _ = report(capsys, write(tmp_path / "t.jsonl", b))
    r = data["runs"][0]
    assert r["status"] == "failed"  # status OK, but a team rule says three failed retries are a failure
    assert [x["rule_id"] for x in r["rules"]] == ["TOOL_RETRY_EXCEEDED"]
    assert r["critical"]["span_id"] == failures[2]
    assert r["origin"]["span_id"] == failures[0] and r["bug_class"] == "tool"
    assert [h["relation"] for h in r["chain"]] == ["retry_of", "retry_of", None]


def test_retry_exceeded_then_recovered_still_names_the_first_failure(tmp_path, capsys):
    """A later success recovers each failed attempt, but the team rule still calls the streak the
    run's failure: the streak is that failure, not skipped as recovered (TRAIL trace ef0207e4
    printed "origin not found" for three failed page_down calls followed by one that worked)."""
    b = TraceBuilder()
    run, failures = _three_failed_charges(b)
    s = step(b, run, 3)
    tool(b, s, 3, "charge_card", '{"amount": 5}', '{"charged": 5}', agent_trace__tool__outcome="ok")
    step(b, run, 4)
    _, data, _ = report(capsys, write(tmp_path / "t.jsonl", b))
    r = data["runs"][0]
    assert r["status"] == "failed" and [x["rule_id"] for x in r["rules"]] == ["TOOL_RETRY_EXCEEDED"]
    assert r["critical"]["span_id"] == failures[2]
    assert r["origin"]["span_id"] == failures[0] and r["bug_class"] == "tool"
    assert [h["span_id"] for h in r["chain"]] == failures
    assert not {x["span_id"] for x in r["recovered"]} & set(failures)
    assert any("later attempt succeeded" in e for e in r["evidence"])


# --- bug classes ------------------------------------------------------------------------------
def test_malformed_arguments_are_a_model_decision(tmp_path, capsys):
    b = TraceBuilder()
    run = run_span(b)
    s0 = step(b, run, 0)
    bad = tool(b, s0, 0, "lookup_order", '{"order_id": A1004', '{"error": "bad request"}')
    step(b, run, 1)
    b.spans[0]["status"] = {"code": 2}
    _, data, _ = report(capsys, write(tmp_path / "t.jsonl", b))
    r = data["runs"][0]
    assert r["origin"]["span_id"] == s0  # the decision that wrote them; the tool span is evidence
    assert r["origin"]["error_type"] == "invalid_arguments"
    assert r["bug_class"] == "model_decision"
    assert bad in {e["span_id"] for e in r["errors"]}  # the tool's own failure stays listed


def test_dropped_context_makes_a_prompt_bug(tmp_path, capsys):
    b = TraceBuilder()
    run = run_span(b)
    s0 = step(b, run, 0, agent_trace__context__message_hashes=["sys", "user"])
    t0 = tool(b, s0, 0, "lookup_order", '{"order_id": "A1"}', '{"id": "A1"}', agent_trace__tool__outcome="ok",
              **dep((s0, "decided_by")))
    s1 = step(b, run, 1, agent_trace__context__message_hashes=["sys", "asst", "toolres"], **dep((t0, "consumes")))
    unknown = tool(b, s1, 1, "refund_everything", "{}", None, agent_trace__lifecycle__phase="origin",
                   agent_trace__error__type="unknown_tool", **dep((s1, "decided_by")))
    step(b, run, 2, agent_trace__context__message_hashes=["sys", "asst", "toolres", "a2", "t2"], **dep((unknown, "consumes")))
    b.spans[0]["status"] = {"code": 2}
    _, data, _ = report(capsys, write(tmp_path / "t.jsonl", b))
    r = data["runs"][0]
    assert r["origin"]["span_id"] == s1 and r["origin"]["error_type"] == "context_dropped"
    assert r["bug_class"] == "prompt"
    assert {e["error_type"] for e in r["errors"]} == {"context_dropped", "unknown_tool"}


def test_a_tool_missing_from_the_definitions_is_a_prompt_bug_when_the_agent_has_it(tmp_path, capsys):
    """A call of a tool the model was not given: if the agent ran it fine, the request's tool list
    was incomplete (prompt); if it does not exist either, the model invented it (model_decision)."""
    definitions = json.dumps([{"type": "function", "name": "lookup_order", "parameters": {}}])
    classes = {}
    for result, outcome in (('{"refunded": 20}', "ok"), (None, "exception")):
        b = TraceBuilder()
        run = run_span(b)
        s0 = step(b, run, 0)
        b.span("chat gpt-4o", s0, gen_ai__operation__name="chat", gen_ai__tool__definitions=definitions)
        called = tool(b, s0, 0, "refund_order", '{"order_id": "A1"}', result, agent_trace__tool__outcome=outcome,
                      **dep((s0, "decided_by")))
        step(b, run, 1, **dep((called, "consumes")))
        b.spans[0]["status"] = {"code": 2, "message": "RefundNotConfirmed"}
        _, data, _ = report(capsys, write(tmp_path / f"{outcome}.jsonl", b))
        r = data["runs"][0]
        assert r["origin"]["span_id"] == s0 and r["origin"]["error_type"] == "unknown_tool"  # the decision
        classes[outcome] = (r["bug_class"], r["evidence"])
    assert classes["ok"][0] == "prompt" and any("tool list was incomplete" in e for e in classes["ok"][1])
    assert classes["exception"][0] == "model_decision"


def test_failure_without_any_error_suspects_the_final_decision(tmp_path, capsys):
    b = TraceBuilder()
    run = run_span(b)
    s0 = step(b, run, 0)
    t0 = tool(b, s0, 0, "lookup_order", '{"order_id": "A1"}', '{"total": 20}', **dep((s0, "decided_by")))
    last = step(b, run, 1, **dep((t0, "consumes")))
    b.spans[0]["status"] = {"code": 2, "message": "MissingRefundAmount"}
    _, data, _ = report(capsys, write(tmp_path / "t.jsonl", b))
    r = data["runs"][0]
    assert r["origin"] is None
    assert r["candidates"][0]["span_id"] == last and r["candidates"][0]["suspect"] is True
    assert r["bug_class"] == "model_decision"


def test_capture_rate_counts_broken_step_chains(tmp_path, capsys):
    good, gap = TraceBuilder(), TraceBuilder()
    run = run_span(good)
    step(good, run, 0)
    run2 = run_span(gap)
    step(gap, run2, 0)
    step(gap, run2, 2)  # step 1 was lost
    _, data, _ = report(capsys, write(tmp_path / "t.jsonl", good, gap))
    assert data["summary"]["metrics"]["trace_capture_rate"] == 0.5


# --- rules as team configuration --------------------------------------------------------------
RULE = {"ruleId": "CARRIER_FLAKY", "description": "any carrier timeout fails the ticket",
        "match": {"span_name": "execute_tool track_*", "phase": "RECOVERED"}, "traceBack": True}


def test_team_rules_json_add_to_builtins(demo, tmp_path, capsys):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"criticalFailures": [RULE]}))
    code, data, _ = report(capsys, demo, "--rules", path)
    assert code == 0
    assert [r["status"] for r in data["runs"]] == ["ok", "failed", "failed", "failed"]
    flaky = data["runs"][2]
    # offline, the failed attempt is `recovered`; online the recorder marks the successful retry so
    assert {r["rule_id"] for r in flaky["rules"]} == {"CARRIER_FLAKY"}
    assert flaky["critical"]["error_type"] == "tool_error_result"  # the demo tool returns "Error: TimeoutError ..."
    assert flaky["critical"]["description"] == RULE["description"]


def test_team_rules_without_builtins(demo, tmp_path, capsys):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"builtins": False, "criticalFailures": [RULE]}))
    _, data, _ = report(capsys, demo, "--rules", path)
    # no rule fails the refund run any more, but its answer rests on the empty lookup: suspect
    assert [r["status"] for r in data["runs"]] == ["ok", "suspect", "failed", "ok"]


def test_rule_disabling_a_builtin(demo, tmp_path, capsys):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps([{"ruleId": "RUN_EXCEPTION", "enabled": False}, {"ruleId": "RECORDED_CRITICAL", "enabled": False}]))
    _, data, _ = report(capsys, demo, "--rules", path)
    # the loop run still fails by LOOP_DETECTED; the malformed run has nothing left that fires; the
    # refund run, no longer failed, answered on its empty lookup: suspect
    assert [r["status"] for r in data["runs"]] == ["ok", "suspect", "ok", "failed"]
    assert data["runs"][3]["rules"][0]["rule_id"] == "LOOP_DETECTED"


@pytest.mark.parametrize("content, message", [
    ("{not json", "invalid JSON"),
    (json.dumps([{"ruleId": "X", "match": {"colour": "red"}}]), "unknown match key"),
    (json.dumps([{"match": {"phase": "critical"}}]), "ruleId missing"),
    (json.dumps([{"ruleId": "X", "match": {}}]), "empty match"),
])
def test_unusable_rules_exit_2(demo, tmp_path, capsys, content, message):
    path = tmp_path / "rules.json"
    path.write_text(content)
    assert cli_main(["analyze", str(demo), "--rules", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_yaml_rules(demo, tmp_path, capsys):
    pytest.importorskip("yaml", reason="YAML rules need PyYAML (optional); JSON rules are tested without it")
    path = tmp_path / "rules.yaml"
    path.write_text("criticalFailures:\n  - ruleId: CARRIER_FLAKY\n    match:\n      span_name: 'execute_tool track_*'\n"
                    "      phase: RECOVERED\n")
    _, data, _ = report(capsys, demo, "--rules", path)
    assert data["runs"][2]["rules"][0]["rule_id"] == "CARRIER_FLAKY"


def test_examples_rules_file_loads():
    from pathlib import Path

    from otel_agent_trace.analyzer.critical_rules import load_rules

    root = Path(__file__).resolve().parents[2]
    ids = [r.rule_id for r in load_rules(str(root / "examples" / "rules.json"))]
    assert {"RUN_EXCEPTION", "LOOP_DETECTED", "REFUND_WITHOUT_AMOUNT"} <= set(ids)


def test_loop_threshold_is_read_for_each_analysis(tmp_path, capsys, monkeypatch):
    """`OTEL_AGENT_TRACE_LOOP_THRESHOLD` offline, as online: read once per analysis (not per run),
    so each analysis in one process follows the environment it starts in."""
    b = TraceBuilder()
    run = run_span(b)
    for index in range(3):  # the same call three times, none failed: a loop at the default threshold
        s = step(b, run, index)
        tool(b, s, index, "track", '{"id": "T-100"}', '{"status": "in transit"}')
    path = write(tmp_path / "loop.jsonl", b)

    def loop_found() -> bool:
        code, data, _ = report(capsys, path, "--jobs", "1")
        return any(e["error_type"] == "loop_detected" for e in data["runs"][0]["errors"])

    assert loop_found()  # default 3
    monkeypatch.setenv("OTEL_AGENT_TRACE_LOOP_THRESHOLD", "4")
    assert not loop_found()
    monkeypatch.setenv("OTEL_AGENT_TRACE_LOOP_THRESHOLD", "3")
    assert loop_found()
    monkeypatch.setenv("OTEL_AGENT_TRACE_LOOP_THRESHOLD", "0")
    assert not loop_found()
