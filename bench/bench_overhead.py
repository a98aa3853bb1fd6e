#!/usr/bin/env python3
"""Overhead per `chat.completions.create` call: ours vs the official instrumentation (and peers).

    python3 bench/bench_overhead.py                         # ours + official, small and 8 KB contexts
    python3 bench/bench_overhead.py --peers                 # also OpenInference and OpenLLMetry
    python3 bench/bench_overhead.py --quick                 # fewer iterations (smoke run)
    python3 bench/bench_overhead.py --profile ours:full:large   # pyinstrument of our hot path

Each side runs in a subprocess inside its own venv (`bench/.venvs/<side>`), with the real `openai`
client over an in-process `httpx2.MockTransport` (no network), a real SDK `TracerProvider` and a
`BatchSpanProcessor` to a no-op exporter (`--exporter file` encodes OTLP JSON to /dev/null
instead). Inside one process the bench alternates blocks of uninstrumented and instrumented calls
(`instrument()` / `uninstrument()` between blocks, flushing the export queue outside the timed
region), so each round's overhead = median(instrumented) - median(uninstrumented) is measured on
the same interpreter, the same warm client and the same noisy machine minute; the reported
overhead is the median over rounds.

Workloads:
  small   2 messages (short system prompt + question), final answer: each call is a whole run;
  large   an 8 KB, 21-message context (system, user, 9 tool call/result pairs, ...), final answer;
  loop    per-call cost inside a 20-step tool loop (the context grows each call: our
          store-once content pays only for new messages; the official re-serializes the history).
Configurations:
  ours:full       content on, redaction processor in front of the exporter, tail sampler built
                  (ratio 0.999, so it buffers and decides like in production), loop detection on;
  ours:full+metrics  ours:full with metrics on (recorder/metrics.py: a MeterProvider with an
                  InMemoryMetricReader, so each call pays the instruments' aggregation; the periodic
                  export, off the calling thread, is not in it);
  ours:core       content on, no span processor (recorder cost alone);
  ours:nocontent  content off, no span processor;
  official:nocontent / official:span_only   opentelemetry-instrumentation-openai-v2 2.4b0;
  openinference:content / :nocontent        openinference-instrumentation-openai (--peers);
  openllmetry:content / :nocontent          opentelemetry-instrumentation-openai, traceloop (--peers).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _agent_loop as loop  # noqa: E402

SCRIPT = Path(__file__).resolve()
GOAL = 0.8  # roadmap item 4: our overhead at most 0.8x the official's

CONFIGS = {
    "ours": ["full", "full+metrics", "core", "nocontent"],
    "official": ["nocontent", "span_only"],
    "openinference": ["nocontent", "content"],
    "openllmetry": ["nocontent", "content"],
}
WORKLOADS = ("small", "large", "loop")
LOOP_STEPS = 20


# --- workloads ------------------------------------------------------------------------------------
def small_messages() -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You are a helpful support agent. Answer briefly."},
            {"role": "user", "content": "Where is my order A1001? It was due yesterday."}]


def large_messages(target: int = 8192) -> list[dict[str, Any]]:
    """~8 KB of context in 21 messages: system, user, 9 tool call/result pairs, a user follow-up."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": loop.SYSTEM_PROMPT},
                                      {"role": "user", "content": loop.USER_TICKET}]
    for step in range(9):
        call = loop.tool_call(step)
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": ""})
    messages.append({"role": "user", "content": "Thanks. And the refund amount, please?"})
    budget = target - len(json.dumps(messages))
    per = budget // 9
    for i, m in enumerate(m for m in messages if m["role"] == "tool"):
        m["content"] = loop.tool_result(i)[:per]
    return messages


def final_bytes() -> bytes:
    body = loop.completion({"messages": []}, steps=1)  # a final answer
    return json.dumps(body).encode()


def make_call(client: Any, workload: str) -> Callable[[], None]:
    if workload == "small":
        messages = small_messages()
    else:
        messages = large_messages()
    completions = client.chat.completions  # look `create` up per call: instrumentors patch the class

    def call() -> None:
        completions.create(model=loop.MODEL, messages=messages, tools=loop.TOOL_SCHEMAS, temperature=0.2)

    return call


