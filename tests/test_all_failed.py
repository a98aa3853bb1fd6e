"""`analyze --all-failed` (issue 27 §1): every run of the input is known to have failed. Runs
recorded through the real openai client and our exporter; the report read as a user's script
reads it (the CLI, in a subprocess, and its JSON)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from scenario_agent import analyze_json, call, record_run

from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

USER = "Please refund A1001"
TURNS = [call("calculate_refund", order_id="A1001"), {"content": "Your refund of $25.00 for order A1001 is on its way."}]
TOOLS = {"calculate_refund": lambda order_id: {"amount": 25.0}}


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    with ScriptedOpenAIServer({}) as server:
        return record_run(server, tmp_path_factory.mktemp("all_failed") / "t.jsonl", USER, TURNS, TOOLS)


def test_healthy_run_is_ok_without_the_flag(trace):
    [run] = analyze_json(trace)["runs"]
    assert run["status"] == "ok" and run["critical"] is None and run["rules"] == []


def test_the_flag_makes_every_run_failed_at_its_run_span(trace):
    [run] = analyze_json(trace, "--all-failed")["runs"]
    assert run["status"] == "failed"
    assert run["critical"]["span_id"] == run["run_span_id"]
    assert run["critical"]["error_type"] == "known_failed"
    assert "--all-failed" in run["critical"]["description"]
    assert [r["rule_id"] for r in run["rules"]] == ["KNOWN_FAILED"]
    assert any("--all-failed" in e for e in run["evidence"])


def test_a_script_uses_exactly_this_flag(trace, tmp_path):
    out = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "otel_agent_trace.cli", "analyze", str(trace), "--all-failed",
                           "--format", "json", "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["summary"]["failed_runs"] == report["summary"]["runs"] == 1


def test_the_flag_with_a_rules_file_keeps_both(trace, tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"criticalFailures": [{"ruleId": "REFUND_CALLED", "match": {
        "span_name": "execute_tool calculate_refund"}, "traceBack": False}]}))
    [run] = analyze_json(trace, "--all-failed", "--rules", str(rules))["runs"]
    assert run["status"] == "failed"
    assert {r["rule_id"] for r in run["rules"]} == {"KNOWN_FAILED", "REFUND_CALLED"}


def test_a_sub_agent_run_is_not_marked(tmp_path):
    """The task failed; whether each helper agent it called did is not known."""
    import openai
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from scenario_agent import run_loop

    import otel_agent_trace
    from otel_agent_trace.exporter import AgentTraceFileExporter

    path = tmp_path / "t.jsonl"
    scripts = {USER: [call("ask_helper", question="total of A1001?"), {"content": "Refund of $25.00 is on its way."}],
               "total of A1001?": [{"content": "It is the order's usual total."}]}
    with ScriptedOpenAIServer(scripts) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)

        def ask_helper(question):
            with otel_agent_trace.agent_run("helper"):
                return run_loop(client, question, {})

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(str(path))))
        instrumentor = otel_agent_trace.AgentTraceInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            with otel_agent_trace.agent_run("main"):
                run_loop(client, USER, {"ask_helper": ask_helper})
        finally:
            instrumentor.uninstrument()
            provider.shutdown()
    runs = {r["agent"]: r for r in analyze_json(path, "--all-failed")["runs"]}
    assert set(runs) == {"main", "helper"}
    assert runs["main"]["status"] == "failed" and runs["main"]["critical"]["error_type"] == "known_failed"
    assert runs["helper"]["status"] == "ok" and runs["helper"]["critical"] is None
