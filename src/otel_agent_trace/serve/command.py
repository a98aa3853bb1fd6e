"""`otel-agent-trace serve --listen HOST:PORT --findings PATH`: arguments, start, and shutdown.

SIGTERM (or SIGINT) stops taking data (503 with `Retry-After`), analyses every trace still held,
complete or not, flushes the findings, metrics and finding spans, then exits 0. Exit code 2:
unusable arguments (a port in use, an unreadable rules file, an unknown metrics exporter).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

EXIT_OK, EXIT_UNUSABLE = 0, 2


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("serve", help="analyse traces live: an OTLP receiver that writes each run's findings",
                            description="Receive OTLP traces (HTTP /v1/traces, protobuf or JSON; optionally gRPC), "
                                        "analyse each trace when complete, as `analyze` does, and append one JSON "
                                        "line per run (its `runs[]` entry of `analyze --format json`) to --findings.")
    parser.add_argument("--listen", default="127.0.0.1:4318", metavar="HOST:PORT",
                        help="OTLP/HTTP address (default 127.0.0.1:4318; port 0: any free port, printed on stderr)")
    parser.add_argument("--findings", required=True, metavar="PATH", help="the findings file (JSON Lines, rotated)")
    parser.add_argument("--grpc", metavar="HOST:PORT", help="also receive OTLP/gRPC here (what the Collector's "
                                                            "load-balancing exporter sends)")
    parser.add_argument("--decision-wait", type=float, default=5.0, metavar="S",
                        help="seconds a trace is held after its root span arrived (default 5)")
    parser.add_argument("--trace-timeout", type=float, default=300.0, metavar="S",
                        help="seconds after which a trace whose root never came is analysed anyway (default 300)")
    parser.add_argument("--max-traces", type=int, default=10_000, metavar="N",
                        help="traces held at most; the oldest without an error is evicted past it (default 10000)")
    parser.add_argument("--max-spans-per-trace", type=int, default=10_000, metavar="N",
                        help="spans held per trace; later ones are dropped and counted (default 10000)")
    parser.add_argument("--max-backlog", type=int, default=1000, metavar="N",
                        help="complete traces waiting for the analysis past which requests get 429 (default 1000)")
    parser.add_argument("--findings-max-bytes", type=int, default=100 << 20, metavar="BYTES",
                        help="rotate the findings file at this size (0: never; default 100 MiB)")
    parser.add_argument("--findings-backups", type=int, default=10, metavar="N",
                        help="rotated findings files kept (0: all; default 10)")
    parser.add_argument("--export-findings", metavar="URL",
                        help="also send each failed or suspect run's finding as a span to this OTLP/HTTP traces URL")
    parser.add_argument("--rules", help="critical-failure rules (JSON, or YAML with PyYAML), added to the built-ins")


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bad address {text!r} (HOST:PORT)")
    return host.strip("[]") or "0.0.0.0", int(port)


def run(args: argparse.Namespace) -> int:
    import logging

    from otel_agent_trace.rotating_file import RotatingLineFile
    from otel_agent_trace.serve.analyst import Analyst
    from otel_agent_trace.serve.held import HeldTraces
    from otel_agent_trace.serve.receiver import Intake, make_server, serve_in_thread
    from otel_agent_trace.serve.telemetry import FindingMetrics, FindingSpans, meter_provider_from_environment

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    rules = None
    if args.rules:
        from otel_agent_trace.analyzer.critical_rules import RulesError, load_rules

        try:
            rules = load_rules(args.rules)
        except RulesError as exc:
            return _unusable(str(exc))
    try:
        listen = _address(args.listen)
        grpc_listen = _address(args.grpc) if args.grpc else None
        findings = RotatingLineFile(args.findings, args.findings_max_bytes, args.findings_backups)
        meters = meter_provider_from_environment()
    except ValueError as exc:
        return _unusable(str(exc))
    held = HeldTraces(args.max_traces, args.max_spans_per_trace, args.decision_wait, args.trace_timeout)
    spans = FindingSpans(args.export_findings) if args.export_findings else None
    metrics: FindingMetrics | None = None

    def on_run(entry: dict[str, Any]) -> None:
        if metrics is not None:
            metrics.record(entry)
        if spans is not None:
            spans.record(entry)

    analyst = Analyst(held, findings, rules, on_run)
    if meters is not None:
        metrics = FindingMetrics(meters.get_meter("otel_agent_trace.serve"), held, analyst.stats)
    intake = Intake(held, analyst, args.max_backlog)
    try:
        server = make_server(listen, intake)
        grpc_server = None
        if grpc_listen is not None:
            from otel_agent_trace.serve.grpc_receiver import start_grpc

            grpc_server, grpc_port = start_grpc(grpc_listen, intake)
    except OSError as exc:
        return _unusable(f"cannot listen on {args.listen}: {exc.strerror or exc}")
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    analyst.start()
    serve_in_thread(server)
    host, port = server.server_address[:2]
    print(f"otel-agent-trace serve: listening on http://{host}:{port}/v1/traces"
          + (f" and grpc {grpc_listen[0]}:{grpc_port}" if grpc_server is not None else "")
          + f"; findings to {findings.path}", file=sys.stderr, flush=True)
    while not stop.wait(0.5):
        pass
    intake.closing = True  # (requests now get 503 while what is held is analysed)
    analyst.stop()
    server.shutdown()
    if grpc_server is not None:
        grpc_server.stop(grace=1).wait()
    findings.close()
    if spans is not None:
        spans.shutdown()
    if meters is not None:
        meters.shutdown()
    stats = {**held.stats, **analyst.stats}
    print("otel-agent-trace serve: stopped; " + ", ".join(f"{k} {v}" for k, v in stats.items()),
          file=sys.stderr, flush=True)
    return EXIT_OK


def _unusable(message: str) -> int:
    print(f"otel-agent-trace serve: {message}", file=sys.stderr)
    return EXIT_UNUSABLE
