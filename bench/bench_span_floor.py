#!/usr/bin/env python3
"""The SDK's floor under our per-call overhead: what N bare spans cost, without any recorder.

    bench/.venvs/ours/bin/python bench/bench_span_floor.py [--blocks 40]

Our recorder writes 3 spans for a single-call run (invoke_agent, agent_step, chat) and 3 per
step in a tool loop (agent_step, chat, execute_tool); the official instrumentation writes 1.
This times `Tracer.start_span` + `end` of 1 and 3 spans carrying about as many attributes as
ours (process CPU, including the `BatchSpanProcessor`'s export thread through a no-op exporter,
blocks alternated with an empty block), with the real SDK's `TracerProvider`, alone and with
`AgentTraceSpanProcessor` (redaction on, tail sampler at 0.999) in front. No LLM client: the
numbers are the part of our overhead that no change in the recorder can remove.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_overhead import NoopExporter  # noqa: E402

ATTRS = {f"agent_trace.bench.a{i}": "value" if i % 2 else i for i in range(8)}


def provider(ours: bool) -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    p = TracerProvider()
    p.add_span_processor(BatchSpanProcessor(NoopExporter()))
    if ours:
        from otel_agent_trace.processor import install

        install(p, redact=True, sample_ratio=0.999)
    return p


def spans(tracer: Any, n: int) -> Callable[[], None]:
    from opentelemetry import trace

    def make() -> None:
        root = tracer.start_span("root", attributes=ATTRS)
        ctx = trace.set_span_in_context(root)
        children = [tracer.start_span(f"child {i}", context=ctx, attributes=ATTRS) for i in range(n - 1)]
        for c in reversed(children):
            c.end()
        root.end()

    return make


def block(fn: Callable[[], None], calls: int, flush: Callable[[], Any]) -> float:
    cpu0 = time.process_time_ns()
    for _ in range(calls):
        fn()
    flush()
    return (time.process_time_ns() - cpu0) / 1e3 / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--smoke", action="store_true", help="the test suite's run: a few iterations (tests/test_bench_smoke.py)")
    args = parser.parse_args()
    if args.smoke:
        args.blocks = 2
        args.calls = 5
    print("| processors | 1 span (us CPU) | 3 spans (us CPU) |\n|---|---:|---:|")
    for ours in (False, True):
        p = provider(ours)
        tracer = p.get_tracer("floor")
        one, three = spans(tracer, 1), spans(tracer, 3)
        empty = lambda: None  # noqa: E731
        got: dict[int, list[float]] = {1: [], 3: []}
        for fn in (one, three):
            block(fn, args.calls, p.force_flush)  # warm up
        for _ in range(args.blocks):
            base = block(empty, args.calls, p.force_flush)
            got[1].append(block(one, args.calls, p.force_flush) - base)
            got[3].append(block(three, args.calls, p.force_flush) - base)
        name = "BatchSpanProcessor + AgentTraceSpanProcessor (redact, sample 0.999)" if ours else "BatchSpanProcessor"
        print(f"| {name} | {statistics.median(got[1]):.0f} | {statistics.median(got[3]):.0f} |")
        p.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
