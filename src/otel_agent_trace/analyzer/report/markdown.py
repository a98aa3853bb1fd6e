"""`--format md`: the fleet summary and, per failed run, origin -> chain -> critical as tables.
Past `fleet.DETAIL_ALL_RUNS` runs, the runs table becomes one table of failed runs per failure
group, and only the first runs of each group get their chain tables (as the HTML report)."""

from __future__ import annotations

from typing import Any

from otel_agent_trace.analyzer.analysis import Analysis
from otel_agent_trace.analyzer.report.fleet import (DETAIL_ALL_RUNS, EXAMPLES_PER_GROUP, examples, failure_groups,
                                                   reliability_items, repeated, run_key)
from otel_agent_trace.analyzer.report.json_report import to_dict


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _where(ref: dict) -> str:
    step = ref.get("step_index")
    return (f"step {step} " if step is not None else "") + str(ref.get("span_name", ""))


def _cost(value: Any) -> str:
    return "n/a" if value is None else f"${value:.4f}"


def render(analysis: Analysis, data: dict[str, Any] | None = None) -> str:
    data = data if data is not None else to_dict(analysis)
    s = data["summary"]
    m = s.get("metrics") or {}
    out = ["# Agent trace analysis", "",
           f"{s['runs']} run(s), {s['failed_runs']} failed, "
           + (f"{s['suspect_runs']} suspect, " if s.get("suspect_runs") else "")
           + f"{s['avg_steps_per_run']:.1f} steps per run on average.", ""]
    bad = [(i["path"], b) for i in data["inputs"] for b in i["bad_lines"]]
    errs = [i for i in data["inputs"] if i.get("error")]
    if bad or errs:
        out += ["## Input problems", ""]
        out += [f"- `{i['path']}`: {_cell(i['error'])}" for i in errs]
        out += [f"- `{p}:{b['line']}`: {_cell(b['reason'])}" for p, b in bad]
        out.append("")
    if m.get("runs"):
        spr = m["steps_per_run"]
        out += ["## Fleet metrics", "", "| metric | value |", "|---|---|",
                f"| steps per run (mean / p50 / p95) | {spr['mean']:.2f} / {spr['p50']:g} / {spr['p95']:g} |",
                f"| loop-abort rate | {m['loop_abort_rate']:.1%} |",
                f"| wrong-tool rate (rule-based) | {m['wrong_tool_rate']:.1%} of {m['tool_calls']} calls |",
                f"| trace capture rate | {m['trace_capture_rate']:.1%} |",
                f"| tokens per run (in / out) | {m['tokens_per_run']['input']:g} / {m['tokens_per_run']['output']:g} |",
                f"| cost per run | {_cost(m.get('cost_per_run'))} |"]
        out += [f"| {_cell(label)} | {value} |" for value, label in reliability_items(m)] + [""]
        if m["tool_error_rate"]:
            out += ["| tool | calls | errors | error rate |", "|---|---:|---:|---:|"]
            out += [f"| `{_cell(k)}` | {v['calls']} | {v['errors']} | {v['rate']:.1%} |" for k, v in m["tool_error_rate"].items()]
            out.append("")
        f = m["failures"]
        if f["by_bug_class"]:
            out += ["Failures by bug class: " + ", ".join(f"**{k}** {v}" for k, v in f["by_bug_class"].items()) + "; "
                    "by origin error type: " + ", ".join(f"`{k}` {v}" for k, v in f["by_origin_error_type"].items()), ""]
    runs = data["runs"]
    if len(runs) <= DETAIL_ALL_RUNS:
        out += ["## Runs", ""] + _runs_table(runs)
        detailed = runs
    else:
        groups = failure_groups(runs)
        shown = examples(groups)
        failed = sum(len(members) for members in groups.values())
        out += ["## Failure groups", "", f"{len(runs)} runs: {failed} failed in {len(groups)} group(s) of the same rules, "
                f"origin and bug class; the first {EXAMPLES_PER_GROUP} of each are detailed below, "
                f"{len(runs) - failed} other runs are only counted. `otel-agent-trace show TRACE_ID FILE` replays any run.", ""]
        for (rules, etype, where, bug), members in groups.items():
            found = f"origin `{etype}` at `{_cell(where)}`" if (etype, where) != ("-", "-") else "no origin found"
            out += [f"### {len(members)} x `{rules}`: {found}" + (f", {bug}" if bug != "-" else ""), ""]
            out += _runs_table(members)
        suspect = [r for r in runs if r["status"] == "suspect"]
        if suspect:
            out += [f"### {len(suspect)} suspect run(s): answered on an unrecovered error", ""] + _runs_table(suspect)
        detailed = [r for r in runs if run_key(r) in shown]
    for r in detailed:
        if r["status"] != "failed":
            continue
        out += [f"### Failed run `{r['trace_id']}` ({_cell(r['agent'])})", ""]
        c = r["critical"]
        rules = ", ".join(dict.fromkeys(x["rule_id"] for x in r.get("rules", [])))
        out += [f"- **critical**: `{c['error_type']}` {_cell(c['description'])}" + (f" (rules: {rules})" if rules else ""),
                f"- **bug class**: {r['bug_class'] or 'unknown'}", ""]
        chains = r.get("chains") or ([r["chain"]] if r["chain"] else [])
        for n, chain in enumerate(chains, start=1):
            cand = (r.get("candidates") or [{}])[n - 1] if r.get("candidates") else {}
            title = f"Chain {n}" + (f" (confidence {cand['confidence']:.2f})" if cand.get("confidence") is not None else "")
            out += [f"**{title}**", "", "| phase | span | error type | next hop depends on it by |", "|---|---|---|---|"]
            out += [f"| {h['phase']} | {_cell(_where(h))} | {h['error_type'] or ''} | {h['relation'] or ''} |" for h in chain]
            out.append("")
        if r["evidence"]:
            out += ["Evidence:", ""] + [f"- {_cell(e)}" for e in r["evidence"]] + [""]
        if repeated(r):
            out += ["Repeated errors (one `errors[]` entry each):", ""] + [f"- {_cell(x)}" for x in repeated(r)] + [""]
    return "\n".join(out) + "\n"


def _runs_table(runs: list[dict[str, Any]]) -> list[str]:
    out = ["| status | agent | trace | steps | origin | bug class | confidence |", "|---|---|---|---:|---|---|---:|"]
    for r in runs:
        origin = f"{_where(r['origin'])} `{r['origin']['error_type']}`" if r["origin"] else ""
        conf = "" if r.get("confidence") is None else f"{r['confidence']:.2f}"
        out.append(f"| {r['status']} | {_cell(r['agent'])} | `{r['trace_id']}` | {r['steps']} | {_cell(origin)} | "
                   f"{r['bug_class'] or ''} | {conf} |")
    out.append("")
    return out
