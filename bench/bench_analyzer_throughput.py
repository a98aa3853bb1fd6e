"""Analyzer throughput vs raw `orjson.loads` line parsing, with peak memory (a benchmark, not a test).

    python bench/bench_analyzer_throughput.py [FILE] [--mb 200] [--budget-mb 256] [--from TRACES]

Generates FILE with bench/gen_otlp_file.py when it does not exist: our default span shape, or
with `--from TRACES` copies of real traces (e.g. `../shared/benchmarks/trail-gaia/traces.jsonl.gz`). Each phase runs in its own
process so that peak RSS (ru_maxrss) is the phase's own:
- raw:     orjson.loads of every line, nothing kept;
- read:    the reader (spans built, checked for types), nothing kept;
- group:   iter_findings: read + group by trace (with spills past the budget) + normalize +
           runs + origin per trace, findings dropped as they come (bounded memory);
- analyze: analyze(): the same, keeping every finding (the library API);
- cli:     `otel-agent-trace analyze FILE --format json -o /dev/null` end to end (streaming: each
           trace analysed once complete in the file, each finding reduced to its report fields as
           it comes; the file cut in chunks analysed by one process per core), timed and measured
           in a child process (peak RSS: the largest process, not their sum);
- cli1:    the same with `--jobs 1` (one process).
Each phase runs `--repeat` times, interleaved with the others; the median is reported, and its
share of the median raw speed (the machine is noisy: compare ratios of the same run).
Every phase runs with compiled bytecode cached (in a `PYTHONPYCACHEPREFIX` under the temporary
directory, even when `PYTHONDONTWRITEBYTECODE` is set), as an installed package runs: compiling
the analyzer's modules on each start costs ~50 ms that no user pays twice.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def phase(name: str, path: str, budget_mb: int) -> dict:
    import gc

    import orjson

    start = time.perf_counter()
    count = 0
    if name == "raw":
        gc.disable()
        with open(path, "rb") as handle:
            for line in handle:
                orjson.loads(line)
                count += 1
    elif name == "read":
        from otel_agent_trace.analyzer.readers.otlp_json import read_file
        from otel_agent_trace.analyzer.spans import InputReport

        gc.disable()
        for _ in read_file(path, InputReport(path)):
            count += 1
    elif name in ("cli", "cli1"):
        proc = subprocess.run([sys.executable, "-m", "otel_agent_trace.cli", "analyze", path, "--format", "json",
                               "-o", os.devnull, "--memory-budget", str(budget_mb), "--progress", "never",
                               "--jobs", "1" if name == "cli1" else "0"])
        if proc.returncode not in (0, 1):
            raise SystemExit(f"cli exited {proc.returncode}")
        seconds = time.perf_counter() - start
        size = os.path.getsize(path) / 1e6
        return {"phase": name, "items": proc.returncode, "seconds": round(seconds, 2),
                "mb_per_s": round(size / seconds, 1),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)}
    elif name == "group":
        from otel_agent_trace.analyzer.analysis import iter_findings

        for _ in iter_findings([path], budget_bytes=budget_mb << 20):
            count += 1
    else:
        from otel_agent_trace.analyzer.analysis import analyze

        count = len(analyze([path], budget_bytes=budget_mb << 20).findings)
    seconds = time.perf_counter() - start
    size = os.path.getsize(path) / 1e6
    return {"phase": name, "items": count, "seconds": round(seconds, 2), "mb_per_s": round(size / seconds, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default="/tmp/otel-agent-trace-bench.jsonl")
    parser.add_argument("--mb", type=float, default=200)
    parser.add_argument("--budget-mb", type=int, default=256)
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=3, help="runs per phase (interleaved); the median is reported")
    parser.add_argument("--phases", default="raw,read,group,analyze,cli1,cli")
    parser.add_argument("--smoke", action="store_true",
                        help="the test suite's run: 0.5 MB, once, read/group/analyze/cli1 (tests/test_bench_smoke_analyzer.py)")
    parser.add_argument("--from", dest="source", help="generate FILE from copies of these real traces")
    args = parser.parse_args()
    if args.smoke:
        args.mb, args.repeat, args.phases = 0.5, 1, "read,group,analyze,cli1"
    if args.phase:
        print(json.dumps(phase(args.phase, args.file, args.budget_mb)))
        return
    if not os.path.exists(args.file):
        sys.path.insert(0, HERE)
        from gen_otlp_file import generate, replicate

        if args.source:
            replicate(args.source, args.file, args.mb)
        else:
            generate(args.file, args.mb)
    print(f"{args.file}: {os.path.getsize(args.file) / 1e6:.0f} MB")
    names = args.phases.split(",")
    samples: dict[str, list[dict]] = {name: [] for name in names}
    env = dict(os.environ, PYTHONPYCACHEPREFIX=os.path.join(tempfile.gettempdir(), "otel-agent-trace-bench-pyc"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for _ in range(args.repeat):  # interleaved, so that a noisy spell hits every phase alike
        for name in names:
            out = subprocess.run([sys.executable, __file__, args.file, "--phase", name, "--budget-mb",
                                  str(args.budget_mb)], capture_output=True, text=True, check=True, env=env).stdout
            samples[name].append(json.loads(out.strip().splitlines()[-1]))
    raw = None
    for name in names:
        runs = sorted(samples[name], key=lambda r: r["mb_per_s"])
        med = runs[len(runs) // 2]
        rss = sorted(r["peak_rss_mb"] for r in runs)[len(runs) // 2]
        raw = med["mb_per_s"] if name == "raw" else raw
        share = f"  {med['mb_per_s'] / raw:.0%} of raw" if raw else ""
        print(f"{name:8} {med['mb_per_s']:7.1f} MB/s (median of {len(runs)}: "
              f"{', '.join(str(r['mb_per_s']) for r in runs)})  {med['seconds']:6.2f} s  peak RSS {rss:7.1f} MB"
              f"  ({med['items']} items){share}")

if __name__ == "__main__":
    main()