# --- sides -----------------------------------------------------------------------------------------
class NoopExporter:
    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def set_env(side: str, config: str) -> None:
    content = config not in ("nocontent",)
    if side == "official":
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "span_only" if content else "no_content"
    elif side == "openinference":
        for name in ("OPENINFERENCE_HIDE_INPUTS", "OPENINFERENCE_HIDE_OUTPUTS"):
            os.environ[name] = "false" if content else "true"
    elif side == "openllmetry":
        os.environ["TRACELOOP_TRACE_CONTENT"] = "true" if content else "false"


def make_provider(exporter: str) -> Any:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "bench-agent"}))
    if exporter == "file":
        from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter

        exp: Any = FileSpanExporter(os.devnull)
    else:
        exp = NoopExporter()
    provider.add_span_processor(BatchSpanProcessor(exp))
    return provider


def make_instrumentor(side: str, config: str, provider: Any) -> tuple[Callable[[], None], Callable[[], None]]:
    """(instrument, uninstrument) for one side and configuration."""
    if side == "ours":
        from otel_agent_trace.instrumentor import AgentTraceInstrumentor

        if config in ("full", "full+metrics"):
            from otel_agent_trace.processor import install

            install(provider, redact=True, sample_ratio=0.999)
        inst: Any = AgentTraceInstrumentor()
        kwargs = {"capture_content": config != "nocontent"}
        if config == "full+metrics":
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import InMemoryMetricReader

            kwargs["meter_provider"] = MeterProvider(metric_readers=[InMemoryMetricReader()])
    elif side == "official":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        inst, kwargs = OpenAIInstrumentor(), {}
    elif side == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor

        inst, kwargs = OpenAIInstrumentor(), {}
    elif side == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        inst, kwargs = OpenAIInstrumentor(), {}
    else:
        raise SystemExit(f"unknown side {side}")
    # Toggle by swapping `Completions.create` itself: some instrumentors' `uninstrument()` does
    # not restore it (OpenLLMetry's wrappers then stack up, one more per block), and swapping
    # is the same cheap operation for every side.
    from openai.resources.chat.completions.completions import Completions

    original = Completions.__dict__["create"]
    inst.instrument(tracer_provider=provider, **kwargs)
    wrapped = Completions.__dict__["create"]
    if wrapped is original:
        # patched elsewhere (OpenInference wraps the client's `request`): toggle with its own methods
        inst.uninstrument()
        return (lambda: inst.instrument(tracer_provider=provider, **kwargs)), inst.uninstrument
    setattr(Completions, "create", original)
    return (lambda: setattr(Completions, "create", wrapped)), (lambda: setattr(Completions, "create", original))


def time_block(call: Callable[[], None], n: int) -> list[float]:
    out = []
    clock = time.perf_counter_ns
    for _ in range(n):
        t0 = clock()
        call()
        out.append((clock() - t0) / 1e3)  # microseconds
    return out


def measure_block(call: Callable[[], None], n: int, flush: Callable[[], Any]) -> tuple[float, list[float]]:
    """(process CPU us per call over the block, including the flush of the export queue; wall us per call)."""
    cpu0 = time.process_time_ns()
    walls = time_block(call, n)
    flush()
    return (time.process_time_ns() - cpu0) / 1e3 / n, walls


