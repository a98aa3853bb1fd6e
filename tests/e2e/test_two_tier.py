"""Two-tier scale-out for real: two load-balancing gateways (deploy/collector-gateway.yaml, static
resolver) in front of two tail-sampling Collectors (deploy/collector-config.yaml, share 0)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import files_of, otlp_spans, wait_for
from procs import Collector, started

HERE = Path(__file__).resolve().parent
RUNS = 16


def test_split_failing_runs_meet_whole_at_one_sampler_and_healthy_ones_are_dropped(binaries, e2e_dir, stack) -> None:
    otelcol = binaries["otelcol-agent-trace"]
    samplers = [Collector(otelcol, "collector-config.yaml", e2e_dir, f"sampler-{i}", OTELCOL_DECISION_WAIT="15s",
                          OTELCOL_SAMPLE_PERCENTAGE="0", OTELCOL_BACKEND_ENDPOINT="127.0.0.1:1")
                for i in range(2)]
    backends = "[" + ", ".join(f"127.0.0.1:{s.grpc}" for s in samplers) + "]"
    gateways = [Collector(otelcol, "collector-gateway.yaml", e2e_dir, f"gateway-{i}", OTELCOL_SAMPLERS=backends)
                for i in range(2)]
    started(stack, *samplers, *gateways)

    carriers = e2e_dir / "carriers.json"
    for role, gateway, arg in (("planner", gateways[0], [str(RUNS), str(carriers)]), ("tools", gateways[1], [str(carriers)])):
        done = subprocess.run([sys.executable, str(HERE / "split_agent.py"), role,
                               f"http://127.0.0.1:{gateway.http}/v1/traces", *arg],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr

    def by_sampler() -> list[dict[str, list[dict]]]:
        out = []
        for sampler in samplers:
            traces: dict[str, list[dict]] = {}
            for span in otlp_spans(files_of(sampler.files)):
                traces.setdefault(span["traceId"], []).append(span)
            out.append(traces)
        return out

    failing_runs = RUNS // 2
    wait_for(lambda: sum(len(t) for t in by_sampler()) >= failing_runs, "both samplers to write the failing runs")
    for service in gateways + samplers:
        service.stop()

    kept = by_sampler()
    assert all(kept), "the trace-id ring spread the runs over both samplers"
    assert not set(kept[0]) & set(kept[1]), "each trace decided at exactly one sampler"
    runs_kept = set()
    for traces in kept:
        for spans in traces.values():
            services = {s["service"] for s in spans}
            assert services == {"planner", "tools"}, "the two halves met at one sampler and were kept whole"
            assert len(spans) == 2
            run = {int(s["attrs"]["run"]) for s in spans}
            assert len(run) == 1
            runs_kept |= run
    assert runs_kept == {i for i in range(RUNS) if i % 2 == 0}, "every failing run kept, every healthy one dropped"
