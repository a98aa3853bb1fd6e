"""Score what a user reads: the CLI's `--format json` on TRAIL (GAIA split), as converted in
/work/shared/benchmarks/trail-gaia.

    python bench/bench_trail.py [--dir /work/shared/benchmarks/trail-gaia] [--json out.json] [--report r.json]

The analyzer runs as a user runs it (`otel-agent-trace analyze traces.jsonl.gz --format json`, a
subprocess); this script imports nothing of the analyzer and reads only that JSON, as a user's
script would (`--report FILE` scores a JSON report already written). The trace file is read for
the span tree (the scorer's one hop) and the trivial baselines only.

Scoring (the benchmark's README): a predicted span matches a gold error when it is the same span
or one hop away (parent/child). Per list, per trace, the entries a user reads in rank order, each
the spans it names: origin hit@1 / hit@3 against `gold.earliest_high_span_id` on the spans in
reading order (rank 1 is the first span the report names); precision per span (every distinct
span named: the README's unit) and per entry (an entry is right when one of its spans matches:
since the report folds the repeats of an error into one `errors[]` entry, that is one distinct
error with all its places); recall of all gold errors and of the System Execution ones.

Lists, per trace, from the JSON (runs of a trace merged in the report's ranking: proven before
suspected, then by start time):
* `origin + chain`: each failed or suspect run's `origin`, then its `chain` hops that carry an error type;
* `errors[] where they appeared`: each occurrence's `span_id`;
* **`errors[] as the report gives them (one entry per error)`** (the report's own list): each
  entry's `located_at`, in order (every occurrence's places: the decision that made or ran it;
  for a tool or environment failure also the decision that read it); `+ recovered[]`: then the
  recovered errors' `located_at` (TRAIL labels an error whether or not the agent recovered from
  it; System Execution recall counts them, as the corpus README says);
* `proven errors[] only`: the same without the entries flagged `suspicion`;
* `before folding: one entry per occurrence`: each occurrence's `located_at` (`occurrences[]`),
  the report's list before errors were folded, for comparison;
* `one place per occurrence (before located_at)`: `decision_span_id`, a tool or environment
  failure at `read_by_span_id` instead (the placement before `located_at`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from typing import Any

DEFAULT_DIR = "/work/shared/benchmarks/trail-gaia"


def load_tree(path: str) -> tuple[dict[str, dict[str, str | None]], dict[str, list[dict[str, Any]]]]:
    """Per trace: span id -> parent id, and the raw spans (for the baselines)."""
    parents: dict[str, dict[str, str | None]] = defaultdict(dict)
    spans: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with gzip.open(path, "rt") as handle:
        for line in handle:
            doc = json.loads(line)
            for rs in doc["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for s in ss["spans"]:
                        parents[s["traceId"]][s["spanId"]] = s.get("parentSpanId") or None
                        spans[s["traceId"]].append(s)
    return parents, spans


def near(a: str, b: str, parent: dict[str, str | None]) -> bool:
    return a == b or parent.get(a) == b or parent.get(b) == a


def report_of(traces: str) -> dict[str, Any]:
    """The CLI's JSON report of the traces, as a user gets it."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "report.json")
        subprocess.run([sys.executable, "-m", "otel_agent_trace.cli", "analyze", traces, "--format", "json",
                        "-o", out], check=True)
        with open(out, encoding="utf-8") as handle:
            return json.load(handle)


def located(entry: dict[str, Any]) -> list[str]:
    """Where the report locates an error (its `located_at`: every occurrence's places)."""
    return entry.get("located_at") or [entry.get("decision_span_id") or entry["span_id"]]


