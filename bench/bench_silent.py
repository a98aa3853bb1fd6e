"""Score what a user reads on failures that raise nothing, recorded by our own recorder: the
silent-failure corpus (`tests/silent_corpus.py`), each case recorded through the real openai and
anthropic clients against the scripted server, then `otel-agent-trace analyze --expected` (a
subprocess, as a user runs it) told only the expected answers.

    python bench/bench_silent.py [--json out.json] [--clients openai anthropic] [--smoke]

Places, per run, in the order the report names them: the run's `origin`, then each `errors[]`
entry's `located_at` (proven before suspected). The prediction is the first place; scored on its
step (`agent_trace.step.index` of the place's span, from the trace file) against the case's gold
step, and on the run's `bug_class` against the gold kind. Also: the gold step among the places,
places per run, and the two position baselines a single-agent loop invites (the first step, the
last step). The figures are given per kind of mistake (`silent_corpus.KINDS`), for the cases the
signals were built on and for those held out (`Case.held_out`), and for all.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from silent_corpus import CORPUS, KINDS, record_all  # noqa: E402


def step_indices(traces: str) -> dict[str, int]:
    """Span id -> `agent_trace.step.index`, for every step span of the file."""
    out: dict[str, int] = {}
    with open(traces, encoding="utf-8") as handle:
        for line in handle:
            for rs in json.loads(line).get("resourceSpans", ()):
                for ss in rs.get("scopeSpans", ()):
                    for span in ss.get("spans", ()):
                        for a in span.get("attributes") or ():
                            if a["key"] == "agent_trace.step.index":
                                out[span["spanId"]] = int(next(iter(a["value"].values())))
    return out


def report_of(traces: str, expected: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "report.json")
        proc = subprocess.run([sys.executable, "-m", "otel_agent_trace.cli", "analyze", traces, "--expected", expected,
                               "--format", "json", "-o", path], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"analyze failed ({proc.returncode}): {proc.stderr[-2000:]}")
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)


def places(run: dict[str, Any]) -> list[str]:
    """The span ids the report names for a run, in reading order."""
    out = [run["origin"]["span_id"]] if run.get("origin") else []
    for entry in run.get("errors") or ():
        out += entry.get("located_at") or [entry["span_id"]]
    return list(dict.fromkeys(out))


def score(report: dict[str, Any], runs: dict[str, tuple[str, str]], steps: dict[str, int]) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    for run in report["runs"]:
        if run["trace_id"] not in runs:
            continue
        name, client = runs[run["trace_id"]]
        case = CORPUS[name]
        named = [steps[p] for p in places(run) if p in steps]
        rows[f"{name} / {client}"] = {
            "kind": case.kind, "held_out": case.held_out, "gold_step": case.gold_step, "failed": run["status"] == "failed",
            "first": named[0] if named else None, "steps_named": named,
            "bug_class": run.get("bug_class"), "gold_class": case.bug_class,
            "last_step": int(run.get("steps") or 0) - 1}
    return rows


def table(rows: dict[str, dict[str, Any]]) -> list[str]:
    def figures(subset: list[dict[str, Any]]) -> list[str]:
        n = len(subset)
        if not n:
            return ["-"] * 6

        def pct(k: int) -> str:
            return f"{k / n:.0%} ({k}/{n})"

        return [pct(sum(r["first"] == r["gold_step"] for r in subset)),
                pct(sum(r["gold_step"] in r["steps_named"] for r in subset)),
                f"{sum(len(r['steps_named']) for r in subset) / n:.2f}",
                pct(sum(r["bug_class"] == r["gold_class"] for r in subset)),
                pct(sum(r["gold_step"] == 0 for r in subset)),
                pct(sum(r["gold_step"] == r["last_step"] for r in subset))]

    lines = ["| cases | runs failed | step of the first place | gold step among places | places per run | "
             "bug class | baseline: first step | baseline: last step |", "|---|---|---|---|---|---|---|---|"]
    groups = [(kind, [r for r in rows.values() if r["kind"] == kind]) for kind in KINDS]
    splits = [("cases the signals were built on", [r for r in rows.values() if not r["held_out"]]),
              ("held out (written after them, run once)", [r for r in rows.values() if r["held_out"]])]
    for label, subset in [*groups, *splits, ("**all**", list(rows.values()))]:
        failed = sum(r["failed"] for r in subset)
        lines.append(f"| {label} | {failed}/{len(subset)} | " + " | ".join(figures(subset)) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--clients", nargs="+", default=["openai", "anthropic"])
    ap.add_argument("--smoke", action="store_true", help="every fourth case, the openai client only: what the suite runs")
    args = ap.parse_args(argv)
    if args.smoke:
        args.clients = ["openai"]
    with tempfile.TemporaryDirectory() as tmp:
        traces, expected, runs = record_all(tmp, args.clients, CORPUS if not args.smoke else dict(list(CORPUS.items())[::4]))
        report = report_of(traces, expected)
        rows = score(report, runs, step_indices(traces))
    print(f"silent-failure corpus: {len(rows) // len(args.clients)} cases x {len(args.clients)} clients = {len(rows)} runs")
    print("\n".join(table(rows)))
    for key, r in rows.items():
        mark = "ok " if r["first"] == r["gold_step"] else ("in " if r["gold_step"] in r["steps_named"] else "-- ")
        print(f"  {mark} {key}: gold {r['gold_step']}, named {r['steps_named']}, class {r['bug_class']}"
              + (" (held out)" if r["held_out"] else ""))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
