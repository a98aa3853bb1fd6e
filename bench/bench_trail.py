"""Score the analyzer on TRAIL (GAIA split) as converted in /work/shared/benchmarks/trail-gaia.

    python bench/bench_trail.py [--dir /work/shared/benchmarks/trail-gaia] [--json out.json]

Scoring (the benchmark's README): a predicted span matches a gold error when it is the same span
or one hop away (parent/child). Reported:
* traces analysed;
* origin hit@1 / hit@3 against `gold.earliest_high_span_id` (over traces that have one), using
  each trace's ranked prediction list;
* precision: share of predicted error spans that match some gold error;
* recall of the System Execution gold errors.
Prediction sets scored:
* `origin+chain`: for each failed run, its ranked origin candidates, then the error spans of its
  chains (hops that carry an error type), in that order;
* `all errors`: the above, then every unrecovered error the offline lifecycle found in any run;
* `unrecovered errors, earliest first`: every unrecovered origin of every run of the trace (nested
  agents included, suspicions too), ordered by start time, each at the step that made or ran it
  (the main set until 2026-11-30);
* `proven errors, TRAIL placement` (the precision set): the same without the suspicions (origins
  flagged `suspicion`: an unsupported final answer whose own plan named no tool), the model's own
  errors (format, arguments) at the step that made them, a failure of a tool or the environment
  (bug class `tool`) at the decision that read it, where TRAIL charges the reaction;
* `  + suspicions, ranked last`: the ranking a user reads: proven errors earliest first, then
  the suspicions (hit@k and precision over everything it names);
* `proven errors + their readers`: proven errors, each tool failure both at its step and at the
  decision that read it;
* `  + recovered errors`: the same with the errors a retry recovered (TRAIL labels an error
  whether or not the agent recovered from it).
The README's two trivial baselines are recomputed with the same scorer, to check it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
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


def charged(f: Any, span: Any) -> str:
    """The span TRAIL charges an error to: a tool's failure goes to the framework step that ran
    it (parent of both the LLM call that issued it and the tool), unless that is the run itself."""
    from otel_agent_trace.analyzer.runs import is_tool_span

    if is_tool_span(span) and span.parent_id and span.parent_id != f.run.root.span_id and span.parent_id in f.run.spans:
        return span.parent_id
    return span.span_id


def ranked_errors(analysis: Any, recovered: bool = False, readers: str = "step",
                  suspicions: str = "include") -> dict[str, list[str]]:
    """Per trace: every error the lifecycle proved (unrecovered; with `recovered`, those too), in
    every run of the trace (nested runs included), earliest first: the trace's origin ranking.

    `readers` says where a failure of a tool or of the environment (bug class `tool`) is placed:
    `step` at the step that ran it (`charged`), `reader` at the decision that read it
    (`Finding.readers`, the first propagate hop of its chain: where TRAIL charges the reaction;
    the step when no decision read it), `both` the step followed by the reader. The model's own
    errors (format, arguments) are always placed where they were made.
    `suspicions` (origins flagged `suspicion`: inferred without proof, e.g. an unsupported final
    answer whose plan named no tool): `include` ranks them like the others, `exclude` drops them,
    `last` ranks them after every proven error of the trace."""
    from otel_agent_trace.analyzer.lifecycle import SUSPICION
    from otel_agent_trace.analyzer.classify import BUG_CLASS_OF_ERROR

    items: dict[str, list[tuple[int, int, int, str]]] = defaultdict(list)
    for f in analysis.findings:
        life = f.lifecycle
        ids = sorted(life.origins) if recovered else [s.span_id for s in f.errors]
        for sid in ids:
            span = f.run.spans.get(sid)
            if span is None or span is f.run.root:
                continue
            suspect = SUSPICION in life.state(sid).flags
            if suspect and suspicions == "exclude":
                continue
            tier = 1 if suspect and suspicions == "last" else 0
            etype = life.error_type(sid)
            kind = BUG_CLASS_OF_ERROR.get(etype)
            reader = f.readers.get(sid) if kind == "tool" else None
            if readers != "reader" or reader is None:
                items[f.run.trace_id].append((tier, span.start_ns, 0, charged(f, span)))
            if readers != "step" and reader is not None:
                items[f.run.trace_id].append((tier, span.start_ns, 1, reader.span_id))
    out: dict[str, list[str]] = {}
    for trace, entries in items.items():
        ranked: list[str] = []
        for *_, sid in sorted(entries):
            if sid not in ranked:
                ranked.append(sid)
        out[trace] = ranked
    return out


def predictions(analysis: Any) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Per trace: (origin+chain list, all-errors list), ranked, without duplicates."""
    chain_pred: dict[str, list[str]] = defaultdict(list)
    all_pred: dict[str, list[str]] = defaultdict(list)
    failed = [f for f in analysis.findings if f.failed]
    failed.sort(key=lambda f: (-(f.confidence or 0), f.run.root.start_ns))
    for f in failed:
        out = chain_pred[f.run.trace_id]
        for c in f.candidates:
            sid = charged(f, c.span)
            if not c.suspect and sid not in out:
                out.append(sid)
    for f in failed:
        out = chain_pred[f.run.trace_id]
        for chain in f.chains:
            for hop in chain:
                if hop.error_type and charged(f, hop.span) not in out and hop.span is not f.run.root:
                    out.append(charged(f, hop.span))
    for trace, ids in chain_pred.items():
        all_pred[trace] = list(ids)
    for f in sorted(analysis.findings, key=lambda f: f.run.root.start_ns):
        out = all_pred[f.run.trace_id]
        for span in f.errors:
            if charged(f, span) not in out:
                out.append(charged(f, span))
    return chain_pred, all_pred


