"""`analyze --expected FILE` (issue 27 §1): runs recorded through the real openai client and our
exporter, their final answers compared with the expected ones; the report read as a user's script
reads it. And `regress`'s `expected_answer`, the same comparison."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from scenario_agent import analyze_json, call, run_loop

import otel_agent_trace
from otel_agent_trace.cli import main as cli_main
from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

TASKS = {  # task id -> (user message, the model's turns)
    "T-1": ("Please refund A1001", [call("calculate_refund", order_id="A1001"),
                                    {"content": "Your refund of $25.00 for order A1001 is on its way."}]),
    "T-2": ("What is the capital of France?", [{"content": "The capital of France is Lyon."}]),
    "T-3": ("Which order shipped last?", [{"content": "Order A1003 shipped on Monday."}]),
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """Three runs, each tagged with its task id (`agent_trace.task.id`); task id -> trace id."""
    path = tmp_path_factory.mktemp("expected") / "traces.jsonl"
    traces = {}
    with ScriptedOpenAIServer({user: turns for user, turns in TASKS.values()}) as server:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(str(path))))
        instrumentor = otel_agent_trace.AgentTraceInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)
            for task, (user, _) in TASKS.items():
                with otel_agent_trace.agent_run("agent"):
                    trace.get_current_span().set_attribute("agent_trace.task.id", task)
                    traces[task] = format(trace.get_current_span().get_span_context().trace_id, "032x")
                    run_loop(client, user, {"calculate_refund": lambda order_id: {"amount": 25.0}})
        finally:
            instrumentor.uninstrument()
            provider.shutdown()
    return path, traces


def expected_file(tmp_path: Path, *items: dict | str) -> Path:
    path = tmp_path / "expected.jsonl"
    path.write_text("\n".join(i if isinstance(i, str) else json.dumps(i) for i in items) + "\n")
    return path


def by_task(report: dict, traces: dict[str, str]) -> dict[str, dict]:
    task_of = {trace_id: task for task, trace_id in traces.items()}
    return {task_of[r["trace_id"]]: r for r in report["runs"]}


def test_without_expected_answers_no_run_is_failed(recorded):
    path, traces = recorded
    runs = by_task(analyze_json(path), traces)
    assert set(runs) == set(TASKS) and "failed" not in {r["status"] for r in runs.values()}


def test_answers_keyed_by_input_task_id_and_trace_id(recorded, tmp_path):
    path, traces = recorded
    expected = expected_file(tmp_path,
                             {"input": "please refund a1001", "answer": 25},  # by input, a number
                             {"task_id": "T-2", "answer": "Paris"},  # by task id: wrong
                             {"trace_id": traces["T-3"], "answer": "A1003", "match": "contains"})
    runs = by_task(analyze_json(path, "--expected", str(expected)), traces)
    assert runs["T-1"]["status"] != "failed" and runs["T-3"]["status"] != "failed"
    wrong = runs["T-2"]
    assert wrong["status"] == "failed"
    assert wrong["critical"]["span_id"] == wrong["run_span_id"]
    assert wrong["critical"]["error_type"] == "wrong_answer"
    assert 'expected "Paris", got "The capital of France is Lyon."' in wrong["critical"]["description"]
    assert [r["rule_id"] for r in wrong["rules"]] == ["WRONG_ANSWER"]
    assert any('expected "Paris", got "The capital of France is Lyon."' in e for e in wrong["evidence"])


@pytest.mark.parametrize("item, status", [
    ({"answer": 20}, "failed"),  # the number stated is 25
    ({"answer": 25.004, "tolerance": 0.01}, "ok"),
    ({"answer": 25.004}, "failed"),  # the default tolerance is relative 1e-6
    ({"answer": r"refund of \$\d+\.\d\d", "match": "regex"}, "ok"),
    ({"answer": r"refund of \$\d+$", "match": "regex"}, "failed"),
    ({"answer": ["$25", "twenty-five dollars"]}, "ok"),
    ({"answer": "refund denied", "match": "contains"}, "failed"),
])
def test_each_way_of_comparing(recorded, tmp_path, item, status):
    path, traces = recorded
    expected = expected_file(tmp_path, {"task_id": "T-1", **item})
    assert by_task(analyze_json(path, "--expected", str(expected)), traces)["T-1"]["status"] == status


def test_bad_lines_are_named_by_file_and_line_and_the_rest_are_used(recorded, tmp_path, capsys):
    path, traces = recorded
    expected = expected_file(tmp_path,
                             "# expected answers of the smoke set",
                             '{"task_id": "T-2", "answer": "Paris"',  # truncated
                             {"task_id": "T-1"},  # no answer
                             {"answer": "x"},  # names no run
                             {"task_id": "T-3", "answer": "(", "match": "regex"},
                             {"task_id": "T-2", "answer": "Paris"})
    out = tmp_path / "report.json"
    code = cli_main(["analyze", str(path), "--expected", str(expected), "--format", "json", "--jobs", "1", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 1  # some lines unusable, the rest used
    assert f"{expected}:2: invalid JSON" in err
    assert f'{expected}:3: no "answer"' in err
    assert f"{expected}:4: names no run" in err
    assert f"{expected}:5: bad regex" in err
    assert f"{expected}:1:" not in err and f"{expected}:6:" not in err
    runs = by_task(json.loads(out.read_text()), traces)
    assert runs["T-2"]["status"] == "failed" and runs["T-3"]["status"] != "failed"


def test_an_unreadable_expected_file_stops_the_command(recorded, tmp_path, capsys):
    path, _ = recorded
    code = cli_main(["analyze", str(path), "--expected", str(tmp_path / "missing.jsonl")])
    assert code == 2
    assert "missing.jsonl: cannot read" in capsys.readouterr().err


def test_regress_expected_answer_uses_the_same_comparison(recorded, tmp_path, capsys):
    path, traces = recorded
    cases = tmp_path / "cases"
    assert cli_main(["save", traces["T-1"], str(path), "--to", str(cases), "--tier", "core", "--name", "refund"]) == 0
    meta_path = cases / "refund" / "case.json"
    meta = json.loads(meta_path.read_text())
    meta["assert"] = {"expected_answer": {"answer": 25, "tolerance": 0.01}}
    meta_path.write_text(json.dumps(meta))
    capsys.readouterr()
    assert cli_main(["regress", str(cases)]) == 0, capsys.readouterr().out
    meta["assert"] = {"expected_answer": 20}
    meta_path.write_text(json.dumps(meta))
    code = cli_main(["regress", str(cases)])
    out = capsys.readouterr().out
    assert code == 1
    assert ('FAIL  case refund [core]: wrong answer: expected 20, got "Your refund of $25.00 for order A1001 is on its '
            'way." (number match)') in out