def occurrences(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The occurrences of a folded `errors[]` entry, each with its own `located_at`."""
    return entry.get("occurrences") or [entry]


def one_place(entry: dict[str, Any]) -> str:
    """The earlier single placement: a tool failure at the decision that read it, else the decision."""
    if entry.get("bug_class") == "tool" and entry.get("read_by_span_id"):
        return entry["read_by_span_id"]
    return entry.get("decision_span_id") or entry["span_id"]


def _ranked(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(entries, key=lambda e: (bool(e.get("suspicion")), e.get("start_time_unix_nano") or 0))


Entries = list[list[str]]  # per trace: the entries a user reads, in rank order, each its located spans


def predictions(report: dict[str, Any]) -> dict[str, dict[str, Entries]]:
    """Per list name: per trace, the entries in rank order, each as the spans it names."""
    lists: dict[str, dict[str, Entries]] = defaultdict(lambda: defaultdict(list))
    errors: dict[str, list[dict[str, Any]]] = defaultdict(list)
    recovered: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in report["runs"]:
        trace = run["trace_id"]
        if run["status"] != "ok":
            chain = lists["origin + chain"][trace]
            if run["origin"]:
                chain.append([run["origin"]["span_id"]])
            chain.extend([h["span_id"]] for h in run["chain"] if h.get("error_type") and h["span_id"] != run["run_span_id"])
        errors[trace].extend(run["errors"])
        recovered[trace].extend(run.get("recovered") or ())
    for trace in set(errors) | set(recovered):
        ranked, rec = _ranked(errors[trace]), _ranked(recovered[trace])
        each = _ranked([e | o for e in ranked for o in occurrences(e)])
        rec_entries = [located(e) for e in rec]
        lists["errors[] where they appeared"][trace] = [[o["span_id"]] for o in each]
        lists["errors[] as the report gives them (one entry per error)"][trace] = [located(e) for e in ranked]
        lists["  + recovered[]"][trace] = [located(e) for e in ranked] + rec_entries
        lists["proven errors[] only (suspicions apart)"][trace] = [located(e) for e in ranked if not e.get("suspicion")]
        lists["  + recovered[] "][trace] = [located(e) for e in ranked if not e.get("suspicion")] + rec_entries
        lists["before folding: one entry per occurrence"][trace] = [located(o) for o in each]
        lists["  + recovered[]  "][trace] = [located(o) for o in each] + rec_entries
        lists["one place per occurrence (before located_at)"][trace] = [[one_place(o)] for o in each]
    return {name: {t: [list(e) for e in dict.fromkeys(tuple(e) for e in entries)] for t, entries in per.items()}
            for name, per in lists.items()}


def score(pred: dict[str, Entries], labels: list[dict[str, Any]], parents: dict[str, dict[str, str | None]]) -> dict[str, Any]:
    """hit@k on the spans in reading order (the first span the report names is rank 1); precision
    per span (every distinct span named, the corpus README's unit) and per entry (an entry, as a
    user reads it, is right when one of the spans it names matches a gold error)."""
    hit1 = hit3 = with_high = 0
    predicted = matched = entries = entries_matched = 0
    sys_total = sys_found = 0
    gold_total = gold_found = 0
    for lab in labels:
        trace = lab["trace_id"]
        parent = parents.get(trace, {})
        gold = [e for e in lab["gold"]["errors"] if e.get("span_id")]
        listed = pred.get(trace, [])
        ranked = list(dict.fromkeys(x for entry in listed for x in entry))
        high = lab["gold"].get("earliest_high_span_id")
        if high:
            with_high += 1
            hit1 += any(near(p, high, parent) for p in ranked[:1])
            hit3 += any(near(p, high, parent) for p in ranked[:3])
        good = {p for p in ranked if any(near(p, g["span_id"], parent) for g in gold)}
        predicted += len(ranked)
        matched += len(good)
        entries += len(listed)
        entries_matched += sum(1 for entry in listed if good.intersection(entry))
        for g in gold:
            gold_total += 1
            gold_found += any(near(p, g["span_id"], parent) for p in ranked)
            if g.get("top_class") == "System Execution":
                sys_total += 1
                sys_found += any(near(p, g["span_id"], parent) for p in ranked)
    return {"traces_with_high": with_high, "hit@1": hit1, "hit@3": hit3,
            "predicted": predicted, "matched": matched,
            "precision": round(matched / predicted, 3) if predicted else 0.0,
            "entries": entries, "entries_matched": entries_matched,
            "entry_precision": round(entries_matched / entries, 3) if entries else 0.0,
            "recall": f"{gold_found}/{gold_total}", "recall_rate": round(gold_found / gold_total, 3) if gold_total else 0.0,
            "system_execution_found": sys_found, "system_execution_total": sys_total}


def by_type(report: dict[str, Any], labels: list[dict[str, Any]], parents: dict[str, dict[str, str | None]]) -> dict[str, str]:
    """matched/predicted per error type and location of `errors[]` (a located span counts once per entry)."""
    gold = {lab["trace_id"]: [e["span_id"] for e in lab["gold"]["errors"] if e.get("span_id")] for lab in labels}
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for run in report["runs"]:
        trace = run["trace_id"]
        for e in (x | o for x in run["errors"] for o in occurrences(x)):
            for i, at in enumerate(located(e)):
                key = (e["error_type"] or "?") + (" (suspicion)" if e.get("suspicion") else "") + (" @reader" if i else "")
                counts[key][1] += 1
                counts[key][0] += any(near(at, g, parents.get(trace, {})) for g in gold.get(trace, ()))
    return {k: f"{m}/{n}" for k, (m, n) in sorted(counts.items(), key=lambda kv: -kv[1][1])}


def baseline(spans: dict[str, list[dict[str, Any]]]) -> dict[str, list[str]]:
    """Spans with error status or an exception event, earliest first (one entry each)."""
    out: dict[str, Entries] = {}
    for trace, items in spans.items():
        ordered = sorted(items, key=lambda s: int(s["startTimeUnixNano"]))
        out[trace] = [[s["spanId"]] for s in ordered
                      if (s.get("status") or {}).get("code") == 2 or any(e.get("name") == "exception" for e in s.get("events") or ())]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=DEFAULT_DIR)
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--report", help="score this JSON report instead of running the CLI")
    ap.add_argument("--smoke", action="store_true",
                    help="the test suite's run: the whole bench (seconds), skipped, saying so, when the data is absent")
    args = ap.parse_args(argv)
    traces = os.path.join(args.dir, "traces.jsonl.gz")
    if args.smoke and not os.path.exists(traces):
        print(f"smoke: skipped (no TRAIL GAIA data at {args.dir})")
        return 0
    labels = [json.loads(line) for line in open(os.path.join(args.dir, "labels.jsonl"), encoding="utf-8")]
    if args.report:
        with open(args.report, encoding="utf-8") as handle:
            report = json.load(handle)
    else:
        report = report_of(traces)
    parents, spans = load_tree(traces)
    runs = report["runs"]
    results: dict[str, Any] = {
        "traces": len(labels), "traces_analysed": len({r["trace_id"] for r in runs}), "runs": len(runs),
        "statuses": dict(sorted(defaultdict(int, {s: sum(r["status"] == s for r in runs) for s in {r["status"] for r in runs}}).items())),
    }
    for name, pred in predictions(report).items():
        results[name] = score(pred, labels, parents)
    results["baseline: error-status/exception spans"] = score(baseline(spans), labels, parents)
    results["precision by error type (errors[] as located)"] = by_type(report, labels, parents)
    split = labels[0].get("split", "GAIA") if labels else "GAIA"
    print(f"TRAIL {split}: {results['traces']} traces, {results['traces_analysed']} analysed, {results['runs']} runs "
          f"{results['statuses']}")
    print("| what the user reads | origin@1 vs earliest HIGH | hit@3 | precision per entry | precision per span "
          "| recall (all gold) | System Execution recall |")
    print("|---|---|---|---|---|---|---|")
    for key, r in results.items():
        if not isinstance(r, dict) or "hit@1" not in r:
            continue
        print(f"| {key.strip()} | {r['hit@1']}/{r['traces_with_high']} | {r['hit@3']}/{r['traces_with_high']} | "
              f"{r['entry_precision']:.3f} ({r['entries_matched']}/{r['entries']}) | "
              f"{r['precision']:.3f} ({r['matched']}/{r['predicted']}) | {r['recall_rate']:.2f} ({r['recall']}) | "
              f"{r['system_execution_found']}/{r['system_execution_total']} |")
    print("precision by error type (errors[] as located):",
          ", ".join(f"{k} {v}" for k, v in results["precision by error type (errors[] as located)"].items()))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
