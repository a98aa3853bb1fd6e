"""`analyze --all-failed --judge` on Who&When's Algorithm-Generated subset, with the scripted
judge only: there is no real LLM here, so this measures what the judge's plumbing allows, never
what a model would judge.

    python bench/bench_judge_whowhen.py [--dir /work/shared/benchmarks/whowhen-ag] [--top 3] [--json out.json]
    python bench/bench_judge_whowhen.py --smoke   # the test suite's: 6 logs (bench_whowhen's sample)

The judge is `otel_agent_trace.scripted_servers.scripted_judge.ScriptedJudge` given the gold step of each
log (an oracle, keyed by the log's task text): with it, step accuracy is the share of logs whose
gold step is among the candidates the judge is asked about (the ceiling any judge has with these
candidates), and the requests and tokens are what each strategy spends per log (prompt tokens as
the scripted server counts them, ~4 characters each, close to a real tokenizer's count for
English). The report is read exactly as bench_whowhen.py reads it (its `score`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import tempfile
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_whowhen  # noqa: E402

from otel_agent_trace.scripted_servers.scripted_judge import ScriptedJudge, ScriptedJudgeServer  # noqa: E402


def _tasks(lines: list[str]) -> dict[str, str]:
    """trace id -> the task text as the judge's question shows it (one line)."""
    out = {}
    for line in lines:
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    if s["name"].startswith("invoke_agent"):
                        a = bench_whowhen._attributes(s)
                        out[s["traceId"]] = str(a.get("input.value") or "").replace("\n", " ")[:200]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=bench_whowhen.DEFAULT_DIR)
    ap.add_argument("--top", default="3", help="--judge-top (0: every step)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--smoke", action="store_true",
                    help=f"{bench_whowhen.SMOKE_TRACES} traces, every strategy; asserts the figures' shape")
    args = ap.parse_args(argv)
    traces = os.path.join(args.dir, "traces.jsonl.gz")
    with gzip.open(traces, "rt", encoding="utf-8") as handle:
        lines = handle.readlines()
    labels = [json.loads(line) for line in open(os.path.join(args.dir, "labels.jsonl"), encoding="utf-8")]
    smoke_dir = tempfile.TemporaryDirectory() if args.smoke else None
    if smoke_dir is not None:  # bench_whowhen's smoke sample, as a plain file
        lines = random.Random(27).sample(lines, bench_whowhen.SMOKE_TRACES)
        traces = os.path.join(smoke_dir.name, "smoke.jsonl")
        with open(traces, "w", encoding="utf-8") as out:
            out.writelines(lines)
    steps = bench_whowhen.load_steps(lines)
    labels = [lab for lab in labels if lab["trace_id"] in steps]
    tasks = _tasks(lines)
    gold = {tasks[lab["trace_id"]]: lab["gold"]["mistake_step"] for lab in labels}

    def oracle(question: str) -> int:
        task = question.split("# Task\n", 1)[-1].split("\n", 1)[0][:200]
        return gold.get(task, -1)

    rows: dict[str, Any] = {"no judge": {**bench_whowhen.score(bench_whowhen.report_of(traces), labels, steps)}}
    os.environ.setdefault("OPENAI_API_KEY", "scripted")
    for strategy in ("all-at-once", "step-by-step", "binary-search"):
        judge = ScriptedJudge(oracle)
        with ScriptedJudgeServer(judge) as server, tempfile.TemporaryDirectory() as cache:
            report = bench_whowhen.report_of(traces, ["--judge", "--judge-model", "scripted-oracle",
                                                      "--judge-base-url", server.base_url, "--judge-cache", cache,
                                                      "--judge-strategy", strategy, "--judge-top", args.top,
                                                      "--judge-max-calls", "100000",
                                                      "--judge-max-tokens", "1000000000"])
        figures = bench_whowhen.score(report, labels, steps)
        spent = report["judge"]
        figures.update({k: spent[k] for k in ("requests", "prompt_tokens", "completion_tokens", "verdicts",
                                              "malformed", "refused", "failed")})
        figures["requests_per_log"] = round(spent["requests"] / len(labels), 2)
        figures["prompt_tokens_per_log"] = round(spent["prompt_tokens"] / len(labels))
        rows[strategy] = figures
    n = len(labels)
    print(f"Who&When AG, {n} logs, --all-failed, --judge-top {args.top}; judge: scripted oracle (no real LLM)")
    print(f"{'':14} {'step':>16} {'agent':>16} {'requests/log':>13} {'prompt tok/log':>15}")
    for name, f in rows.items():
        print(f"{name:14} {bench_whowhen.pct(f['step'], n):>16} {bench_whowhen.pct(f['agent'], n):>16} "
              f"{f.get('requests_per_log', 0):>13} {f.get('prompt_tokens_per_log', 0):>15}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(rows, out, indent=2)
    if smoke_dir is not None:
        smoke_dir.cleanup()
        assert set(rows) == {"no judge", "all-at-once", "step-by-step", "binary-search"}, rows
        assert all(rows[s]["requests"] > 0 and rows[s]["failed"] == 0 for s in rows if s != "no judge"), rows
        print("smoke: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
