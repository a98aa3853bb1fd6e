"""`serve` behind the real Collector: the load-balancing tier (deploy/collector-gateway.yaml,
routing by trace id over OTLP/gRPC) in front of two `serve` processes. Every trace is analysed
exactly once, at one instance, none split, and the findings equal `analyze` over the same traces."""

from __future__ import annotations


from conftest import analyze, run_demo
from procs import Collector, free_port, started
from serve_helpers import ServeProcess, by_run, findings_of, wait_for

DEMO_ROUNDS = 3  # 4 tickets each: 12 traces over the ring


def test_two_serve_instances_behind_the_load_balancing_collector(binaries, e2e_dir, stack) -> None:
    otelcol = binaries["otelcol-agent-trace"]
    grpc_ports = [free_port(), free_port()]
    serves = []
    for i, port in enumerate(grpc_ports):
        serve = ServeProcess(e2e_dir / f"serve-{i}" / "findings.jsonl", "--grpc", f"127.0.0.1:{port}",
                             "--decision-wait", "2")
        stack.callback(serve.kill)
        serves.append(serve)
    backends = "[" + ", ".join(f"127.0.0.1:{p}" for p in grpc_ports) + "]"
    gateway = Collector(otelcol, "collector-gateway.yaml", e2e_dir, "serve-gateway", OTELCOL_SAMPLERS=backends)
    started(stack, gateway)
    own_files = [run_demo(e2e_dir / "serve-demo", gateway.http, f"support-agent-{r}") for r in range(DEMO_ROUNDS)]
    expected = analyze(*map(str, own_files))["runs"]
    assert len(expected) == 4 * DEMO_ROUNDS

    def analysed() -> int:
        return sum(len(findings_of(s.findings)) for s in serves)

    wait_for(lambda: analysed() >= len(expected), "both serve instances to analyse every run", timeout=120)
    gateway.stop()
    assert [s.stop() for s in serves] == [0, 0]
    per_serve = [findings_of(s.findings) for s in serves]
    assert all(per_serve), "the trace-id ring spread the traces over both instances"
    traces = [{e["trace_id"] for e in found} for found in per_serve]
    assert not traces[0] & traces[1], "each trace analysed at one instance only (none split)"
    every = [e for found in per_serve for e in found]
    assert len(every) == len(expected), "every run analysed exactly once"
    assert by_run(every) == by_run(expected)
