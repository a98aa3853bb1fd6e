"""Instructions per MB of input, counted by callgrind: the analyzer's cost measured in a way the
machine's load does not move (a benchmark, not a test; needs valgrind on PATH).

    python bench/bench_instructions.py [--src SRC ...] [--small FILE --large FILE]

Wall-clock ratios on this shared 2-core VM swing by a third between runs (bench/README.md), so a
cut of a few percent cannot be seen in time. Callgrind counts the instructions a process executes,
the same on a quiet or a busy machine. The cost per MB is the difference between a large and a small
input of our span shape (bench/gen_otlp_file.py, 6 MB and 2 MB, made once under the temporary
directory), divided by the difference in size, so the start (interpreter, imports) drops out; the
start is reported beside it. Measured for:
- raw:  `orjson.loads` of every line (the throughput bench's baseline);
- read: the reader alone (spans built, nothing kept);
- cli1: `otel-agent-trace analyze FILE --format json -o /dev/null --jobs 1`, the whole CLI.
`--src` names other trees (`git archive COMMIT src | tar -x -C TMP`, then TMP/src) to compare with
this one in the same run. An instruction is not a fixed time: Python code runs fewer instructions
per cycle than orjson's C, so the time ratio (bench_analyzer_throughput.py) stays the goal's measure.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.join(HERE, "..", "src")

READ = ("import sys\nfrom otel_agent_trace.analyzer.readers.otlp_json import read_file\n"
        "from otel_agent_trace.analyzer.spans import InputReport\n"
        "for _ in read_file(sys.argv[1], InputReport(sys.argv[1])): pass\n")
RAW = "import sys, orjson\nfor line in open(sys.argv[1], 'rb'): orjson.loads(line)\n"


def command(phase: str, path: str) -> list[str]:
    if phase == "raw":
        return [sys.executable, "-c", RAW, path]
    if phase == "read":
        return [sys.executable, "-c", READ, path]
    return [sys.executable, "-m", "otel_agent_trace.cli", "analyze", path, "--format", "json", "-o", os.devnull,
            "--jobs", "1", "--progress", "never"]


def instructions(argv: list[str], env: dict[str, str]) -> int:
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + os.devnull] + argv,
                          capture_output=True, text=True, env=env)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind gave no count for {argv}: {done.stderr[-500:]}")
    return int(found.group(1))


def inputs(small: str | None, large: str | None, sizes: tuple[float, float] = (2, 6)) -> tuple[str, str]:
    if small and large:
        return small, large
    sys.path.insert(0, HERE)
    from gen_otlp_file import generate

    out = []
    for megabytes in sizes:
        path = os.path.join(tempfile.gettempdir(), f"otel-agent-trace-instructions-{megabytes}mb.jsonl")
        if not os.path.exists(path):
            generate(path, megabytes)
        out.append(path)
    return out[0], out[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", action="append", default=[], help="another src tree to measure (repeatable)")
    parser.add_argument("--small", help="the small input (default: 2 MB of our shape)")
    parser.add_argument("--large", help="the large input (default: 6 MB of our shape)")
    parser.add_argument("--phases", default="raw,read,cli1")
    parser.add_argument("--smoke", action="store_true",
                        help="the test suite's run: 0.1 and 0.3 MB inputs, raw and read; skipped, saying so, without valgrind")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        if args.smoke:
            print("smoke: skipped (valgrind is not on PATH)")
            return
        raise SystemExit("valgrind is not on PATH")
    if args.smoke:
        args.phases = "raw,read"
    small, large = inputs(args.small, args.large, (0.1, 0.3) if args.smoke else (2, 6))
    megabytes = (os.path.getsize(large) - os.path.getsize(small)) / 1e6
    print(f"per MB: ({os.path.basename(large)} - {os.path.basename(small)}) / {megabytes:.2f} MB")
    cache = tempfile.mkdtemp(prefix="otel-agent-trace-instructions-pyc")
    raw = None
    for tree in [TREE] + args.src:
        env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), PYTHONPYCACHEPREFIX=cache)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run(command("cli1", small), env=env, capture_output=True)  # bytecode cached, as installed
        for phase in args.phases.split(","):
            if phase == "raw" and raw is not None:
                continue  # the same for every tree
            counts = [instructions(command(phase, path), env) for path in (small, large)]
            per_mb = (counts[1] - counts[0]) / megabytes
            start = counts[0] - per_mb * os.path.getsize(small) / 1e6
            raw = per_mb if phase == "raw" else raw
            ratio = f"  {per_mb / raw:.2f}x raw" if raw and phase != "raw" else ""
            label = "" if phase == "raw" else f"  {os.path.relpath(tree)}"
            print(f"{phase:5} {per_mb / 1e6:7.1f} M instructions per MB  start {start / 1e9:5.2f} G{ratio}{label}")
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
