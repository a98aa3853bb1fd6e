"""deploy/collector-serve.yaml over collector-config.yaml, on the real Collector: the traces the
sampling tier keeps reach `serve` (findings equal `analyze` of what the Collector wrote), and the
recorder's metrics arrive in the metrics file with values that match the traces of the same runs."""

from __future__ import annotations

import json
from collections import Counter

from conftest import analyze, files_of, otlp_spans, run_demo, wait_for
from procs import Collector, free_port, started
from serve_helpers import ServeProcess, by_run, findings_of


def _metric_points(path) -> dict[str, list[dict]]:
    """metric name -> its data points in the latest export that has it (cumulative temporality:
    the latest holds the totals), each with its attributes decoded."""
    out: dict[str, list[dict]] = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line still being written
        latest: dict[str, list[dict]] = {}
        for rm in record.get("resourceMetrics", []):
            for sm in rm.get("scopeMetrics", []):
                for metric in sm.get("metrics", []):
                    data = metric.get("sum") or metric.get("histogram") or {}
                    for point in data.get("dataPoints", []):
                        attrs = {a["key"]: next(iter(a["value"].values())) for a in point.get("attributes", [])}
                        latest.setdefault(metric["name"], []).append({**point, "attrs": attrs})
        out.update(latest)
    return out


def test_sampled_traces_teed_to_serve_and_metrics_through_the_collector(binaries, e2e_dir, stack) -> None:
    grpc = free_port()
    serve = ServeProcess(e2e_dir / "tee" / "findings.jsonl", "--grpc", f"127.0.0.1:{grpc}", "--decision-wait", "1")
    stack.callback(serve.kill)
    metrics_file = e2e_dir / "tee-metrics" / "agent-metrics.jsonl"
    sampler = Collector(binaries["otelcol-agent-trace"], "collector-config.yaml", e2e_dir, "tee-sampler",
                        overlays=("collector-serve.yaml",), OTELCOL_DECISION_WAIT="2s",
                        OTELCOL_SAMPLE_PERCENTAGE="100", OTELCOL_BATCH_TIMEOUT="1s",
                        OTELCOL_BACKEND_ENDPOINT="127.0.0.1:1", OTELCOL_SERVE_ENDPOINT=f"127.0.0.1:{grpc}",
                        OTELCOL_METRICS_FILE_PATH=str(metrics_file))
    started(stack, sampler)
    run_demo(e2e_dir / "tee-demo", sampler.http, "support-agent",
             OTEL_METRICS_EXPORTER="otlp", OTEL_EXPORTER_OTLP_METRICS_PROTOCOL="http/protobuf",
             OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=f"http://127.0.0.1:{sampler.http}/v1/metrics")
    wait_for(lambda: len(findings_of(serve.findings)) >= 4, "serve to analyse the four runs")
    wait_for(lambda: "agent_trace.runs" in _metric_points(metrics_file), "the agent metrics in the Collector's file")
    sampler.stop()
    assert serve.stop() == 0
    written = files_of(sampler.files)
    runs = analyze(*map(str, written))["runs"]
    assert len(runs) == 4
    assert by_run(findings_of(serve.findings)) == by_run(runs), "serve found what analyze finds in the written traces"

    # the metrics against the traces of the same runs
    spans = otlp_spans(written)
    run_spans = [s for s in spans if s["attrs"].get("gen_ai.operation.name") == "invoke_agent"]
    statuses = Counter("failed" if s.get("status", {}).get("code") in (2, "STATUS_CODE_ERROR") else "ok"
                       for s in run_spans)
    points = _metric_points(metrics_file)
    counted = Counter()
    for point in points["agent_trace.runs"]:
        counted[point["attrs"]["agent_trace.run.status"]] += int(point["asInt"])
    assert counted == statuses
    steps = points["agent_trace.run.steps"]
    assert sum(int(p["count"]) for p in steps) == len(run_spans)
    assert sum(float(p["sum"]) for p in steps) == sum(1 for s in spans if s["name"].startswith("agent_step"))
    # opentelemetry-instrument also loads the official openai-v2 instrumentation (installed here):
    # each call has our chat span (under a step) and theirs (under ours, coexist=nest), and the
    # GenAI client metrics count it once, whichever scope emitted them
    steps_ids = {s["spanId"] for s in spans if s["name"].startswith("agent_step")}
    ours = [s for s in spans if s["attrs"].get("gen_ai.operation.name") == "chat" and s.get("parentSpanId") in steps_ids]
    theirs = [s for s in spans if s["attrs"].get("gen_ai.operation.name") == "chat" and s not in ours]
    assert len(theirs) == len(ours), "the official instrumentation recorded every call too"
    tokens = Counter()
    calls = 0
    for point in points["gen_ai.client.token.usage"]:
        tokens[point["attrs"]["gen_ai.token.type"]] += float(point["sum"])
    for point in points["gen_ai.client.operation.duration"]:
        calls += int(point["count"])
    assert calls == len(ours), "each call measured once, not twice"
    assert tokens["input"] == sum(int(s["attrs"]["gen_ai.usage.input_tokens"]) for s in ours)
    assert tokens["output"] == sum(int(s["attrs"]["gen_ai.usage.output_tokens"]) for s in ours)
