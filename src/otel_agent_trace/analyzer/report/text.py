"""The terminal report: fleet line and metrics, one line per run, and for each failed run a compact
table origin -> chain -> critical with bug class, confidence and evidence. Past
`fleet.DETAIL_ALL_RUNS` runs, failed runs are grouped by failure signature (a few in full, every
other one on a line of its own) and healthy runs are counted, as in the HTML report. ANSI colour
only when asked (the CLI asks when stdout is a terminal and NO_COLOR is unset)."""

from __future__ import annotations

from typing import Any

from otel_agent_trace.analyzer.analysis import Analysis
from otel_agent_trace.analyzer.report.fleet import (DETAIL_ALL_RUNS, EXAMPLES_PER_GROUP, failure_groups,
                                                   reliability_items, repeated)
from otel_agent_trace.analyzer.report.json_report import to_dict

PHASE_COLOR = {"origin": "31;1", "propagate": "33", "recovered": "32", "critical": "35;1"}
CLASS_COLOR = {"tool": "36;1", "model_decision": "33;1", "prompt": "34;1"}


class _Paint:
    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __call__(self, text: str, code: str | None) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and code else text


def render(analysis: Analysis, color: bool = False, data: dict[str, Any] | None = None) -> str:
    data = data if data is not None else to_dict(analysis)
    paint = _Paint(color)
    lines: list[str] = []
    for item in data["inputs"]:
        if item.get("error"):
            lines.append(paint(f"! {item['path']}: {item['error']}", "31"))
        for bad in item["bad_lines"]:
            lines.append(paint(f"! {item['path']}:{bad['line']}: {bad['reason']}", "31"))
    summary = data["summary"]
    suspect = f"{summary['suspect_runs']} suspect, " if summary.get("suspect_runs") else ""
    lines.append(f"{summary['runs']} run(s), {summary['failed_runs']} failed, {suspect}"
                 f"{summary['avg_steps_per_run']:.1f} steps per run on average")
    metrics = summary.get("metrics")
    if metrics and metrics["runs"]:
        lines.extend(_metrics(metrics))
    runs = data["runs"]
    if len(runs) <= DETAIL_ALL_RUNS:
        by_span = {r["run_span_id"]: r for r in runs}
        for run in runs:
            lines.extend(_run(run, paint, by_span))
    else:
        lines.extend(_fleet(runs, paint))
    return "\n".join(lines) + "\n"


