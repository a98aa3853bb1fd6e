"""Tail-sampler throughput: spans/s through `TailSampler.on_end` on one core.

Whole-process benchmark (not a test). Spans are built up front (real SDK `ReadableSpan`s: an
agent run = invoke_agent root + step + chat + 2 tool spans, 1% of runs failing), then fed in
end order. Baseline in the same run: the SDK's `SynchronousMultiSpanProcessor` forwarding to a
no-op processor, the least any processor in the chain costs. Goal: >= 100k spans/s.
Run: `python bench/bench_sampler.py [--traces N] [--repeat R]`.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import (
    ReadableSpan,
    SpanProcessor,
    SynchronousMultiSpanProcessor,
)
from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

from otel_agent_trace import semconv
from otel_agent_trace.processor.redaction import Redactor
from otel_agent_trace.processor.sampling import TailSampler


def build(traces: int, seed: int = 1) -> list[ReadableSpan]:
    rnd = random.Random(seed)
    resource = Resource.create({"service.name": "bench"})
    spans: list[ReadableSpan] = []
    for t in range(traces):
        tid = rnd.getrandbits(128) or 1
        root_ctx = SpanContext(tid, rnd.getrandbits(64) or 1, False, TraceFlags(1))
        failing = t % 100 == 0
        children = []
        for name, phase in (("execute_tool query_orders", "origin" if failing else None),
                            ("execute_tool query_refunds", None), ("chat gpt-x", None), ("agent_step 0", None)):
            attrs = {semconv.GEN_AI_OPERATION_NAME: name.split()[0], semconv.STEP_INDEX: 0,
                     semconv.GEN_AI_USAGE_INPUT_TOKENS: 1200, semconv.CONTEXT_HASH: "ab" * 32}
            if phase:
                attrs[semconv.LIFECYCLE_PHASE] = phase
            ctx = SpanContext(tid, rnd.getrandbits(64) or 1, False, TraceFlags(1))
            children.append(ReadableSpan(name=name, context=ctx, parent=root_ctx, resource=resource,
                                         attributes=attrs, start_time=1, end_time=2))
        root = ReadableSpan(name="invoke_agent support", context=root_ctx, parent=None, resource=resource,
                            attributes={semconv.GEN_AI_OPERATION_NAME: "invoke_agent"},
                            status=Status(StatusCode.ERROR) if failing else Status(StatusCode.UNSET),
                            start_time=0, end_time=3)
        spans.extend(children)
        spans.append(root)
    return spans


class Noop(SpanProcessor):
    def on_end(self, span):
        pass


def rate(feed, spans) -> float:
    t0 = time.perf_counter()
    for s in spans:
        feed(s)
    return len(spans) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=40_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--smoke", action="store_true", help="the test suite's run: a few iterations (tests/test_bench_smoke.py)")
    args = ap.parse_args()
    if args.smoke:
        args.traces = 400
        args.repeat = 1
    spans = build(args.traces)
    results: dict[str, list[float]] = {"baseline: SDK multi-processor -> no-op": [],
                                       "TailSampler ratio 0.01": [], "TailSampler ratio 0.5": [],
                                       "Redactor.span (warm cache) + TailSampler 0.01": []}
    for _ in range(args.repeat):
        multi = SynchronousMultiSpanProcessor()
        multi.add_span_processor(Noop())
        results["baseline: SDK multi-processor -> no-op"].append(rate(multi.on_end, spans))
        for ratio in (0.01, 0.5):
            kept: list = []
            sampler = TailSampler(kept.append, ratio=ratio, sweep=False)
            results[f"TailSampler ratio {ratio}"].append(rate(sampler.on_end, spans))
            sampler.flush()
        red = Redactor(key="bench")
        sampler = TailSampler([].append, ratio=0.01, sweep=False)
        for s in spans[:1000]:
            red.span(s)
        results["Redactor.span (warm cache) + TailSampler 0.01"].append(
            rate(lambda s, sampler=sampler, red=red: sampler.on_end(red.span(s)), spans))
        stats = sampler.stats
    base = statistics.median(results["baseline: SDK multi-processor -> no-op"])
    print(f"{len(spans)} spans, {args.traces} traces, 1% failing; medians of {args.repeat} runs")
    print(f"{'variant':50} {'spans/s':>12} {'us/span':>8} {'vs baseline':>12}")
    for name, values in results.items():
        r = statistics.median(values)
        print(f"{name:50} {r:12,.0f} {1e6 / r:8.2f} {r / base:11.2f}x")
    print("last sampler stats:", {k: v for k, v in stats.items() if v})


if __name__ == "__main__":
    main()
