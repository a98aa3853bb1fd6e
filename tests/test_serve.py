"""`otel-agent-trace serve`: real OTLP exporters post to a real `serve` process; what it writes
is compared with `analyze --format json` over the same spans written to a file."""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request
from pathlib import Path

import openai
import pytest
import support_agent
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from scenario_agent import analyze_json
from serve_helpers import ServeProcess, by_run, findings_of, wait_for

from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.instrumentor import AgentTraceInstrumentor


def record_tickets(base_url: str, file: Path, endpoint: str | None, compression: Compression = Compression.Gzip,
                   rounds: int = 1, grpc: bool = False) -> None:
    """The demo's tickets through the real openai client; spans to `file` and, when given, to
    `endpoint` with the real OTLP/HTTP protobuf exporter (`grpc`: the OTLP/gRPC one)."""
    client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0)
    provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
    provider.add_span_processor(BatchSpanProcessor(AgentTraceFileExporter(str(file))))
    if endpoint and grpc:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        provider.add_span_processor(BatchSpanProcessor(GrpcExporter(endpoint=endpoint, insecure=True)))
    elif endpoint:
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, compression=compression)))
    instrumentor = AgentTraceInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
    instrumentor.instrument(tracer_provider=provider, entrypoints="support_agent:handle_ticket")
    try:
        for _ in range(rounds):
            for ticket in support_agent.TICKETS:
                try:
                    support_agent.handle_ticket(client, ticket)
                except (support_agent.MissingRefundAmount, support_agent.StepLimitExceeded):
                    pass
    finally:
        instrumentor.uninstrument()
        support_agent._carrier_calls.clear()
    provider.shutdown()


def test_findings_are_analyze_runs_entries_from_the_real_otlp_exporter(tmp_path: Path, demo_server) -> None:
    findings, traces = tmp_path / "findings.jsonl", tmp_path / "traces.jsonl"
    with ServeProcess(findings, "--decision-wait", "0.2", "--findings-max-bytes", "8000") as serve:
        record_tickets(demo_server.base_url, traces, serve.url, rounds=2)
        expected = analyze_json(traces)["runs"]
        assert len(expected) == 2 * len(support_agent.TICKETS)
        assert {r["status"] for r in expected} >= {"ok", "failed"}, "the demo has healthy and failing runs"
        # analysed while running, once each trace is complete (not only at shutdown)
        wait_for(lambda: len(findings_of(findings)) == len(expected), "every run's finding line")
        assert serve.stop() == 0
    got = findings_of(findings)
    assert len(got) == len(expected), "each run analysed exactly once"
    assert by_run(got) == by_run(expected)
    assert "traces_analysed 8" in serve.stderr and "spans_evicted 0" in serve.stderr
    from otel_agent_trace.rotating_file import backups_of

    assert backups_of(str(findings)), "rotated like our trace files (whole lines; findings_of read them all)"


def test_grpc_receiver_from_the_real_otlp_grpc_exporter(tmp_path: Path, demo_server) -> None:
    """--grpc: what the Collector's load-balancing exporter speaks."""
    findings, traces = tmp_path / "findings.jsonl", tmp_path / "traces.jsonl"
    with ServeProcess(findings, "--decision-wait", "0.2", "--grpc", "127.0.0.1:0") as serve:
        record_tickets(demo_server.base_url, traces, f"127.0.0.1:{serve.grpc_port}", grpc=True)
        assert serve.stop() == 0
    expected = analyze_json(traces)["runs"]
    assert len(findings_of(findings)) == len(expected)
    assert by_run(findings_of(findings)) == by_run(expected)


def test_json_and_gzip_bodies_and_exactly_the_two_flags(tmp_path: Path, demo_server) -> None:
    """A script starts serve with only --listen and --findings; OTLP JSON bodies, plain and
    gzipped, as the Collector's otlphttp exporter sends them with `encoding: json`."""
    traces = tmp_path / "traces.jsonl"
    record_tickets(demo_server.base_url, traces, None)
    findings = tmp_path / "findings.jsonl"
    with ServeProcess(findings) as serve:
        lines = traces.read_bytes().splitlines()
        for number, line in enumerate(lines):
            zipped = number % 2 == 1
            request = urllib.request.Request(serve.url, data=gzip.compress(line) if zipped else line, method="POST",
                                             headers={"Content-Type": "application/json",
                                                      **({"Content-Encoding": "gzip"} if zipped else {})})
            with urllib.request.urlopen(request, timeout=10) as response:
                assert response.status == 200
                assert json.loads(response.read()) == {}
        assert serve.stop() == 0  # SIGTERM: what is held (decision_wait not over) is analysed, then it exits
    assert by_run(findings_of(findings)) == by_run(analyze_json(traces)["runs"])


