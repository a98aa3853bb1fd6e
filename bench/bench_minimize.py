"""Seed 004's table on our own trajectories: loose, strict and strict+closure minimization.

    .venv/bin/python bench/bench_minimize.py [--json OUT] [--keep DIR] [--case NAME ...]

Each of the 12 cases of tests/minimize_cases.py is *recorded*: a real agent loop (the `openai`
client against the scripted model server, decorated file/shell tools acting on a real directory)
runs under the instrumentor with the `agent_trace_file` exporter. Then the CLI is run on the
trace, one process per case, exactly as a user runs it:

    otel-agent-trace minimize TRACE --harness sandbox --workspace WS --output OUT --compare --format json

and its JSON is scored. A strategy's minimal case is *valid* when its own replay gives the
original signature and it holds exactly the case's causal steps (known by construction). Per
strategy: valid /12, same-signature /12, mean and worst executions (the baseline replay included).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from minimize_cases import CASES, record  # noqa: E402

CLI = Path(sys.executable).with_name("otel-agent-trace")
STRATEGIES = ("loose", "strict", "strict+closure")
SEED = {"loose": ("0/12", "-"), "strict": ("12/12", 3.8), "strict+closure": ("12/12", 2.2)}


def run_case(case, directory: Path) -> dict:
    trace, workspace = record(case, directory)
    command = [str(CLI), "minimize", str(trace), "--harness", "sandbox", "--workspace", str(workspace),
               "--compare", "--format", "json"]
    if case.output:
        command += ["--output", case.output]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{case.name}: exit {done.returncode}\n{done.stderr}")
    report = json.loads(done.stdout)
    rows = {}
    for row in report["compare"]:
        steps = set(row["steps"])
        rows[row["strategy"]] = {"steps": sorted(steps), "executions": row["executions"],
                                 "same_signature": row["reproduced"],
                                 "valid": row["reproduced"] and steps == case.expected}
    return {"case": case.name, "shape": case.shape, "recorded_steps": report["recorded_steps"],
            "expected": sorted(case.expected), "signature": report["signature"], "cli_seconds": round(seconds, 2),
            "strategies": rows}


def summarize(results: list[dict]) -> dict:
    out = {}
    for name in STRATEGIES:
        rows = [(r["case"], r["strategies"][name]) for r in results]
        executions = [row["executions"] for _, row in rows]
        worst = max(rows, key=lambda item: item[1]["executions"])
        out[name] = {"valid": sum(row["valid"] for _, row in rows), "same_signature": sum(row["same_signature"] for _, row in rows),
                     "cases": len(rows), "mean_executions": round(statistics.mean(executions), 2),
                     "median_executions": statistics.median(executions),
                     "worst": {"case": worst[0], "executions": worst[1]["executions"]}}
    return out


def render(results: list[dict], summary: dict) -> str:
    lines = ["| case | steps | causal | signature | loose | strict | strict+closure |", "|---|---|---|---|---|---|---|"]
    for r in results:
        cells = []
        for name in STRATEGIES:
            row = r["strategies"][name]
            cells.append(f"{row['steps']} {row['executions']}x {'ok' if row['valid'] else 'WRONG'}")
        lines.append(f"| {r['case']} | {r['recorded_steps']} | {r['expected']} | `{r['signature'][:40]}` | " + " | ".join(cells) + " |")
    lines += ["", "| strategy | valid | same signature | mean executions | median | worst case | seed 004 (valid, mean) |",
              "|---|---|---|---|---|---|---|"]
    for name in STRATEGIES:
        s = summary[name]
        lines.append(f"| {name} | {s['valid']}/{s['cases']} | {s['same_signature']}/{s['cases']} | {s['mean_executions']} | "
                     f"{s['median_executions']} | {s['worst']['executions']} ({s['worst']['case']}) | {SEED[name][0]}, {SEED[name][1]} |")
    strict, closure = summary["strict"]["mean_executions"], summary["strict+closure"]["mean_executions"]
    lines.append(f"\nstrict / strict+closure mean executions: {strict / closure:.2f}x (seed: 1.67x, 3.8 -> 2.2)")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--keep", help="record into this directory (kept) instead of a temporary one")
    parser.add_argument("--case", action="append", help="only these cases (by name)")
    parser.add_argument("--smoke", action="store_true", help="the test suite's run: the first case only")
    args = parser.parse_args()
    cases = [c for c in CASES if not args.case or c.name in args.case]
    if args.smoke:
        cases = cases[:1]
    with tempfile.TemporaryDirectory(prefix="bench-minimize-") as temporary:
        directory = Path(args.keep or temporary)
        directory.mkdir(parents=True, exist_ok=True)
        results = []
        for case in cases:
            results.append(run_case(case, directory))
            print(f"[bench] {case.name}: " + ", ".join(f"{k} {v['executions']}x {'ok' if v['valid'] else 'WRONG'}"
                                                      for k, v in results[-1]["strategies"].items()), file=sys.stderr)
    summary = summarize(results)
    print(render(results, summary))
    if args.json:
        Path(args.json).write_text(json.dumps({"cases": results, "summary": summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
