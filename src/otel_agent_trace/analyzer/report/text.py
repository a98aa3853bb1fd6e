"""The terminal report: one line per run, and for each failed run origin -> chain -> critical."""

from __future__ import annotations

from otel_agent_trace.analyzer.analysis import Analysis
from otel_agent_trace.analyzer.report.json_report import to_dict


def render(analysis: Analysis) -> str:
    data = to_dict(analysis)
    lines: list[str] = []
    for item in data["inputs"]:
        if item.get("error"):
            lines.append(f"! {item['path']}: {item['error']}")
        for bad in item["bad_lines"]:
            lines.append(f"! {item['path']}:{bad['line']}: {bad['reason']}")
    summary = data["summary"]
    lines.append(f"{summary['runs']} run(s), {summary['failed_runs']} failed, "
                 f"{summary['avg_steps_per_run']:.1f} steps per run on average")
    for run in data["runs"]:
        label = run["agent"] or "agent"
        head = f"{'FAILED' if run['status'] == 'failed' else 'ok    '} {label}  trace {run['trace_id']}  {run['steps']} steps"
        lines.append("")
        lines.append(head)
        if run["status"] != "failed":
            if run["recovered"]:
                lines.append(f"  recovered: {', '.join(_where(r) for r in run['recovered'])}")
            continue
        critical = run["critical"]
        lines.append(f"  critical : {critical['error_type']} - {critical['description']}")
        origin = run["origin"]
        if origin is None:
            lines.append("  origin   : not found in the trace")
        else:
            lines.append(f"  origin   : {_where(origin)}  {origin['error_type']}  (span {origin['span_id']})")
            lines.append(f"  bug class: {run['bug_class'] or 'unknown'}")
            lines.append("  chain    :")
            relation = None
            for hop in run["chain"]:
                via = f"  ({relation} the line above)" if relation else ""
                error = f" [{hop['error_type']}]" if hop["error_type"] else ""
                lines.append(f"    {hop['phase']:<9} {_where(hop)}{error}{via}")
                relation = (hop["relation"] or "").replace("_", " ")
        for note in run["evidence"]:
            lines.append(f"  evidence : {note}")
    return "\n".join(lines) + "\n"


def _where(ref: dict) -> str:
    step = ref.get("step_index")
    prefix = f"step {step} " if step is not None else ""
    return f"{prefix}{ref.get('span_name', '')}".strip()
