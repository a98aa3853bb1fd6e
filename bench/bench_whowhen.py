"""Score what a user reads: the CLI's `--format json` with `--all-failed` on Who&When's
Algorithm-Generated subset (126 failed multi-agent logs), as converted in
/work/shared/benchmarks/whowhen-ag (its README says how to score).

    python bench/bench_whowhen.py [--dir /work/shared/benchmarks/whowhen-ag] [--json out.json] [--expected]
                                  [--report r.json] [--smoke]

The analyzer runs as a user runs it (`otel-agent-trace analyze traces.jsonl.gz --all-failed
--format json`, a subprocess): the only thing it is told is what a user knows, that every run
failed. This script imports nothing of the analyzer and reads only that JSON; the trace file is
read for each span's `bench.step_index` and `gen_ai.agent.name` (what the labels are keyed on) and
for the position baselines.

Places, per trace, in the order the report names them: the run's `origin`, then each `errors[]`
entry's `located_at` (proven before suspected, as the report lists them). The prediction is the
first place. Step accuracy: its `bench.step_index` equals `gold.mistake_step`; within one step:
off by at most one; agent accuracy: its `gen_ai.agent.name` equals `gold.mistake_agent`, both
lower-cased with parenthesised text and non-letters dropped (the JSON's own `agent` of the place
is scored too: it must name the same agent). Recall of the short list: the gold step is among the
places; and how many places the report names.

`--expected`: the CLI is also told each task's answer (`--expected`, a file of labels.jsonl's
`task_answer` keyed by trace id), as the README allows: the paper's with-ground-truth setting.

`--smoke`: the first few traces only, and the report's shape asserted (every run failed, places
named, each with its agent): what the test suite runs.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from typing import Any
from otel_agent_trace.semconv import GEN_AI_AGENT_NAME

DEFAULT_DIR = "/work/shared/benchmarks/whowhen-ag"
SMOKE_TRACES = 6

# the README's rows (step accuracy / within one step / agent accuracy), as published there
README_BASELINES = [
    ("best LLM judge in the paper (all subsets)", "about 14.2%", "", "53%"),
    ("random agent turn", "16.3%", "32.2%", "45.2%"),
    ("first agent turn", "15.9%", "42.9%", "49.2%"),
    ("second agent turn", "28.6%", "41.3%", "51.6%"),
    ("first turn by an agent other than the opener", "23.0%", "44.4%", "38.1%"),
]


def _attributes(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values()), None) for a in span.get("attributes") or ()}


def load_steps(lines: list[str]) -> dict[str, dict[str, tuple[int | None, str | None, str]]]:
    """Per trace: span id -> (bench.step_index, gen_ai.agent.name, span name)."""
    out: dict[str, dict[str, tuple[int | None, str | None, str]]] = {}
    for line in lines:
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    a = _attributes(s)
                    index = a.get("bench.step_index")
                    out.setdefault(s["traceId"], {})[s["spanId"]] = (
                        int(index) if index is not None else None, a.get(GEN_AI_AGENT_NAME), s["name"])
    return out


def norm_agent(name: Any) -> str:
    """Lower case, parenthesised text and non-letters dropped (the README's comparison)."""
    return re.sub(r"[^a-z]", "", re.sub(r"\([^)]*\)", "", str(name or "")).lower())


def report_of(traces: str, extra: list[str] | None = None) -> dict[str, Any]:
    """The CLI's JSON report of the traces with `--all-failed`, as a user gets it."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "report.json")
        subprocess.run([sys.executable, "-m", "otel_agent_trace.cli", "analyze", traces, "--all-failed",
                        "--format", "json", "-o", out, *(extra or [])], check=True)
        with open(out, encoding="utf-8") as handle:
            return json.load(handle)


def expected_file(labels: list[dict[str, Any]], tmp: str) -> str:
    """`--expected`'s file: each trace's task answer, keyed by trace id (what an eval harness knows)."""
    path = os.path.join(tmp, "expected.jsonl")
    with open(path, "w", encoding="utf-8") as out:
        for lab in labels:
            out.write(json.dumps({"trace_id": lab["trace_id"], "answer": lab["task_answer"]}) + "\n")
    return path


def places(run: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(span id, the agent the report names there) of every place the run's report names, in
    order: its origin, then each `errors[]` entry's `located_at`."""
    out: list[tuple[str, str | None]] = []
    if run.get("origin"):
        out.append((run["origin"]["span_id"], run["origin"].get("agent")))
    for entry in run.get("errors") or ():
        for span_id in entry.get("located_at") or [entry.get("decision_span_id") or entry["span_id"]]:
            out.append((span_id, entry.get("agent")))
    seen: dict[str, str | None] = {}
    for span_id, agent in out:
        seen.setdefault(span_id, agent)
    return list(seen.items())


def score(report: dict[str, Any], labels: list[dict[str, Any]],
          steps: dict[str, dict[str, tuple[int | None, str | None, str]]]) -> dict[str, Any]:
    by_trace: dict[str, list[tuple[str, str | None]]] = {}
    for run in report["runs"]:
        by_trace.setdefault(run["trace_id"], []).extend(places(run))
    n = step = near = agent = agent_json = recall = named = with_place = 0
    for lab in labels:
        trace, gold = lab["trace_id"], lab["gold"]
        n += 1
        spans = steps.get(trace, {})
        named_here = [(sid, a) for sid, a in by_trace.get(trace, []) if sid in spans]
        named += len(named_here)
        if not named_here:
            continue
        with_place += 1
        first, first_agent = named_here[0]
        index, span_agent, _ = spans[first]
        step += index == gold["mistake_step"]
        near += index is not None and abs(index - gold["mistake_step"]) <= 1
        agent += norm_agent(span_agent) == norm_agent(gold["mistake_agent"])
        agent_json += norm_agent(first_agent) == norm_agent(gold["mistake_agent"])
        recall += any(spans[sid][0] == gold["mistake_step"] for sid, _ in named_here)
    return {"traces": n, "with_a_place": with_place, "step": step, "within_one": near, "agent": agent,
            "agent_named_in_json": agent_json, "gold_among_places": recall, "places": named,
            "mean_places": round(named / n, 2) if n else 0.0}


def baselines(labels: list[dict[str, Any]],
              steps: dict[str, dict[str, tuple[int | None, str | None, str]]]) -> dict[str, dict[str, Any]]:
    """The README's position rules, recomputed on the trace file (random: the expectation). An
    agent turn is a `chat` span of a speaker other than `Computer_terminal` (AG2's code executor,
    which runs what the turn before wrote): the README's figures are reproduced exactly so."""
    rows: dict[str, list[float]] = {k: [0.0, 0.0, 0.0] for k in ("random agent turn", "first agent turn",
                                                                  "second agent turn",
                                                                  "first turn by an agent other than the opener")}
    for lab in labels:
        gold = lab["gold"]
        turns = sorted((v for v in steps.get(lab["trace_id"], {}).values()
                        if v[0] is not None and v[2].startswith("chat ") and v[1] != "Computer_terminal"), key=lambda v: v[0])
        if not turns:
            continue

        def hit(t: tuple[int | None, str | None, str]) -> tuple[float, float, float]:
            return (float(t[0] == gold["mistake_step"]), float(abs(t[0] - gold["mistake_step"]) <= 1),
                    float(norm_agent(t[1]) == norm_agent(gold["mistake_agent"])))

        each = [hit(t) for t in turns]
        picks = {"random agent turn": tuple(sum(x[i] for x in each) / len(each) for i in range(3)),
                 "first agent turn": each[0], "second agent turn": each[min(1, len(each) - 1)]}
        other = next((t for t in turns if norm_agent(t[1]) != norm_agent(turns[0][1])), turns[0])
        picks["first turn by an agent other than the opener"] = hit(other)
        for name, values in picks.items():
            rows[name] = [a + b for a, b in zip(rows[name], values)]
    total = len(labels)
    return {name: {"step": round(v[0] / total, 3), "within_one": round(v[1] / total, 3), "agent": round(v[2] / total, 3)}
            for name, v in rows.items()}


def check_shape(report: dict[str, Any], labels: list[dict[str, Any]]) -> None:
    """What a script relies on: one failed run per trace, each naming places with their agent."""
    runs = report["runs"]
    assert {r["trace_id"] for r in runs} == {lab["trace_id"] for lab in labels}, "a trace has no run"
    for run in runs:
        assert run["status"] == "failed", (run["trace_id"], run["status"])
        assert run["critical"]["error_type"] == "known_failed", run["critical"]
        named = places(run)
        assert named, f"{run['trace_id']}: no place named"
        assert all(agent for _, agent in named), f"{run['trace_id']}: a place without its agent"
        for entry in run["errors"]:
            assert {"span_id", "located_at", "suspicion", "reason", "error_type"} <= set(entry), entry


def half_of(label: dict[str, Any]) -> int:
    """A fixed split of the corpus in two (the parity of the first byte of the sha256 of the
    source file's name): a change tuned on the whole should hold on each half."""
    return hashlib.sha256(label["source_file"].encode()).digest()[0] % 2


def pct(k: int, n: int) -> str:
    return f"{k / n:.1%} ({k}/{n})" if n else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=DEFAULT_DIR)
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--report", help="score this JSON report instead of running the CLI")
    ap.add_argument("--smoke", action="store_true", help=f"the first {SMOKE_TRACES} traces, the report's shape asserted")
    ap.add_argument("--expected", action="store_true",
                    help="also tell the analyzer each task's answer (`--expected`, from labels.jsonl's task_answer: "
                         "the paper's with-ground-truth setting)")
    args = ap.parse_args(argv)
    with gzip.open(os.path.join(args.dir, "traces.jsonl.gz"), "rt", encoding="utf-8") as handle:
        lines = handle.readlines()
    labels = [json.loads(line) for line in open(os.path.join(args.dir, "labels.jsonl"), encoding="utf-8")]
    with tempfile.TemporaryDirectory() as tmp:
        traces = os.path.join(args.dir, "traces.jsonl.gz")
        if args.smoke:
            lines = random.Random(27).sample(lines, SMOKE_TRACES)
            traces = os.path.join(tmp, "smoke.jsonl")
            with open(traces, "w", encoding="utf-8") as out:
                out.writelines(lines)
        steps = load_steps(lines)
        labels = [lab for lab in labels if lab["trace_id"] in steps]
        if args.report:
            with open(args.report, encoding="utf-8") as handle:
                report = json.load(handle)
        else:
            report = report_of(traces, ["--expected", expected_file(labels, tmp)] if args.expected else None)
    if args.smoke:
        check_shape(report, labels)
    ours = score(report, labels, steps)
    base = baselines(labels, steps)
    n = ours["traces"]
    subset = labels[0].get("subset", "Algorithm-Generated") if labels else "Algorithm-Generated"
    print(f"Who&When {subset}: {n} traces, {len(report['runs'])} runs, "
          f"{sum(r['status'] == 'failed' for r in report['runs'])} failed; a place named in {ours['with_a_place']}")
    print("| method | step accuracy | within one step | agent accuracy | gold step among places | places per log |")
    print("|---|---|---|---|---|---|")
    told = " --expected" if args.expected else ""
    print(f"| **analyze --all-failed{told} (no judge)** | {pct(ours['step'], n)} | {pct(ours['within_one'], n)} | "
          f"{pct(ours['agent'], n)} | {pct(ours['gold_among_places'], n)} | {ours['mean_places']:.2f} |")
    for name, s, w, a in README_BASELINES:
        mine = base.get(name)
        again = f" (here: {mine['step']:.1%} / {mine['within_one']:.1%} / {mine['agent']:.1%})" if mine else ""
        print(f"| {name}{again} | {s} | {w or '-'} | {a} | - | 1 |")
    print(f"agent named in the JSON's place = gold agent: {pct(ours['agent_named_in_json'], n)}")
    halves = {str(h): score(report, [lab for lab in labels if half_of(lab) == h], steps) for h in (0, 1)}
    for h, r in halves.items():
        print(f"half {h} (sha256 of the source file's name, first byte's parity): {r['traces']} logs, step "
              f"{pct(r['step'], r['traces'])}, agent {pct(r['agent'], r['traces'])}, gold among places "
              f"{pct(r['gold_among_places'], r['traces'])}, {r['mean_places']:.2f} places")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"ours": ours, "halves": halves, "baselines_recomputed": base}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
