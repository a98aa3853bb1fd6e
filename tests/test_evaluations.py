"""Evaluation results in the trace (issue 27 §1): `record_evaluation` through the real SDK (a span
event during the run; a log record or an evaluation span after it, from another process that has
only the trace id), read back by `analyze` from the files the SDK's exporters wrote, as a user's
script reads the report. A failing one makes the run failed (`evaluation_failed`, critical on
the evaluated span, the evaluation named in the evidence); a logs line never breaks span reading."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import openai
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from scenario_agent import analyze_json, call, run_loop

import otel_agent_trace
from otel_agent_trace import cli
from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

HERE = Path(__file__).resolve().parent
USER = "Please refund A1001"
TURNS = [call("calculate_refund", order_id="A1001"), {"content": "Your refund of $25.00 for order A1001 is on its way."}]
TOOLS = {"calculate_refund": lambda order_id: {"amount": 25.0}}


def record(path: Path, during: dict | None = None) -> dict:
    """One run through the real openai client and our exporter; `during`: record_evaluation's
    keywords, called inside the run. Returns the run's ids and how the evaluation was recorded."""
    out: dict = {}
    with ScriptedOpenAIServer({USER: TURNS}) as server:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(str(path))))
        instrumentor = otel_agent_trace.AgentTraceInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)
            with otel_agent_trace.agent_run("agent"):
                out["answer"] = run_loop(client, USER, TOOLS)
                context = trace.get_current_span().get_span_context()
                if during is not None:
                    out["how"] = otel_agent_trace.record_evaluation(**during)
        finally:
            instrumentor.uninstrument()
            provider.shutdown()
    out["trace_id"], out["span_id"] = format(context.trace_id, "032x"), format(context.span_id, "016x")
    return out