def score(pred: dict[str, list[str]], labels: list[dict[str, Any]], parents: dict[str, dict[str, str | None]]) -> dict[str, Any]:
    hit1 = hit3 = with_high = 0
    predicted = matched = 0
    sys_total = sys_found = 0
    gold_total = gold_found = 0
    via: dict[str, int] = defaultdict(int)
    for lab in labels:
        trace = lab["trace_id"]
        parent = parents.get(trace, {})
        gold = [e for e in lab["gold"]["errors"] if e.get("span_id")]
        ranked = pred.get(trace, [])
        high = lab["gold"].get("earliest_high_span_id")
        if high:
            with_high += 1
            hit1 += any(near(p, high, parent) for p in ranked[:1])
            hit3 += any(near(p, high, parent) for p in ranked[:3])
        for p in ranked:
            predicted += 1
            hit = [g["span_id"] for g in gold if near(p, g["span_id"], parent)]
            matched += bool(hit)
            if hit:  # how: the closest relation (the scorer's one hop, checked)
                via["same span" if p in hit else "gold is a child" if any(parent.get(g) == p for g in hit)
                    else "gold is the parent"] += 1
        for g in gold:
            gold_total += 1
            gold_found += any(near(p, g["span_id"], parent) for p in ranked)
            if g.get("top_class") == "System Execution":
                sys_total += 1
                sys_found += any(near(p, g["span_id"], parent) for p in ranked)
    return {"traces_with_high": with_high, "hit@1": hit1, "hit@3": hit3,
            "hit@1_rate": round(hit1 / with_high, 3) if with_high else 0.0,
            "hit@3_rate": round(hit3 / with_high, 3) if with_high else 0.0,
            "predicted": predicted, "matched": matched,
            "precision": round(matched / predicted, 3) if predicted else 0.0,
            "recall": f"{gold_found}/{gold_total}", "recall_rate": round(gold_found / gold_total, 3) if gold_total else 0.0,
            "system_execution_recall": f"{sys_found}/{sys_total}", "system_execution_found": sys_found,
            "system_execution_total": sys_total, "matched_via": dict(via)}


