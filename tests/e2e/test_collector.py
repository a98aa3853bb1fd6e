"""The demo through a real Collector (deploy/collector-config.yaml on the deploy/collector/ build) and
a real Jaeger v2: what the sampling tier keeps, redacts and writes, read back by the analyzer."""

from __future__ import annotations

import json
import os
import time
import urllib.request

from conftest import analyze, files_of, otlp_spans, run_demo, wait_for
from procs import Collector, started

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.trace import Status, StatusCode

# the demo's seeded PII (examples/support_agent.py TICKETS)
SEEDED_PII = ("jane.doe@example.com", "415 555 0134")
HASH_KEYS = ("agent_trace.context.hash", "agent_trace.context.message_hashes")
TOKEN_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")
FAIL_PHASES = {"origin", "critical"}
STOP_ERRORS = {"loop_detected", "budget_exceeded"}


def _failing(span: dict) -> bool:
    """The Collector's keep policies (and the in-process sampler's rule), over an OTLP JSON span."""
    attrs = span["attrs"]
    return (span.get("status", {}).get("code") in (2, "STATUS_CODE_ERROR")
            or attrs.get("agent_trace.lifecycle.phase") in FAIL_PHASES
            or attrs.get("agent_trace.error.type") in STOP_ERRORS)


def _by_trace(spans: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for span in spans:
        out.setdefault(span["traceId"], []).append(span)
    return out


def _findings(report: dict, trace_ids: set[str]) -> dict[str, tuple]:
    """Per run: status, steps, origin, chain and critical error type (descriptions may be redacted)."""
    return {r["trace_id"]: (r["status"], r["steps"], r["origin"], r["chain"], (r["critical"] or {}).get("error_type"))
            for r in report["runs"] if r["trace_id"] in trace_ids}


def _send_filler(http_port: int, megabytes: float) -> None:
    """Hard-to-compress failing spans from another service, so the zstd files pass 1 MB and rotate.

    Sent in small flushed groups: one zstd frame (a Collector batch) larger than the file's
    max_megabytes could not be written at all."""
    provider = TracerProvider(resource=Resource.create({"service.name": "filler"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{http_port}/v1/traces")))
    tracer = provider.get_tracer("filler")
    for i in range(int(megabytes * 1024 * 1024 / 48_000) + 1):
        with tracer.start_as_current_span("filler") as span:
            span.set_attribute("blob", os.urandom(24_000).hex())
            span.set_status(Status(StatusCode.ERROR, "filler"))
        if i % 6 == 5:
            provider.force_flush()
            time.sleep(0.4)
    provider.shutdown()


def test_collector_keeps_whole_runs_redacts_pii_and_jaeger_and_the_file_agree(binaries, jaeger, e2e_dir, stack) -> None:
    """Share 100%: every run reaches the file (zstd, rotated) and Jaeger; the analyzer finds the same origins."""
    collector = Collector(binaries["otelcol-agent-trace"], "collector-config.yaml", e2e_dir, "collector-all",
                          OTELCOL_DECISION_WAIT="2s", OTELCOL_SAMPLE_PERCENTAGE="100", OTELCOL_FILE_MAX_MEGABYTES="1",
                          OTELCOL_BATCH_TIMEOUT="200ms",
                          OTELCOL_BACKEND_ENDPOINT=f"127.0.0.1:{jaeger.grpc}")
    started(stack, collector)
    # in-process redaction off: the Collector's redaction processor is the one under test
    own = run_demo(e2e_dir, collector.http, "support-agent-e2e", OTEL_AGENT_TRACE_REDACT="false")
    _send_filler(collector.http, 3.0)

    own_spans = otlp_spans([own])
    demo_traces = set(_by_trace(own_spans))
    assert len(demo_traces) == 4
    assert any(pii in json.dumps(s["attrs"]) + json.dumps(s.get("events", [])) for s in own_spans for pii in SEEDED_PII), \
        "the seeded PII must reach the Collector for its redaction to be tested"

    def all_demo_traces_written() -> bool:
        got = _by_trace([s for s in otlp_spans(files_of(collector.files)) if s["traceId"] in demo_traces])
        return set(got) == demo_traces and sum(map(len, got.values())) == len(own_spans)

    wait_for(all_demo_traces_written, "the Collector to write every span of the demo's four runs")
    wait_for(lambda: len(files_of(collector.files)) > 1, "the Collector's file to rotate past 1 MB")
    collector.stop()

    files = files_of(collector.files)
    assert all(f.read_bytes()[4:8] == b"\x28\xb5\x2f\xfd" for f in files), "every file is length-prefixed zstd"
    got_spans = [s for s in otlp_spans(files) if s["traceId"] in demo_traces]

    # redaction: no seeded PII value passes; hashes and token counts come through unchanged
    written = json.dumps([[s["attrs"], s.get("events", [])] for s in got_spans])
    assert not [pii for pii in SEEDED_PII if pii in written]
    own_by_id = {s["spanId"]: s for s in own_spans}
    compared = 0
    for span in got_spans:
        for key in HASH_KEYS + TOKEN_KEYS:
            if key in own_by_id[span["spanId"]]["attrs"]:
                assert span["attrs"].get(key) == own_by_id[span["spanId"]]["attrs"][key], (span["name"], key)
                compared += 1
    assert compared > 20

    # the analyzer over the Collector's rotated zstd files = over the demo's own agent_trace_file
    from_file = analyze(str(collector.files))
    reference = analyze(str(own))
    assert _findings(from_file, demo_traces) == _findings(reference, demo_traces)
    assert sum(1 for r in reference["runs"] if r["origin"]) == 2

    # Jaeger got the same traces, with our GenAI attributes and links as references
    def jaeger_traces() -> list[dict]:
        url = f"{jaeger.url}/api/traces?service=support-agent-e2e&limit=50&lookback=1h"
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)["data"]

    wait_for(lambda: {t["traceID"] for t in jaeger_traces()} == demo_traces, "Jaeger to return the four runs")
    tags = {tag["key"] for t in jaeger_traces() for s in t["spans"] for tag in s["tags"]}
    assert {"gen_ai.operation.name", "gen_ai.usage.input_tokens", "agent_trace.context.hash"} <= tags
    assert any(ref["refType"] == "FOLLOWS_FROM" for t in jaeger_traces() for s in t["spans"] for ref in s["references"])
    from_jaeger = analyze("--jaeger", jaeger.url, "--service", "support-agent-e2e")
    origins = lambda report: {t: f[2] for t, f in _findings(report, demo_traces).items()}  # noqa: E731
    assert origins(from_jaeger) == origins(reference)


def test_share_zero_keeps_every_failing_run_whole_and_drops_healthy_ones(binaries, e2e_dir, stack) -> None:
    collector = Collector(binaries["otelcol-agent-trace"], "collector-config.yaml", e2e_dir, "collector-zero",
                          OTELCOL_DECISION_WAIT="10s", OTELCOL_SAMPLE_PERCENTAGE="0",
                          OTELCOL_BACKEND_ENDPOINT="127.0.0.1:1")  # nothing listens: the file is what we check
    started(stack, collector)
    own = run_demo(e2e_dir, collector.http, "support-agent-zero")
    own_traces = _by_trace(otlp_spans([own]))
    failing = {t for t, spans in own_traces.items() if any(map(_failing, spans))}
    assert failing and failing != set(own_traces), "the demo has failing and healthy runs"

    wait_for(lambda: set(_by_trace(otlp_spans(files_of(collector.files)))) >= failing,
             "the Collector to write the failing runs")
    collector.stop()
    got = _by_trace(otlp_spans(files_of(collector.files)))
    assert set(got) == failing, "failing runs kept, healthy runs dropped"
    for trace_id in failing:
        assert sorted(s["spanId"] for s in got[trace_id]) == sorted(s["spanId"] for s in own_traces[trace_id])
    reference = analyze(str(own))
    assert _findings(analyze(str(collector.files)), failing) == _findings(reference, failing)