def other_process(mode: str, out: Path, trace_id: str, span_id: str | None, name: str, **options) -> str:
    done = subprocess.run([sys.executable, str(HERE / "evaluation_process.py"), mode, str(out), trace_id, span_id or "-",
                           name, *(f"{k}={v}" for k, v in options.items())],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "OTEL_LOGS_EXPORTER": "none"})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def analyze(*args: str) -> tuple[int, dict, str]:
    """The CLI in a subprocess: exit code, JSON report, stderr."""
    done = subprocess.run([sys.executable, "-m", "otel_agent_trace.cli", "analyze", "--format", "json", "--jobs", "1",
                           "--progress", "never", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return done.returncode, json.loads(done.stdout) if done.stdout else {}, done.stderr


@pytest.fixture(scope="module")
def healthy(tmp_path_factory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("evaluations") / "traces.jsonl"
    return path, record(path)


def test_a_run_without_evaluations_is_ok(healthy):
    path, _ = healthy
    [run] = analyze_json(path)["runs"]
    assert run["status"] == "ok" and run["rules"] == []


def test_a_failing_label_recorded_during_the_run_is_a_span_event_and_fails_the_run(tmp_path):
    path = tmp_path / "t.jsonl"
    ids = record(path, {"name": "correctness", "label": "incorrect", "explanation": "the refund should be $20"})
    assert ids["how"] == "span_event"
    spans = [s for line in path.read_text().splitlines() for rs in json.loads(line)["resourceSpans"]
             for ss in rs["scopeSpans"] for s in ss["spans"]]
    [run_span] = [s for s in spans if s["spanId"] == ids["span_id"]]
    [event] = [e for e in run_span["events"] if e["name"] == "gen_ai.evaluation.result"]
    assert {a["key"]: a["value"] for a in event["attributes"]} == {
        "gen_ai.evaluation.name": {"stringValue": "correctness"},
        "gen_ai.evaluation.score.label": {"stringValue": "incorrect"},
        "gen_ai.evaluation.explanation": {"stringValue": "the refund should be $20"}}
    [run] = analyze_json(path)["runs"]
    assert run["status"] == "failed"
    assert run["critical"]["span_id"] == ids["span_id"]
    assert run["critical"]["error_type"] == "evaluation_failed"
    assert "evaluation 'correctness'" in run["critical"]["description"]
    assert "the refund should be $20" in run["critical"]["description"]
    assert [r["rule_id"] for r in run["rules"]] == ["EVALUATION_FAILED"]
    assert any("evaluation 'correctness'" in e and "a span event" in e for e in run["evidence"])


def test_a_passing_label_leaves_the_run_ok(tmp_path):
    path = tmp_path / "t.jsonl"
    record(path, {"name": "relevance", "label": "relevant", "score": 0.9})
    [run] = analyze_json(path)["runs"]
    assert run["status"] == "ok"


def test_another_process_with_only_the_trace_id_writes_a_log_record_that_analyze_matches(healthy, tmp_path):
    path, ids = healthy
    logs = tmp_path / "logs.jsonl"
    how = other_process("log", logs, ids["trace_id"], ids["span_id"], "helpfulness", label="fail",
                        explanation="did not answer")
    assert how == "log_record"
    [record_] = json.loads(logs.read_text())["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert record_["eventName"] == "gen_ai.evaluation.result"
    assert (record_["traceId"], record_["spanId"]) == (ids["trace_id"], ids["span_id"])
    code, report, stderr = analyze(str(path), str(logs))
    assert code == 0, stderr
    [run] = report["runs"]
    assert run["status"] == "failed" and run["critical"]["error_type"] == "evaluation_failed"
    assert run["critical"]["span_id"] == ids["span_id"]
    assert "evaluation 'helpfulness'" in run["critical"]["description"] and "a log record" in run["critical"]["description"]
    assert report["summary"]["runs"] == 1  # the log record is no run of its own


def test_without_a_logger_provider_another_process_writes_an_evaluation_span(healthy, tmp_path):
    path, ids = healthy
    spans = tmp_path / "evaluation-spans.jsonl"
    assert other_process("span", spans, ids["trace_id"], None, "correctness", label="incorrect") == "span"
    [line] = spans.read_text().splitlines()
    [span] = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert span["name"] == "gen_ai.evaluation.result" and span["traceId"] == ids["trace_id"]
    code, report, stderr = analyze(str(path), str(spans))
    assert code == 0, stderr
    assert "warning" not in stderr  # (about the trace: its parent id names no span, on purpose)
    [run] = report["runs"]
    assert run["status"] == "failed" and run["critical"]["span_id"] == ids["span_id"]  # the trace's run
    assert "an evaluation span" in run["critical"]["description"]


def test_a_log_record_with_only_a_response_id_lands_on_that_chat_span(healthy, tmp_path):
    path, ids = healthy
    chats = {s.attributes["gen_ai.response.id"]: s.span_id for f in _findings(path) for s in f.run.chats}
    response_id = sorted(chats)[0]
    logs = tmp_path / "logs.jsonl"
    other_process("log", logs, ids["trace_id"], None, "groundedness", label="not_relevant", response_id=response_id)
    code, report, stderr = analyze(str(path), str(logs))
    assert code == 0, stderr
    [run] = report["runs"]
    assert run["status"] == "failed" and run["critical"]["span_id"] == chats[response_id]


def test_a_score_under_the_threshold_fails_the_run_env_and_rules_file(healthy, tmp_path):
    path, ids = healthy
    logs = tmp_path / "logs.jsonl"
    other_process("log", logs, ids["trace_id"], ids["span_id"], "helpfulness", score=0.2)
    code, report, _ = analyze(str(path), str(logs))
    assert report["runs"][0]["status"] == "ok"  # no threshold by default: scales differ
    os.environ["OTEL_AGENT_TRACE_EVALUATION_THRESHOLD"] = "0.5"
    try:
        code, report, stderr = analyze(str(path), str(logs))
    finally:
        del os.environ["OTEL_AGENT_TRACE_EVALUATION_THRESHOLD"]
    [run] = report["runs"]
    assert run["status"] == "failed", stderr
    assert "score 0.2 under the threshold 0.5" in run["critical"]["description"]
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"evaluation_threshold": {"helpfulness": 0.1}}))
    assert analyze(str(path), str(logs), "--rules", str(rules))[1]["runs"][0]["status"] == "ok"
    rules.write_text(json.dumps({"evaluation_threshold": {"helpfulness": 0.3}}))
    assert analyze(str(path), str(logs), "--rules", str(rules))[1]["runs"][0]["status"] == "failed"


def test_failing_labels_are_configurable_and_the_source_can_be_turned_off(healthy, tmp_path):
    path, ids = healthy
    logs = tmp_path / "logs.jsonl"
    other_process("log", logs, ids["trace_id"], ids["span_id"], "tone", label="Too Rude")
    assert analyze(str(path), str(logs))[1]["runs"][0]["status"] == "ok"
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"evaluation_fail_labels": ["too_rude"]}))
    assert analyze(str(path), str(logs), "--rules", str(rules))[1]["runs"][0]["status"] == "failed"
    os.environ["OTEL_AGENT_TRACE_EVALUATION_FAIL_LABELS"] = "fail,too rude"
    try:
        assert analyze(str(path), str(logs))[1]["runs"][0]["status"] == "failed"
        rules.write_text(json.dumps({"criticalFailures": [{"ruleId": "EVALUATION_FAILED", "enabled": False}]}))
        assert analyze(str(path), str(logs), "--rules", str(rules))[1]["runs"][0]["status"] == "ok"
    finally:
        del os.environ["OTEL_AGENT_TRACE_EVALUATION_FAIL_LABELS"]