def by_type(analysis: Any, labels: list[dict[str, Any]], parents: dict[str, dict[str, str | None]]) -> dict[str, str]:
    """matched/predicted per error type (suspicions apart), placed as in the precision set."""
    from otel_agent_trace.analyzer.lifecycle import SUSPICION
    from otel_agent_trace.analyzer.classify import BUG_CLASS_OF_ERROR

    gold = {lab["trace_id"]: [e["span_id"] for e in lab["gold"]["errors"] if e.get("span_id")] for lab in labels}
    seen: set[tuple[str, str]] = set()
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for f in analysis.findings:
        life, trace = f.lifecycle, f.run.trace_id
        for span in f.errors:
            etype = life.error_type(span.span_id) or "?"
            kind = BUG_CLASS_OF_ERROR.get(etype)
            reader = f.readers.get(span.span_id) if kind == "tool" else None
            sid = reader.span_id if reader is not None else charged(f, span)
            if (trace, sid) in seen:
                continue
            seen.add((trace, sid))
            key = etype + (" (suspicion)" if SUSPICION in life.state(span.span_id).flags else "")
            counts[key][1] += 1
            counts[key][0] += any(near(sid, g, parents.get(trace, {})) for g in gold.get(trace, ()))
    return {k: f"{m}/{n}" for k, (m, n) in sorted(counts.items(), key=lambda kv: -kv[1][1])}


def baselines(spans: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, list[str]]]:
    errors: dict[str, list[str]] = {}
    llm: dict[str, list[str]] = {}
    for trace, items in spans.items():
        ordered = sorted(items, key=lambda s: int(s["startTimeUnixNano"]))
        errors[trace] = [s["spanId"] for s in ordered
                         if (s.get("status") or {}).get("code") == 2 or any(e.get("name") == "exception" for e in s.get("events") or ())]
        llm[trace] = [s["spanId"] for s in ordered
                      if any(a["key"] == "openinference.span.kind" and a["value"].get("stringValue") == "LLM"
                             for a in s.get("attributes") or ())]
    return {"error-status/exception spans": errors, "every LLM span": llm}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=DEFAULT_DIR)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    traces = os.path.join(args.dir, "traces.jsonl.gz")
    labels = [json.loads(line) for line in open(os.path.join(args.dir, "labels.jsonl"), encoding="utf-8")]
    from otel_agent_trace.analyzer.analysis import analyze

    analysis = analyze([traces])
    parents, spans = load_tree(traces)
    chain_pred, all_pred = predictions(analysis)
    results = {
        "traces": len(labels),
        "traces_analysed": len({f.run.trace_id for f in analysis.findings}),
        "runs": len(analysis.findings),
        "failed_runs": sum(f.failed for f in analysis.findings),
        "origin+chain": score(chain_pred, labels, parents),
        "all errors": score(all_pred, labels, parents),
        "unrecovered errors, earliest first": score(ranked_errors(analysis), labels, parents),
        "proven errors, TRAIL placement": score(ranked_errors(analysis, readers="reader", suspicions="exclude"),
                                                labels, parents),
        "  + suspicions, ranked last": score(ranked_errors(analysis, readers="reader", suspicions="last"),
                                             labels, parents),
        "proven errors + their readers": score(ranked_errors(analysis, readers="both", suspicions="exclude"),
                                               labels, parents),
        "  + recovered errors": score(ranked_errors(analysis, recovered=True, readers="both", suspicions="exclude"),
                                      labels, parents),
    }
    for name, pred in baselines(spans).items():
        results[f"baseline: {name}"] = score(pred, labels, parents)
    results["precision by error type (precision set)"] = by_type(analysis, labels, parents)
    print(f"TRAIL GAIA: {results['traces']} traces, {results['traces_analysed']} analysed, "
          f"{results['runs']} runs, {results['failed_runs']} failed")
    print(f"{'predictions':<40} {'hit@1':>10} {'hit@3':>10} {'precision':>16} {'recall (all gold)':>18} "
          f"{'SysExec recall':>15}")
    for key, r in results.items():
        if not isinstance(r, dict) or "hit@1" not in r:
            continue
        print(f"{key:<40} {r['hit@1']:>3}/{r['traces_with_high']:<3} {r['hit@1_rate']:>4.0%} "
              f"{r['hit@3']:>3}/{r['traces_with_high']:<3}{r['hit@3_rate']:>4.0%} "
              f"{r['precision']:>6.2f} ({r['matched']}/{r['predicted']}) {r['recall_rate']:>6.2f} ({r['recall']:>7}) "
              f"{r['system_execution_recall']:>10}")
    print("matched via (precision set):", results["proven errors, TRAIL placement"]["matched_via"])
    print("precision by error type (precision set):",
          ", ".join(f"{k} {v}" for k, v in results["precision by error type (precision set)"].items()))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