def child(side: str, config: str, workloads: list[str], rounds: int, iterations: int, exporter: str,
          profile: str | None) -> dict[str, Any]:
    set_env(side, config)
    import logging

    # OpenInference's flattened messages exceed the SDK's 128-attribute limit in the loop: one warning per span
    logging.getLogger("opentelemetry.attributes").setLevel(logging.ERROR)
    provider = make_provider(exporter)
    instrument, uninstrument = make_instrumentor(side, config, provider)
    response = final_bytes()
    results: dict[str, Any] = {"side": side, "config": config, "exporter": exporter}
    for workload in workloads:
        if workload == "loop":
            def respond(body: dict[str, Any]) -> dict[str, Any]:
                return loop.completion(body, LOOP_STEPS)
            client = loop.mock_client(respond)
            per_block = 1

            def call() -> None:
                loop.run_agent(client, LOOP_STEPS)
            divisor = LOOP_STEPS
            block_rounds = max(rounds, iterations // 8)
        else:
            client = loop.mock_client(lambda body: response)
            call = make_call(client, workload)
            per_block = 25 if workload == "small" else 12
            divisor = 1
            block_rounds = max(rounds, iterations * (1 if workload == "small" else 2) // 5)
        # warm up both paths (imports, caches, the interpreter's inline caches)
        time_block(call, 20 if divisor == 1 else 2)
        instrument()
        time_block(call, 20 if divisor == 1 else 2)
        provider.force_flush()
        uninstrument()
        walls: dict[str, list[float]] = {"base": [], "inst": []}
        cpus: dict[str, list[float]] = {"base": [], "inst": []}
        cpu_deltas: list[float] = []
        wall_deltas: list[float] = []
        gc.collect()
        # short blocks, alternated (ABBA): slow drifts of a noisy machine cancel out in the deltas
        for r in range(block_rounds):
            order = ("base", "inst") if r % 2 == 0 else ("inst", "base")
            got: dict[str, tuple[float, float]] = {}
            for mode in order:
                if mode == "inst":
                    instrument()
                cpu, wall = measure_block(call, per_block, provider.force_flush)
                if mode == "inst":
                    uninstrument()
                wall = [w / divisor for w in wall]
                cpu /= divisor
                got[mode] = (cpu, loop.median(wall))
                walls[mode].extend(wall)
                cpus[mode].append(cpu)
            cpu_deltas.append(got["inst"][0] - got["base"][0])
            wall_deltas.append(got["inst"][1] - got["base"][1])
        q1, q3 = loop.quartiles(cpu_deltas)
        results[workload] = {
            "base_cpu_us": loop.median(cpus["base"]), "overhead_us": loop.median(cpu_deltas),
            "overhead_q1_us": q1, "overhead_q3_us": q3,
            "base_wall_us": loop.median(walls["base"]), "inst_wall_us": loop.median(walls["inst"]),
            "overhead_wall_us": loop.median(wall_deltas),
            "blocks": block_rounds, "calls_per_block": per_block * divisor,
        }
        x = results[workload]
        print(f"[bench]   {side}:{config} {workload}: base {x['base_cpu_us']:.0f} us cpu, +{x['overhead_us']:.0f} us cpu "
              f"(wall +{x['overhead_wall_us']:.0f} us)", file=sys.stderr, flush=True)
    if profile:
        results["profile"] = run_profile(instrument, uninstrument, profile, provider, response)
    provider.shutdown()
    return results


def run_profile(instrument: Callable[[], None], uninstrument: Callable[[], None], workload: str, provider: Any,
                response: bytes) -> str:
    from pyinstrument import Profiler

    if workload == "loop":
        client = loop.mock_client(lambda body: loop.completion(body, LOOP_STEPS))

        def call() -> None:
            loop.run_agent(client, LOOP_STEPS)
        n = 60
    else:
        client = loop.mock_client(lambda body: response)
        call = make_call(client, workload)
        n = 2000
    instrument()
    time_block(call, 20)
    profiler = Profiler(interval=0.0002)
    profiler.start()
    time_block(call, n)
    provider.force_flush()
    profiler.stop()
    uninstrument()
    return profiler.output_text(unicode=False, color=False, show_all=False, timeline=False)


# --- driver ----------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peers", action="store_true", help="also OpenInference and OpenLLMetry")
    parser.add_argument("--only", nargs="+", help="side:config entries to run (default: all of the sides)")
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=WORKLOADS)
    parser.add_argument("--rounds", type=int, default=12, help="minimum number of alternating block pairs")
    parser.add_argument("--iterations", type=int, default=400,
                        help="scales the block pairs: small iterations/5 blocks of 25 calls, large 2*iterations/5 "
                             "of 12, loop iterations/8 runs of 20 steps")
    parser.add_argument("--quick", action="store_true", help="a smoke run (iterations 60)")
    parser.add_argument("--smoke", action="store_true",
                        help="the test suite's run: ours and official with this interpreter (no venvs, no --peers), "
                             "1 round of 10 iterations; every entry must give figures")
    parser.add_argument("--exporter", choices=("noop", "file"), default="noop")
    parser.add_argument("--profile", metavar="SIDE:CONFIG:WORKLOAD", help="print a pyinstrument profile of that case")
    parser.add_argument("--json", help="write the results here as JSON")
    parser.add_argument("--child", nargs=7, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        side, config, workloads, rounds, iterations, exporter, profile = args.child
        print(json.dumps(child(side, config, workloads.split(","), int(rounds), int(iterations), exporter,
                               None if profile == "-" else profile)))
        return 0
    if args.quick:
        args.rounds, args.iterations = 4, 60
    if args.smoke:
        args.rounds, args.iterations = 1, 10
        if args.peers:
            print("smoke: --peers skipped (their packages are not in this interpreter)")
            args.peers = False

    sides = ["ours", "official"] + (["openinference", "openllmetry"] if args.peers else [])
    entries = [f"{s}:{c}" for s in sides for c in CONFIGS[s]]
    if args.only:
        entries = args.only
    profile_side = profile_config = profile_workload = None
    if args.profile:
        profile_side, profile_config, profile_workload = args.profile.split(":")
        entries = [f"{profile_side}:{profile_config}"]
    pythons: dict[str, Any] = {}
    results: list[dict[str, Any]] = []
    for entry in entries:
        side, config = entry.split(":")
        if side not in pythons:
            extra = ["pyinstrument"] if side == profile_side else []
            pythons[side] = Path(sys.executable) if args.smoke else loop.ensure_venv(side, extra)
        if pythons[side] is None:
            print(f"[bench] skipping {entry}: its venv did not install", file=sys.stderr)
            continue
        print(f"[bench] {entry}", file=sys.stderr, flush=True)
        try:
            env = {"PYTHONPATH": os.pathsep.join([str(SCRIPT.parent), *sys.path[1:]])} if args.smoke else None
            res = loop.run_child(pythons[side], SCRIPT, [side, config, ",".join(args.workloads), str(args.rounds),
                                                        str(args.iterations), args.exporter, profile_workload or "-"],
                                 env=env)
        except Exception as exc:  # one side failing must not lose the others' figures
            print(f"[bench] {entry} failed: {exc}", file=sys.stderr, flush=True)
            continue
        if "profile" in res:
            print(res.pop("profile"))
        results.append(res)
    print(report(results, args))
    if args.smoke:
        got = [f"{r['side']}:{r['config']}" for r in results]
        assert got == entries, f"entries without figures: {sorted(set(entries) - set(got))}"
        print("smoke: OK")
    if args.json:
        Path(args.json).write_text(json.dumps({"date": datetime.date.today().isoformat(), "machine": loop.machine_note(),
                                               "exporter": args.exporter, "results": results}, indent=2))
    return 0


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    workloads = [w for w in args.workloads if any(w in r for r in results)]
    head = " | ".join(f"{w} base | {w} overhead (IQR) | {w} wall overhead" for w in workloads)
    lines = [f"overhead per chat.completions.create: process CPU us per call (export thread included), median over "
             f"alternating blocks; base = uninstrumented; exporter {args.exporter} "
             f"({datetime.date.today().isoformat()}; {loop.machine_note()})", "",
             f"| side:config | {head} |", "|---|" + "---:|" * (3 * len(workloads))]
    for r in results:
        cells = []
        for w in workloads:
            x = r.get(w)
            cells += [f"{x['base_cpu_us']:,.0f}", f"+{x['overhead_us']:,.0f} ({x['overhead_q1_us']:,.0f}..{x['overhead_q3_us']:,.0f})",
                      f"+{x['overhead_wall_us']:,.0f}"] if x else ["", "", ""]
        lines.append(f"| {r['side']}:{r['config']} | " + " | ".join(cells) + " |")
    by = {f"{r['side']}:{r['config']}": r for r in results}
    pairs = [("ours:full", "official:span_only"), ("ours:full+metrics", "official:span_only"),
             ("ours:core", "official:span_only"),
             ("ours:nocontent", "official:nocontent"), ("ours:full", "official:nocontent")]
    ratio_lines = []
    for ours, theirs in pairs:
        if ours in by and theirs in by:
            parts = []
            for w in workloads:
                a, b = by[ours].get(w), by[theirs].get(w)
                if not (a and b):
                    continue
                if b["overhead_us"] <= 0:  # a short noisy run can measure no overhead at all for theirs
                    parts.append(f"{w} n/a ({theirs} overhead {b['overhead_us']:+,.0f} us, within noise)")
                    continue
                ratio = a["overhead_us"] / b["overhead_us"]
                parts.append(f"{w} {ratio:.2f}x{'' if ratio <= GOAL else ' (goal 0.8x not met)'}")
            ratio_lines.append(f"  {ours} / {theirs}: " + ", ".join(parts))
    if ratio_lines:
        lines += ["", "overhead ratios (goal: ours <= 0.8x the official's):"] + ratio_lines
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
