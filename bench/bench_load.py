"""Load through the real SDK: a burst of agent runs, tail sampling at 0.01, 1% failing; and a
compressed soak (many runs back to back) watching memory.

Whole-process run (not a test). Each run is an `invoke_agent` root with an `agent_step`, a `chat`
and an `execute_tool` span (4 spans) created by the real SDK tracer, with a ~300-character
message attribute, through `processor.install` (redaction on, tail sampling) and the SDK's
`BatchSpanProcessor` (bounded queue) into `agent_trace_file`. One run in 100 fails (its tool
span has status ERROR). It prints one JSON line:

- `runs`, `seconds`, `runs_per_s`, `spans_per_s` (spans created / wall time, all on one thread);
- `failing`, `failing_written` (failing runs with all 4 spans in the file: the promise is all),
  `written_spans`, `dropped_by_batch_queue` (what the SDK's bounded queue dropped, if anything);
- `peak_rss_mb`, and `rss_mb` sampled every tenth of the runs (steady memory: the soak's
  figure is the growth from the 20% checkpoint to the end);
- the sampler's counters (`max_buffered_spans` <= `--max-spans` shows the cap held).

    python bench/bench_load.py --runs 1000000            # the long soak (docs/reliability.md)
    python bench/bench_load.py --runs 20000 --rate 10000  # a paced burst at 10k runs/s

tests/test_load.py runs short versions of both.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time

import orjson
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import Status, StatusCode, set_span_in_context

from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.processor import install
from otel_agent_trace.semconv import GEN_AI_INPUT_MESSAGES, GEN_AI_OPERATION_NAME, STEP_INDEX

MESSAGE = "The customer asked about the refund of order A-{n}; the tool returned the order and its items. " * 3
DISTINCT = 5000  # distinct message texts (agents repeat their contexts; the redaction cache holds them)


def rss_mb(field: str = "VmRSS") -> float:
    """Resident (or, with VmHWM, peak resident) MB of this process image. Not `ru_maxrss`: on
    Linux it keeps the high-water mark of the process that forked us across exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


class _QueueDrops(logging.Handler):
    """Counts the SDK's 'queue is full' warnings (the BatchSpanProcessor drops spans then)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "full" in record.getMessage().lower() or "drop" in record.getMessage().lower():
            self.count += 1


def run(runs: int, rate: float, path: str, max_spans: int, max_bytes: int, queue: int, head: bool = False,
        interleave: int = 1) -> dict:
    """`head`: the baseline, no processor of ours; the SDK's own head sampler at 0.01 instead
    (what a user without tail sampling runs; it loses most failing runs)."""
    drops = _QueueDrops()
    logging.getLogger("opentelemetry.sdk").addHandler(drops)
    sampler = ParentBased(TraceIdRatioBased(0.01)) if head else None
    provider = TracerProvider(resource=Resource.create({"service.name": "load"}), sampler=sampler)
    batch = BatchSpanProcessor(AgentTraceFileExporter(path), max_queue_size=queue)
    provider.add_span_processor(batch)
    ours = None if head else install(provider, redact=True, redact_key="load", sample_ratio=0.01,
                                     sampler_max_spans=max_spans, sampler_max_bytes=max_bytes)
    tracer = provider.get_tracer("load")
    failing: set[str] = set()
    checkpoints: list[float] = []
    every = max(1, runs // 10)
    t0 = time.perf_counter()
    roots: list = []
    for n in range(runs):
        if rate:
            ahead = n / rate - (time.perf_counter() - t0)
            if ahead > 0.001:
                time.sleep(ahead)
        root = tracer.start_span("invoke_agent support", attributes={GEN_AI_OPERATION_NAME: "invoke_agent"})
        ctx = set_span_in_context(root)
        with tracer.start_as_current_span("agent_step 0", context=ctx, attributes={STEP_INDEX: 0}):
            with tracer.start_as_current_span("chat gpt-x", attributes={GEN_AI_INPUT_MESSAGES: MESSAGE.format(n=n % DISTINCT)}):
                pass
            with tracer.start_as_current_span("execute_tool lookup_order") as tool:
                if n % 100 == 7:
                    tool.set_status(Status(StatusCode.ERROR, "lookup failed"))
                    failing.add(f"{root.get_span_context().trace_id:032x}")
        roots.append(root)
        if len(roots) >= interleave:  # `interleave` runs are open at once: their spans wait in the sampler
            for r in roots:
                r.end()
            roots.clear()
        if (n + 1) % every == 0:
            checkpoints.append(round(rss_mb(), 1))
    for r in roots:
        r.end()
    seconds = time.perf_counter() - t0
    stats = ours.stats if ours is not None else {}
    provider.shutdown()
    spans_by_trace: dict[str, int] = {}
    with open(path, "rb") as f:
        for line in f:
            for rs in orjson.loads(line).get("resourceSpans", []):
                for ss in rs.get("scopeSpans", []):
                    for span in ss.get("spans", []):
                        spans_by_trace[span["traceId"]] = spans_by_trace.get(span["traceId"], 0) + 1
    return {
        "variant": "head sampling 0.01, no processor (baseline)" if head else "tail sampling 0.01 + redaction",
        "runs": runs, "interleave": interleave, "rate_asked": rate, "seconds": round(seconds, 2), "runs_per_s": round(runs / seconds),
        "spans_per_s": round(4 * runs / seconds), "failing": len(failing),
        "failing_written": sum(1 for t in failing if spans_by_trace.get(t) == 4),
        "written_spans": sum(spans_by_trace.values()), "written_traces": len(spans_by_trace),
        "dropped_by_batch_queue": drops.count,
        "peak_rss_mb": round(rss_mb("VmHWM"), 1),
        "rss_mb": checkpoints, "sampler": stats, "max_spans": max_spans, "max_bytes": max_bytes,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1_000_000)
    ap.add_argument("--rate", type=float, default=0.0, help="runs per second to pace at (0: as fast as possible)")
    ap.add_argument("--max-spans", type=int, default=20_000, help="the sampler's span cap")
    ap.add_argument("--max-bytes", type=int, default=16 << 20, help="the sampler's byte cap")
    ap.add_argument("--queue", type=int, default=2048, help="the BatchSpanProcessor's queue size")
    ap.add_argument("--interleave", type=int, default=1, help="runs open at once (their spans wait in the sampler)")
    ap.add_argument("--baseline", action="store_true", help="also run the head-sampling baseline first, same runs")
    ap.add_argument("--out", default=None, help="trace file (default: a temporary one, removed)")
    ap.add_argument("--smoke", action="store_true", help="the test suite's run: a few iterations (tests/test_bench_smoke.py)")
    args = ap.parse_args()
    if args.smoke:
        args.runs = 200
    with tempfile.TemporaryDirectory() as tmp:
        path = args.out or os.path.join(tmp, "load.jsonl")
        if args.baseline:
            print(json.dumps(run(args.runs, args.rate, path + ".head", args.max_spans, args.max_bytes, args.queue, head=True,
                                 interleave=args.interleave)))
        print(json.dumps(run(args.runs, args.rate, path, args.max_spans, args.max_bytes, args.queue,
                             interleave=args.interleave)))


if __name__ == "__main__":
    main()
