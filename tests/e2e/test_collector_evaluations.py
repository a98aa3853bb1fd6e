"""Evaluation results through a real Collector (deploy/collector-config.yaml on the deploy/collector/
build): a run's spans (with a passing evaluation as a span event) over OTLP, then a failing
evaluation as a log record from another process that has only the trace id. The Collector's file
exporter writes both to its zstd-framed file; `analyze` reads the spans and the log record, matches
the evaluation to the run span, and reports the run failed. No seeded PII reaches the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import openai
from conftest import analyze, files_of, otlp_spans, wait_for
from procs import Collector, started

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

import otel_agent_trace
from otel_agent_trace.analyzer.readers.sources import records
from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

TESTS = Path(__file__).resolve().parent.parent
USER = "Please refund A1001"
TURNS = [{"tool_calls": [{"name": "calculate_refund", "arguments": {"order_id": "A1001"}}]},
         {"content": "Your refund of $25.00 for order A1001 is on its way."}]
EMAIL = "jane.doe@example.com"


def _log_records(paths: list[Path]) -> list[dict]:
    out = []
    for path in paths:
        for _, raw in records(str(path)):
            try:
                doc = json.loads(raw)
            except ValueError:
                continue
            for rl in doc.get("resourceLogs", []):
                for sl in rl.get("scopeLogs", []):
                    out.extend(sl.get("logRecords", []))
    return out


def test_a_log_record_evaluation_through_the_collector_fails_the_run_it_names(binaries, e2e_dir, stack) -> None:
    collector = Collector(binaries["otelcol-agent-trace"], "collector-config.yaml", e2e_dir, "collector-evaluations",
                          OTELCOL_DECISION_WAIT="2s", OTELCOL_SAMPLE_PERCENTAGE="100", OTELCOL_BATCH_TIMEOUT="1s",
                          OTELCOL_BACKEND_ENDPOINT="127.0.0.1:1")  # nothing listens: the file is what we check
    started(stack, collector)
    own = e2e_dir / "evaluations-own.jsonl"

    # the agent: its spans to the Collector over OTLP/HTTP (and to its own file, for reference)
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http}/v1/traces")))
    provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(str(own))))
    instrumentor = otel_agent_trace.AgentTraceInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with ScriptedOpenAIServer({USER: TURNS}) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)
            sys.path.insert(0, str(TESTS))
            from scenario_agent import run_loop

            with otel_agent_trace.agent_run("agent"):
                run_loop(client, USER, {"calculate_refund": lambda order_id: {"amount": 25.0}})
                assert otel_agent_trace.record_evaluation("relevance", label="relevant", score=0.9) == "span_event"
                context = trace.get_current_span().get_span_context()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    trace_id, span_id = format(context.trace_id, "032x"), format(context.span_id, "016x")

    # the eval harness: another process, the trace and span ids only, a LoggerProvider sending OTLP
    done = subprocess.run([sys.executable, str(TESTS / "evaluation_process.py"), "otlp",
                           f"http://127.0.0.1:{collector.http}/v1/logs", trace_id, span_id, "correctness",
                           "label=incorrect", f"explanation=refunded the wrong customer ({EMAIL})"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0 and done.stdout.strip() == "log_record", done.stderr

    def written() -> bool:
        files = files_of(collector.files)
        return trace_id in {s["traceId"] for s in otlp_spans(files)} and bool(_log_records(files))

    wait_for(written, "the Collector to write the run's spans and the evaluation's log record")
    collector.stop()
    files = files_of(collector.files)
    [record] = _log_records(files)
    assert record["eventName"] == "gen_ai.evaluation.result"
    assert (record["traceId"], record["spanId"]) == (trace_id, span_id)
    for path in files:  # the explanation's email was redacted before it reached the file
        assert EMAIL.encode() not in b"".join(raw for _, raw in records(str(path)))

    report = analyze(str(collector.files))
    [run] = [r for r in report["runs"] if r["trace_id"] == trace_id]
    assert run["status"] == "failed"
    assert run["critical"]["span_id"] == span_id and run["critical"]["error_type"] == "evaluation_failed"
    assert "evaluation 'correctness'" in run["critical"]["description"]
    assert "a log record" in run["critical"]["description"]
    assert [r["rule_id"] for r in run["rules"]] == ["EVALUATION_FAILED"]
    assert report["inputs"] and all(not i["bad_lines"] for i in report["inputs"])
    # the agent's own file alone (the passing span event only) is an ok run
    [alone] = analyze(str(own))["runs"]
    assert alone["status"] == "ok"
