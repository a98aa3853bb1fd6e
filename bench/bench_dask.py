#!/usr/bin/env python3
"""`analyze --engine dask` against the local CLI: wall time per input size, 1 and 2 workers.

    python bench/bench_dask.py --mb 200          # gen_otlp_file.py's shape, cut into 4 rotated files
    python bench/bench_dask.py --smoke           # the test suite's: 0.5 MB in 2 files, reports identical

The input is `gen_otlp_file.py`'s file cut into `--files` files at line boundaries (traces spread
over many lines, some across files, as the Collector's rotated files hold them). Each case runs
the real CLI as a user would (`otel-agent-trace analyze ... --format json -o OUT`, a subprocess)
and is timed from start to exit, LocalCluster start-up included; every report is checked
byte-identical to the local engine's. Figures: bench/README.md, "Dask".
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def cut(path: Path, parts: int) -> list[Path]:
    size = path.stat().st_size
    out, lines = [], path.open("rb")
    for i in range(parts):
        target = path.with_name(f"{path.stem}-{i}.jsonl")
        with target.open("wb") as handle:
            written = 0
            for line in lines:
                handle.write(line)
                written += len(line)
                if i < parts - 1 and written >= size // parts:
                    break
        out.append(target)
    return out


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "otel_agent_trace.cli", *argv], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise RuntimeError(done.stderr[-2000:])
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=200.0)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--smoke", action="store_true", help="0.5 MB in 2 files; asserts identical reports, no rate")
    args = parser.parse_args()
    if args.smoke:
        args.mb, args.files = 0.5, 2
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "fleet.jsonl"
        subprocess.run([sys.executable, str(HERE / "gen_otlp_file.py"), str(source), "--mb", str(args.mb)], check=True,
                       capture_output=True)
        files = [str(p) for p in cut(source, args.files)]
        source.unlink()
        mb = sum(os.path.getsize(p) for p in files) / 1e6
        cases = {"local --jobs 1": ["--jobs", "1"], "local --jobs 2": ["--jobs", "2"],
                 "dask 1 worker": ["--engine", "dask", "--jobs", "1"], "dask 2 workers": ["--engine", "dask", "--jobs", "2"]}
        results, reports = {}, {}
        for name, extra in cases.items():
            out = Path(tmp) / f"{name.replace(' ', '_')}.json"
            seconds = timed(["analyze", *files, "--format", "json", "-o", str(out), *extra])
            reports[name] = out.read_bytes()
            results[name] = {"seconds": round(seconds, 2), "mb_per_s": round(mb / seconds, 1)}
            print(f"{name:16s} {seconds:7.2f} s  {mb / seconds:6.1f} MB/s", flush=True)
        first = next(iter(reports.values()))
        identical = all(r == first for r in reports.values())
        print(f"input {mb:.0f} MB in {len(files)} files; reports byte-identical: {identical}")
        if args.smoke:
            assert identical and json.loads(first)["runs"], "the engines' reports differ, or name no run"
            print("smoke: OK")
        if args.json:
            Path(args.json).write_text(json.dumps({"mb": round(mb, 1), "files": len(files), "identical": identical,
                                                   "cpus": os.cpu_count(), "results": results}, indent=2))
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