def _post(url: str, body: bytes, kind: str = "application/json") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": kind})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _trace(trace_number: int, error: bool, spans: int = 1, root: bool = True) -> bytes:
    """An OTLP JSON request of one trace: a root span and `spans - 1` children."""
    trace_id = f"{trace_number:032x}"
    items = []
    for i in range(spans):
        span = {"traceId": trace_id, "spanId": f"{trace_number:08x}{i + 1:08x}", "name": "invoke_agent a" if i == 0 else f"step {i}",
                "startTimeUnixNano": str(1_000 + i), "endTimeUnixNano": str(2_000 + i),
                "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}}] if i == 0 else []}
        if i:
            span["parentSpanId"] = f"{trace_number:08x}{1:08x}"
        elif not root:
            span["parentSpanId"] = "ffffffffffffffff"
        if error:
            span["status"] = {"code": 2, "message": "boom"}
        items.append(span)
    return json.dumps({"resourceSpans": [{"resource": {"attributes": []},
                                          "scopeSpans": [{"scope": {"name": "t"}, "spans": items}]}]}).encode()


def test_bounds_evict_the_oldest_healthy_trace_keep_errors_then_push_back(tmp_path: Path) -> None:
    findings = tmp_path / "findings.jsonl"
    # decision_wait of an hour: nothing completes, so the caps are what is exercised
    with ServeProcess(findings, "--decision-wait", "3600", "--max-traces", "2", "--max-spans-per-trace", "3") as serve:
        assert _post(serve.url, _trace(1, error=False, root=False))[0] == 200
        assert _post(serve.url, _trace(2, error=True, root=False))[0] == 200
        assert _post(serve.url, _trace(3, error=True, root=False))[0] == 200  # evicts trace 1, the healthy one
        status, headers, body = _post(serve.url, _trace(4, error=False, root=False))
        assert status == 429 and headers["Retry-After"] == "1", "every trace held has an error: push back"
        assert "error" in json.loads(body)["message"]
        status, _, body = _post(serve.url, _trace(2, error=True, spans=5, root=False))  # 5 more spans: 2 fit
        assert status == 200 and json.loads(body)["partialSuccess"]["rejectedSpans"] == "3"
        assert _post(serve.url, _trace(1, error=False, root=False))[0] == 200  # evicted: late, dropped
        assert _post(serve.url.replace("/v1/traces", "/v1/metrics"), b"{}")[0] == 404
        assert _post(serve.url, b"{not json")[0] == 400
        assert _post(serve.url, b"x", "text/plain")[0] == 415
        assert serve.stop() == 0
    kept = {e["trace_id"] for e in findings_of(findings)}
    assert kept == {f"{2:032x}", f"{3:032x}"}, "the traces with an error were analysed at shutdown; the evicted one not"
    for counted in ("traces_evicted 1", "spans_evicted 1", "spans_over_cap 3", "late_spans 1", "requests_refused 1"):
        assert counted in serve.stderr


def test_a_slow_analysis_pushes_back_with_429_and_shutdown_with_503(tmp_path: Path) -> None:
    """--max-backlog 0: the analysis is always "behind" (429); the Intake in a real HTTP server,
    in-process, answers 503 while shutting down."""
    findings = tmp_path / "findings.jsonl"
    with ServeProcess(findings, "--max-backlog", "0") as serve:
        status, headers, body = _post(serve.url, _trace(1, error=False), "application/x-protobuf")
        assert status == 429 and headers["Retry-After"] == "1"
        from google.rpc.status_pb2 import Status

        assert Status.FromString(body).code == 8  # RESOURCE_EXHAUSTED, in the request's encoding
        assert serve.stop() == 0

    from otel_agent_trace.rotating_file import RotatingLineFile
    from otel_agent_trace.serve.analyst import Analyst
    from otel_agent_trace.serve.held import HeldTraces
    from otel_agent_trace.serve.receiver import Intake, make_server, serve_in_thread

    held = HeldTraces()
    intake = Intake(held, Analyst(held, RotatingLineFile(str(tmp_path / "f.jsonl"))), max_backlog=10)
    server = make_server(("127.0.0.1", 0), intake)
    serve_in_thread(server)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
        assert _post(url, _trace(1, error=False))[0] == 200
        intake.closing = True
        status, headers, _ = _post(url, _trace(2, error=False))
        assert status == 503 and headers["Retry-After"] == "1"
        assert len(held) == 1
    finally:
        server.shutdown()
        server.server_close()


def test_metrics_of_the_findings_and_finding_spans_back_to_an_otlp_endpoint(tmp_path: Path, demo_server) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    received: list[bytes] = []

    class Backend(BaseHTTPRequestHandler):  # a trace backend's OTLP/HTTP intake
        def do_POST(self) -> None:  # noqa: N802
            received.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    backend = ThreadingHTTPServer(("127.0.0.1", 0), Backend)
    Thread(target=backend.serve_forever, daemon=True).start()
    findings, traces = tmp_path / "findings.jsonl", tmp_path / "traces.jsonl"
    try:
        serve = ServeProcess(findings, "--decision-wait", "0.2", "--export-findings",
                             f"http://127.0.0.1:{backend.server_address[1]}/v1/traces",
                             env={"OTEL_METRICS_EXPORTER": "otlp_json_file"})
        with serve:
            record_tickets(demo_server.base_url, traces, serve.url)
            assert serve.stop() == 0
    finally:
        backend.shutdown()
    runs = by_run(analyze_json(traces)["runs"])
    failing = {k: r for k, r in runs.items() if r["status"] != "ok" and r["origin"]}
    assert failing
    spans = [s for body in received for rs in ExportTraceServiceRequest.FromString(body).resource_spans
             for ss in rs.scope_spans for s in ss.spans]
    assert len(spans) == len(failing)
    for span in spans:
        key = (span.trace_id.hex(), span.parent_span_id.hex())
        run = failing[key]  # in the run's trace, under the run span
        assert [(k.trace_id.hex(), k.span_id.hex()) for k in span.links] == [key]
        origin = run["origin"]
        assert span.name == f"origin: step {origin['step_index']} {origin['tool'] or origin['span_name']}, " \
                            f"{origin['error_type']}"
    # metrics: the runs by status and origin, as exported at shutdown (OTLP JSON on stdout)
    points = {}
    for line in serve.stdout_path.read_text().splitlines():
        for rm in json.loads(line)["resourceMetrics"]:
            for sm in rm["scopeMetrics"]:
                for metric in sm["metrics"]:
                    if metric["name"] == "agent_trace.serve.runs":
                        for point in metric["sum"]["dataPoints"]:
                            attrs = {a["key"]: next(iter(a["value"].values())) for a in point["attributes"]}
                            points[tuple(sorted(attrs.items()))] = int(point["asInt"])
    expected: dict[tuple, int] = {}
    for run in runs.values():
        attrs = {"agent_trace.run.status": run["status"], "gen_ai.agent.name": run["agent"]}
        if run["origin"]:
            attrs.update({"agent_trace.origin.error_type": run["origin"]["error_type"],
                          "agent_trace.bug_class": run["bug_class"], "gen_ai.tool.name": run["origin"]["tool"] or ""})
        key = tuple(sorted(attrs.items()))
        expected[key] = expected.get(key, 0) + 1
    assert points == expected


@pytest.mark.parametrize("argv", [["--listen", "nonsense"], ["--listen", "127.0.0.1:0", "--rules", "/nonexistent"]])
def test_unusable_arguments_exit_2(tmp_path: Path, argv: list[str], capsys) -> None:
    from otel_agent_trace import cli

    assert cli.main(["serve", "--findings", str(tmp_path / "f.jsonl"), *argv]) == 2
    assert "otel-agent-trace serve:" in capsys.readouterr().err


def test_grpc_push_back_is_resource_exhausted_with_retry_info(tmp_path: Path) -> None:
    import grpc
    from google.rpc import error_details_pb2, status_pb2
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    with ServeProcess(tmp_path / "findings.jsonl", "--max-backlog", "0", "--grpc", "127.0.0.1:0") as serve:
        with grpc.insecure_channel(f"127.0.0.1:{serve.grpc_port}") as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            with pytest.raises(grpc.RpcError) as raised:
                stub.Export(ExportTraceServiceRequest(), timeout=10)
        assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        details = dict(raised.value.trailing_metadata())["grpc-status-details-bin"]
        info = error_details_pb2.RetryInfo()
        assert status_pb2.Status.FromString(details).details[0].Unpack(info)
        assert info.retry_delay.seconds == 1
        assert serve.stop() == 0
