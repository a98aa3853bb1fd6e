"""The analyzer CLI against raw orjson parsing, and against an older version of itself, in turns
(whole processes; a benchmark, not a test).

    python bench/bench_cli_pairs.py FILE [--rounds 3] [--commands raw,before,now,now1] [--before-src OLD/src]

Commands: `raw` = `orjson.loads` of every line in a fresh interpreter; `now` = `otel-agent-trace
analyze FILE --format json -o /dev/null` with the default jobs, `now1` with `--jobs 1`; `before` /
`before1` = the same with OLD/src first on PYTHONPATH (`git archive COMMIT src | tar -x -C OLD`).
One warm-up, then the commands in turn, `--rounds` times, so a noisy spell on this shared machine
hits each alike. CPU = user+sys of the process and its workers. Prints medians, and per-round
ratios (median, min..max) against raw (its inverse: the share of raw) and now against before.
Bytecode is cached (in a PYTHONPYCACHEPREFIX) as an installed package runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def commands(path: str, before_src: str | None) -> dict[str, tuple[list[str], dict[str, str]]]:
    env = dict(os.environ, PYTHONPYCACHEPREFIX=os.path.join(tempfile.gettempdir(), "otel-agent-trace-bench-pyc"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    old = dict(env, PYTHONPATH=before_src or "")

    def cli(jobs: str) -> list[str]:
        return [sys.executable, "-m", "otel_agent_trace.cli", "analyze", path, "--format", "json", "-o", os.devnull,
                "--progress", "never", "--jobs", jobs]

    raw = [sys.executable, "-c", "import orjson, sys\nfor line in open(sys.argv[1], 'rb'): orjson.loads(line)", path]
    return {"raw": (raw, env), "before": (cli("0"), old), "before1": (cli("1"), old),
            "now": (cli("0"), env), "now1": (cli("1"), env)}


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, check=False)
    if done.returncode not in (0, 1):  # 1: the analyzer found failed runs; anything else is a broken command
        raise SystemExit(f"{' '.join(argv[:4])} ... exited {done.returncode}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def ratio(a: list[tuple[float, float]], b: list[tuple[float, float]], which: int) -> str:
    values = [x[which] / y[which] for x, y in zip(a, b)]
    return f"{statistics.median(values):.2f} ({min(values):.2f}..{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--commands", default="raw,now,now1")
    parser.add_argument("--before-src", help="an older src/ directory, for `before` and `before1`")
    parser.add_argument("--smoke", action="store_true", help="the test suite's run: 1 round (give it a small file)")
    args = parser.parse_args()
    if args.smoke:
        args.rounds = 1
    known = commands(args.file, args.before_src)
    names = args.commands.split(",")
    if any(n.startswith("before") for n in names) and not args.before_src:
        raise SystemExit("before needs --before-src")
    loads = [os.getloadavg()[0]]
    timed(*known[names[-1]])  # warm-up (page cache, bytecode)
    samples: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    for _ in range(args.rounds):
        for name in names:
            samples[name].append(timed(*known[name]))
        loads.append(os.getloadavg()[0])
    print(f"{args.file}: {os.path.getsize(args.file) / 1e6:.0f} MB; load average (1 min) during: "
          f"{[round(x, 1) for x in loads]}")
    for name in names:
        cpu = statistics.median(c for c, _ in samples[name])
        wall = statistics.median(w for _, w in samples[name])
        print(f"{name:8} CPU {cpu:7.2f} s  wall {wall:7.2f} s")
    for name in names:
        if name != "raw" and "raw" in names:
            cpu = statistics.median(x[0] / y[0] for x, y in zip(samples[name], samples["raw"]))
            wall = statistics.median(x[1] / y[1] for x, y in zip(samples[name], samples["raw"]))
            print(f"{name}/raw: CPU {ratio(samples[name], samples['raw'], 0)}, wall "
                  f"{ratio(samples[name], samples['raw'], 1)}: {1 / cpu:.0%} / {1 / wall:.0%} of raw")
        if name.startswith("now") and "before" + name[3:] in names:
            other = samples["before" + name[3:]]
            print(f"{name}/before{name[3:]}: CPU {ratio(samples[name], other, 0)}, wall {ratio(samples[name], other, 1)}")


if __name__ == "__main__":
    main()