def _run(run: dict[str, Any], paint: _Paint, by_span: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """A healthy run on one line (with its recovered errors), a failed run as its table; a run
    that resumes another names it (`by_span`: the report's runs by run span id)."""
    lines = [_headline(run, paint)]
    if run.get("resumes"):
        lines.append(f"  resumes  : {_earlier(run['resumes'], by_span or {})}")
    if run["status"] == "ok":
        if run["recovered"]:
            lines.append(f"  recovered: {', '.join(_where(r) for r in run['recovered'])}")
        return lines
    lines.insert(0, "")
    critical = run["critical"]
    if critical is not None:
        rules = ", ".join(dict.fromkeys(r["rule_id"] for r in run.get("rules", [])))
        lines.append(f"  critical : {critical['error_type']} - {critical['description']}"
                     + (f"  [{rules}]" if rules else ""))
    else:  # `suspect`: the run answered, on an error nothing recovered
        lines.append("  critical : none: the run answered, but its answer depends on an unrecovered error")
    origin = run["origin"]
    if origin is None:
        lines.append("  origin   : not found in the trace")
        if run.get("bug_class"):
            lines.append(f"  bug class: {paint(run['bug_class'], CLASS_COLOR.get(run['bug_class']))}")
    else:
        lines.append(f"  origin   : {paint(_where(origin), PHASE_COLOR['origin'])}  {origin['error_type']}  "
                     f"(span {origin['span_id']}){_confidence(run)}"
                     + (f"  in sub-agent {origin['agent']}" if origin.get("agent") not in (None, run["agent"]) else ""))
        bug = run["bug_class"] or "unknown"
        lines.append(f"  bug class: {paint(bug, CLASS_COLOR.get(bug))}")
        lines.append("  chain    :")
        lines.extend(_chain(run["chain"], paint))
        for n, (cand, chain) in enumerate(zip(run.get("candidates", [])[1:], run.get("chains", [])[1:]), start=2):
            lines.append(f"  chain {n}  : from {_where(cand)} [{cand['error_type']}]  confidence {cand['confidence']:.2f}")
            lines.extend(_chain(chain, paint))
    for note in run["evidence"]:
        lines.append(f"  evidence : {note}")
    lines.extend(f"  repeated : {x}" for x in repeated(run))
    return lines


def _fleet(runs: list[dict[str, Any]], paint: _Paint) -> list[str]:
    """Failed runs by failure group: the first runs of a group in full, the others one line each."""
    groups = failure_groups(runs)
    failed = sum(len(members) for members in groups.values())
    healthy = [r for r in runs if r["status"] == "ok"]
    suspect = [r for r in runs if r["status"] == "suspect"]
    recovered = sum(1 for r in healthy if r["recovered"])
    lines = ["", f"{failed} failed run(s) in {len(groups)} group(s) of the same rules, origin and bug class; "
             f"the first {EXAMPLES_PER_GROUP} of each in full. `otel-agent-trace show TRACE_ID FILE` replays any run."]
    for (rules, etype, where, bug), members in groups.items():
        found = f"origin {etype} at {where}" if (etype, where) != ("-", "-") else "no origin found"
        lines.append("")
        lines.append(paint(f"== {len(members)} x {rules}: {found}" + (f", {bug}" if bug != "-" else ""), "1"))
        for run in members[:EXAMPLES_PER_GROUP]:
            lines.extend(_run(run, paint))
        if len(members) > EXAMPLES_PER_GROUP:
            lines.append("")
        for run in members[EXAMPLES_PER_GROUP:]:
            origin = run["origin"]
            at = f"  origin {_where(origin)}{_confidence(run)}" if origin else ""
            lines.append(_headline(run, paint) + at)
    if suspect:  # one line each: the run answered, on an error nothing recovered
        lines += ["", paint(f"{len(suspect)} suspect run(s): answered on an unrecovered error", "33;1")]
        for run in suspect:
            origin = run["origin"]
            lines.append(_headline(run, paint) + (f"  origin {_where(origin)} [{origin['error_type']}]" if origin else ""))
    lines.append("")
    lines.append(paint(f"{len(healthy)} run(s) ok", "32") + f", not listed ({recovered} recovered from an error); "
                 "`--format json` lists every run.")
    return lines


def _earlier(resumes: dict[str, Any], by_span: dict[str, dict[str, Any]]) -> str:
    """The run a run resumes: by name and status when the report holds it, else by its ids."""
    earlier = by_span.get(resumes["run_span_id"]) if resumes.get("run_span_id") else None
    where = f"trace {resumes['trace_id']}" + (f" span {resumes['run_span_id']}" if resumes.get("run_span_id") else "")
    if earlier is None:
        return f"the run of {where} (not in this report)"
    return f"{earlier['agent'] or 'agent'} ({earlier['status']}, {earlier['steps']} steps), {where}"


def _headline(run: dict[str, Any], paint: _Paint) -> str:
    status = (paint("FAILED", "31;1") if run["status"] == "failed" else paint("SUSPECT", "33;1")
              if run["status"] == "suspect" else paint("ok    ", "32"))
    return f"{status} {run['agent'] or 'agent'}  trace {run['trace_id']}  {run['steps']} steps"


def _confidence(run: dict[str, Any]) -> str:
    conf = run.get("confidence")
    return f"  confidence {conf:.2f}" if isinstance(conf, (int, float)) else ""


def _chain(chain: list[dict], paint: _Paint) -> list[str]:
    out = []
    relation = None
    for hop in chain:
        via = f"  ({relation} the line above)" if relation else ""
        error = f" [{hop['error_type']}]" if hop["error_type"] else ""
        phase = f"{hop['phase']:<9}"
        out.append(f"    {paint(phase, PHASE_COLOR.get(hop['phase']))} {_where(hop)}{error}{via}")
        relation = (hop["relation"] or "").replace("_", " ")
    return out


def _metrics(m: dict[str, Any]) -> list[str]:
    spr = m["steps_per_run"]
    out = [f"steps/run mean {spr['mean']:.1f} p50 {spr['p50']:g} p95 {spr['p95']:g}; "
           f"loop aborts {m['loop_abort_rate']:.0%}; wrong-tool {m['wrong_tool_rate']:.0%} of {m['tool_calls']} calls; "
           f"capture {m['trace_capture_rate']:.0%}; tokens/run {m['tokens_per_run']['input']:g} in "
           f"{m['tokens_per_run']['output']:g} out"
           + (f"; cost/run ${m['cost_per_run']:.4f}" if m.get("cost_per_run") is not None else "")]
    errs = [f"{name} {v['errors']}/{v['calls']}" for name, v in m["tool_error_rate"].items() if v["errors"]]
    if errs:
        out.append("tool errors: " + ", ".join(errs))
    reliability = reliability_items(m)
    if reliability:
        out.append("reliability: " + "; ".join(f"{label} {value}" for value, label in reliability))
    fails = m["failures"]
    if fails["by_bug_class"]:
        out.append("failures: " + ", ".join(f"{k} {v}" for k, v in fails["by_bug_class"].items()) + " | " +
                   ", ".join(f"{k} {v}" for k, v in fails["by_origin_error_type"].items()))
    return out


def _where(ref: dict) -> str:
    step = ref.get("step_index")
    prefix = f"step {step} " if step is not None else ""
    return f"{prefix}{ref.get('span_name', '')}".strip()
