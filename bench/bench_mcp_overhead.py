#!/usr/bin/env python3
"""Overhead per MCP `ClientSession.call_tool` over stdio: instrumented vs not, in one process.

    .venv/bin/python bench/bench_mcp_overhead.py [--calls 100] [--rounds 5]

The real `mcp` client talks to examples/mcp_server.py (a subprocess over stdio) inside an
`agent_run`; each round times a block of uninstrumented calls, then `instrument()` (real SDK
provider, `BatchSpanProcessor` to a no-op exporter) and a block of instrumented ones, then
`uninstrument()`. Per round: median(instrumented) - median(uninstrumented) per call; the figure
is the median over rounds, with the ratio of the medians. What the user gets: their call's latency.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import mcp_agent  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult  # noqa: E402

from otel_agent_trace import agent_run  # noqa: E402
from otel_agent_trace.instrumentor import AgentTraceInstrumentor  # noqa: E402


class _Discard(SpanExporter):
    def export(self, spans):  # type: ignore[no-untyped-def]
        return SpanExportResult.SUCCESS


async def _block(session: ClientSession, calls: int) -> list[float]:
    times = []
    with agent_run("bench"):
        for i in range(calls):
            start = time.perf_counter()
            await session.call_tool("lookup_order", {"order_id": "A1001" if i % 2 else "A10O2"})
            times.append(time.perf_counter() - start)
    return times


async def main(calls: int, rounds: int) -> None:
    instrumentor = AgentTraceInstrumentor()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(_Discard()))
    plain, traced, overheads = [], [], []
    async with stdio_client(mcp_agent.server_parameters()) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            await _block(session, 20)  # warm-up
            for _ in range(rounds):
                base = statistics.median(await _block(session, calls))
                instrumentor.instrument(tracer_provider=provider)
                ours = statistics.median(await _block(session, calls))
                instrumentor.uninstrument()
                provider.force_flush()
                plain.append(base)
                traced.append(ours)
                overheads.append(ours - base)
    base, ours = statistics.median(plain), statistics.median(traced)
    print(f"call_tool over stdio, {rounds} rounds x {calls} calls: median {base * 1e6:.0f} us plain, "
          f"{ours * 1e6:.0f} us instrumented; overhead {statistics.median(overheads) * 1e6:.0f} us per call "
          f"(ratio {ours / base:.3f})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="the test suite's run: 5 calls, 1 round")
    options = parser.parse_args()
    if options.smoke:
        options.calls, options.rounds = 5, 1
    asyncio.run(main(options.calls, options.rounds))