def test_a_bad_threshold_is_refused_with_its_name(healthy, tmp_path):
    path, _ = healthy
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"evaluation_threshold": "high"}))
    code, _, stderr = analyze(str(path), "--rules", str(rules))
    assert code == 2 and "evaluation_threshold" in stderr and "'high'" in stderr


@pytest.mark.parametrize("native", [True, False], ids=["native-reader", "python-reader"])
def test_logs_lines_among_span_lines_are_read_and_a_bad_one_is_named(healthy, tmp_path, monkeypatch, native):
    """The Collector's file exporter writes trace and log lines to one file: each logs line goes to
    the logs reader, a malformed one is reported by file and line, every other line is analysed."""
    path, ids = healthy
    monkeypatch.setenv("OTEL_AGENT_TRACE_NATIVE", "1" if native else "0")  # (read once per analysis)
    logs = tmp_path / "logs.jsonl"
    other_process("log", logs, ids["trace_id"], ids["span_id"], "correctness", label="fail")
    good = logs.read_text().strip()
    bad_id = json.loads(good)
    bad_id["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["traceId"] = "not-an-id"
    unrelated = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": {"stringValue": "hello"}}]}]}]})
    lines = path.read_text().splitlines()
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join([lines[0], unrelated, good[: len(good) // 2], json.dumps(bad_id), *lines[1:], good]) + "\n")
    out = tmp_path / "report.json"
    code = cli.main(["analyze", str(mixed), "--format", "json", "--jobs", "1", "-o", str(out)])
    report = json.loads(out.read_text())
    assert code == 1  # some lines bad, the rest analysed
    [item] = report["inputs"]
    bad = {b["line"]: b["reason"] for b in item["bad_lines"]}
    assert set(bad) == {3, 4}
    assert "truncated" in bad[3] or "invalid JSON" in bad[3]
    assert "trace or span id unreadable" in bad[4]
    [run] = report["runs"]
    assert run["status"] == "failed" and run["critical"]["error_type"] == "evaluation_failed"
    assert item["spans"] == sum(1 for line in lines for rs in json.loads(line)["resourceSpans"]
                               for ss in rs["scopeSpans"] for _ in ss["spans"])


def test_an_evaluation_of_a_trace_not_in_the_inputs_is_a_warning(healthy, tmp_path):
    path, _ = healthy
    logs = tmp_path / "logs.jsonl"
    other_process("log", logs, "0af7651916cd43dd8448eb211c80319c", None, "correctness", label="fail")
    code, report, stderr = analyze(str(path), str(logs))
    assert code == 0
    assert report["runs"][0]["status"] == "ok"
    assert "0af7651916cd43dd8448eb211c80319c, which is not in the inputs" in stderr


def test_an_evaluation_that_itself_failed_says_nothing_about_the_run(tmp_path):
    path = tmp_path / "t.jsonl"
    record(path)
    lines = path.read_text().splitlines()
    doc = json.loads(lines[-1])
    [span] = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]
              if not s.get("parentSpanId")]
    span.setdefault("events", []).append({"name": "gen_ai.evaluation.result", "timeUnixNano": span["endTimeUnixNano"],
                                          "attributes": [
                                              {"key": "gen_ai.evaluation.name", "value": {"stringValue": "correctness"}},
                                              {"key": "gen_ai.evaluation.score.label", "value": {"stringValue": "fail"}},
                                              {"key": "error.type", "value": {"stringValue": "timeout"}}]})
    path.write_text("\n".join([*lines[:-1], json.dumps(doc)]) + "\n")
    assert analyze_json(path)["runs"][0]["status"] == "ok"


def test_chunked_parallel_analysis_matches_an_evaluation_in_another_file(healthy, tmp_path):
    from otel_agent_trace.analyzer.report.reduce import analyze_reduced

    path, ids = healthy
    logs = tmp_path / "logs.jsonl"
    other_process("log", logs, ids["trace_id"], ids["span_id"], "correctness", label="fail")
    reduced = analyze_reduced([str(path), str(logs)], jobs=2, min_chunk_bytes=1)
    [run] = reduced.runs
    assert run.data["status"] == "failed" and run.data["critical"]["error_type"] == "evaluation_failed"


def test_record_evaluation_is_fail_open():
    assert otel_agent_trace.record_evaluation("x", trace_id="not hex") is None
    assert otel_agent_trace.record_evaluation("", label="fail") is None
    assert otel_agent_trace.record_evaluation("x", score="high") is None


def _findings(path: Path) -> list:
    from otel_agent_trace.analyzer.analysis import analyze as analyze_api

    return analyze_api([str(path)]).findings
