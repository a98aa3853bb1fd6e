"""`--format html`: one self-contained file (inline CSS, SVG and a few lines of JS; no network).

Fleet summary on top; per run a swimlane timeline (the run, its steps, one lane per tool; errors
coloured by lifecycle phase, the origin chain outlined), the dependency graph (steps in columns,
their tools below, the run on the right; strong edges solid, weak dashed, the chain highlighted),
the chain table, evidence, and the step-by-step replay.
"""

from __future__ import annotations

import base64
import hashlib
import html
from typing import Any

from otel_agent_trace.analyzer.analysis import Analysis, Reduced
from otel_agent_trace.analyzer.graph import RESULT_OF
from otel_agent_trace.analyzer.locate import Finding
from otel_agent_trace.analyzer.show import decision_text, short, steps_of
from otel_agent_trace.analyzer.report.fleet import (DETAIL_ALL_RUNS, EXAMPLES_PER_GROUP, Signature, examples,
                                                   repeated,
                                                   failure_groups, reliability_items, run_key)
from otel_agent_trace.analyzer.report.json_report import to_dict
from otel_agent_trace.analyzer.runs import is_step_span, is_tool_span
from otel_agent_trace.semconv import GEN_AI_TOOL_NAME
from otel_agent_trace.vocabulary import STRONG_RELATIONS, Relation

PHASE_FILL = {"origin": "#d62728", "propagate": "#ff9f1c", "recovered": "#2ca02c", "critical": "#7b2cbf", None: "#9db4c8"}
E = html.escape

CSS = """
:root{--fg:#1d2433;--muted:#667085;--line:#e4e7ec;--bg:#f7f8fa}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{background:#1d2433;color:#fff;padding:18px 28px}header h1{margin:0;font-size:20px}header p{margin:4px 0 0;color:#c7cdd8}
main{padding:20px 28px;max-width:1400px}.graph{overflow-x:auto}.graph svg{max-width:none}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin-bottom:16px}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px 14px;min-width:150px}
.card b{display:block;font-size:20px}.card span{color:var(--muted);font-size:12px}
table{border-collapse:collapse;background:#fff;margin:8px 0 16px}th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f0f2f5;font-weight:600}td.num{text-align:right}
section.run{background:#fff;border:1px solid var(--line);border-radius:10px;margin:14px 0;padding:4px 16px 12px}
section.run.failed{border-left:5px solid #d62728}section.run.ok{border-left:5px solid #2ca02c}
summary{cursor:pointer;padding:8px 0;font-weight:600}summary code{font-weight:400}
.pill{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;color:#fff;margin-left:6px}
.p-tool{background:#1f77b4}.p-model_decision{background:#c9731c}.p-prompt{background:#5b47c4}.p-failed{background:#d62728}.p-ok{background:#2ca02c}.p-unknown{background:#667085}
.legend span{display:inline-block;margin-right:14px;font-size:12px;color:var(--muted)}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;vertical-align:-2px}
svg{background:#fff;max-width:100%;height:auto}svg text{font:11px system-ui,sans-serif;fill:#1d2433}
.evidence li{margin:2px 0}.steps td{font-size:12px}.steps td.mono,code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
h3{margin:14px 0 4px;font-size:14px}
svg .node:hover rect,svg .bar:hover{stroke:#000;stroke-width:2}
"""

JS = """
document.querySelectorAll('[data-span]').forEach(function(el){
  el.addEventListener('mouseenter',function(){var id=el.getAttribute('data-span');
    document.querySelectorAll('[data-span="'+id+'"]').forEach(function(o){o.classList.add('hl')});});
  el.addEventListener('mouseleave',function(){document.querySelectorAll('.hl').forEach(function(o){o.classList.remove('hl')});});
});
document.body.setAttribute('data-ready','1');
"""


# Trace content is escaped everywhere (`E`); the policy is the second wall: no network, no script
# but our own inline one (by its hash), no plugins, no forms, no base URL. Inline `style`
# attributes are allowed (bars and pills are coloured by them); CSS cannot run script.
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
       f"script-src 'sha256-{base64.b64encode(hashlib.sha256(JS.encode()).digest()).decode()}'; "
       "base-uri 'none'; form-action 'none'")


def render(analysis: Analysis, data: dict[str, Any] | None = None) -> str:
    data = data if data is not None else to_dict(analysis)
    s = data["summary"]
    m = s.get("metrics") or {}
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">",
             "<meta name='viewport' content='width=device-width,initial-scale=1'>",
             "<title>Agent trace analysis</title><style>", CSS, ".hl{outline:2px solid #000}</style></head><body>",
             f"<header><h1>Agent trace analysis</h1><p>{s['runs']} run(s), {s['failed_runs']} failed, "
             f"{s['avg_steps_per_run']:.1f} steps per run on average</p></header><main>"]
    parts.append(_fleet(m, data))
    if isinstance(analysis, Reduced):  # the streaming CLI: each run's section was rendered as it came
        rendered = {run_key(r.data): r.html for r in analysis.runs}

        def section(run: dict[str, Any]) -> str:
            return rendered.get(run_key(run)) or _run(run, None)
    else:
        findings = {(f.run.trace_id, f.run.root.span_id): f for f in analysis.findings}

        def section(run: dict[str, Any]) -> str:
            return _run(run, findings.get(run_key(run)))
    runs = data["runs"]
    if len(runs) <= DETAIL_ALL_RUNS:
        parts.append(_legend())
        parts.extend(section(run) for run in runs)
    else:
        groups = failure_groups(runs)
        shown = examples(groups)
        parts.append(_failure_groups(runs, groups, shown))
        parts.append(_legend())
        parts.extend(section(run) for run in runs if run_key(run) in shown)
    parts.append(f"</main><script>{JS}</script></body></html>")
    return "".join(parts) + "\n"


def _failure_groups(runs: list[dict[str, Any]], groups: dict[Signature, list[dict[str, Any]]],
                    shown: set[tuple[str, str]]) -> str:
    """The groups' tables; `shown`: the runs that get a section (linked from their row)."""
    failed = sum(len(g) for g in groups.values())
    out = [f"<h2>Failure groups</h2><p>{len(runs)} runs: {failed} failed in {len(groups)} group(s) of the same "
           f"rules, origin and bug class. The first {EXAMPLES_PER_GROUP} runs of each group are shown in full below; "
           "every failed run is listed. <code>otel-agent-trace show TRACE_ID FILE</code> replays any run.</p>"]
    for n, ((rules, etype, where, bug), members) in enumerate(groups.items(), start=1):
        found = (f"origin <code>{E(etype)}</code> at <code>{E(where)}</code>" if (etype, where) != ("-", "-")
                 else "no origin found")
        pill = f"<span class='pill p-{E(bug)}'>{E(bug)}</span>" if bug != "-" else ""
        out.append(f"<details{' open' if n <= 5 else ''}><summary>{len(members)} × <code>{E(rules)}</code> — {found}"
                   f"{pill}</summary><table><tr><th>trace</th><th>agent</th><th>steps</th><th>origin step</th>"
                   "<th>confidence</th></tr>")
        for run in members:
            trace = E(run["trace_id"])
            link = f"<a href='#run-{trace}-{E(run['run_span_id'])}'>{trace}</a>" if run_key(run) in shown else trace
            origin = run.get("origin") or {}
            conf = "" if run.get("confidence") is None else f"{run['confidence']:.2f}"
            out.append(f"<tr><td><code>{link}</code></td><td>{E(run['agent'] or '')}</td><td class='num'>{run['steps']}</td>"
                       f"<td class='num'>{'' if origin.get('step_index') is None else origin['step_index']}</td>"
                       f"<td class='num'>{conf}</td></tr>")
        out.append("</table></details>")
    return "".join(out)


def _fleet(m: dict[str, Any], data: dict[str, Any]) -> str:
    out = ["<h2>Fleet</h2>"]
    problems = [f"{E(i['path'])}: {E(i['error'])}" for i in data["inputs"] if i.get("error")]
    problems += [f"{E(i['path'])}:{b['line']}: {E(b['reason'])}" for i in data["inputs"] for b in i["bad_lines"]]
    if problems:
        out.append("<p><b>Input problems</b></p><ul>" + "".join(f"<li>{p}</li>" for p in problems[:50]) + "</ul>")
    if not m.get("runs"):
        return "".join(out) + "<p>No runs.</p>"
    spr = m["steps_per_run"]
    cards = [(f"{spr['mean']:.1f}", f"steps/run (p50 {spr['p50']:g}, p95 {spr['p95']:g})"),
             (f"{m['loop_abort_rate']:.0%}", "loop-abort rate"),
             (f"{m['wrong_tool_rate']:.0%}", f"wrong-tool rate ({m['tool_calls']} calls)"),
             (f"{m['trace_capture_rate']:.0%}", "trace capture rate"),
             (f"{m['tokens_per_run']['input']:g} / {m['tokens_per_run']['output']:g}", "tokens/run in / out"),
             ("n/a" if m.get("cost_per_run") is None else f"${m['cost_per_run']:.4f}", "cost/run")] + reliability_items(m)
    out.append("<div class='cards'>" + "".join(f"<div class='card'><b>{E(v)}</b><span>{E(k)}</span></div>" for v, k in cards)
               + "</div>")
    if m["tool_error_rate"]:
        out.append("<table><tr><th>tool</th><th>calls</th><th>errors</th><th>error rate</th></tr>")
        for name, v in m["tool_error_rate"].items():
            out.append(f"<tr><td><code>{E(name)}</code></td><td class='num'>{v['calls']}</td>"
                       f"<td class='num'>{v['errors']}</td><td class='num'>{v['rate']:.1%}</td></tr>")
        out.append("</table>")
    f = m["failures"]
    if f["by_bug_class"]:
        out.append("<p>Failures by bug class: " + ", ".join(f"<span class='pill p-{E(k)}'>{E(k)} {v}</span>"
                                                            for k, v in f["by_bug_class"].items())
                   + " &nbsp; by origin error type: " + ", ".join(f"<code>{E(k)}</code> {v}"
                                                                  for k, v in f["by_origin_error_type"].items()) + "</p>")
    return "".join(out)


def _legend() -> str:
    items = [("origin", "origin (error first appears)"), ("propagate", "propagate"), ("recovered", "recovered"),
             ("critical", "critical"), (None, "no error")]
    return ("<p class='legend'>" + "".join(f"<span><i style='background:{PHASE_FILL[k]}'></i>{E(t)}</span>" for k, t in items)
            + "<span><i style='background:#fff;border:2px solid #000'></i>on the origin chain</span>"
            "<span>── strong dependency</span><span>- - weak (context)</span></p>")


def run_section(run: dict[str, Any], finding: Finding | None) -> str:
    """One run's section (its JSON entry and finding), rendered while the finding is alive."""
    return _run(run, finding)


def _run(run: dict[str, Any], finding: Finding | None) -> str:
    failed = run["status"] == "failed"
    suspect = run["status"] == "suspect"
    pill = (f"<span class='pill p-{'failed' if failed else 'ok'}'>{'FAILED' if failed else 'ok'}</span>" if not suspect
            else "<span class='pill p-model_decision'>SUSPECT</span>")
    bug = f"<span class='pill p-{E(run['bug_class'])}'>{E(run['bug_class'])}</span>" if run.get("bug_class") else ""
    origin = ""
    if run["origin"]:
        o = run["origin"]
        conf = f" (confidence {run['confidence']:.2f})" if run.get("confidence") is not None else ""
        origin = f" — origin: step {o['step_index']} <code>{E(o['span_name'])}</code> {E(o['error_type'] or '')}{conf}"
    out = [f"<section class='run {'failed' if failed else 'ok'}' id='run-{E(run['trace_id'])}-{E(run['run_span_id'])}'>",
           f"<details{' open' if failed else ''}><summary>{pill}{bug} {E(run['agent'] or 'agent')} "
           f"<code>{E(run['trace_id'])}</code> · {run['steps']} steps{origin}</summary>"]
    if failed and run["critical"]:
        c = run["critical"]
        rules = ", ".join(dict.fromkeys(x["rule_id"] for x in run.get("rules", [])))
        out.append(f"<p><b>critical</b>: <code>{E(c['error_type'] or '')}</code> {E(c['description'] or '')}"
                   + (f" <small>(rules: {E(rules)})</small>" if rules else "") + "</p>")
    if finding is not None:
        chain_ids = {h["span_id"] for ch in (run.get("chains") or [run["chain"]]) for h in ch}
        out.append("<h3>Timeline</h3>" + _timeline(finding, chain_ids))
        out.append("<h3>Dependency graph</h3>" + _graph(finding, run))
    for n, chain in enumerate(run.get("chains") or ([run["chain"]] if run["chain"] else []), start=1):
        cand = (run.get("candidates") or [{}] * n)[n - 1]
        conf = f" (confidence {cand['confidence']:.2f})" if cand.get("confidence") is not None else ""
        out.append(f"<h3>Chain {n}{conf}</h3><table><tr><th>phase</th><th>step</th><th>span</th><th>error type</th>"
                   "<th>next hop depends on it by</th></tr>")
        for h in chain:
            color = PHASE_FILL.get(h["phase"], PHASE_FILL[None])
            out.append(f"<tr><td><span class='pill' style='background:{color}'>{E(h['phase'])}</span></td>"
                       f"<td>{'' if h['step_index'] is None else h['step_index']}</td><td><code>{E(h['span_name'])}</code></td>"
                       f"<td>{E(h['error_type'] or '')}</td><td>{E(h['relation'] or '')}</td></tr>")
        out.append("</table>")
    if run["evidence"]:
        out.append("<h3>Evidence</h3><ul class='evidence'>" + "".join(f"<li>{E(e)}</li>" for e in run["evidence"]) + "</ul>")
    again = repeated(run)
    if again:
        out.append("<h3>Repeated errors</h3><ul class='evidence'>" + "".join(f"<li>{E(x)}</li>" for x in again) + "</ul>")
    if finding is not None and finding.run.steps:
        out.append(_replay(finding))
    out.append("</details></section>")
    return "".join(out)


def _timeline(f: Finding, chain_ids: set[str]) -> str:
    run, life = f.run, f.lifecycle
    t0 = run.root.start_ns
    t1 = max([run.root.end_ns] + [s.end_ns for s in run.spans.values()])
    span_ns = max(t1 - t0, 1)
    tools = sorted({str(t.attr(GEN_AI_TOOL_NAME) or t.name) for t in run.tools})
    lanes = ["run", "steps"] + tools
    left, width, lane_h = 150, 900, 26
    height = 30 + lane_h * len(lanes)
    x = lambda ns: left + (ns - t0) / span_ns * width  # noqa: E731
    out = [f"<svg viewBox='0 0 {left + width + 20} {height}' width='{left + width + 20}' role='img' "
           f"aria-label='timeline'>"]
    for i, lane in enumerate(lanes):
        y = 20 + i * lane_h
        out.append(f"<rect x='0' y='{y}' width='{left + width + 20}' height='{lane_h}' fill='{'#fafbfc' if i % 2 else '#fff'}'/>"
                   f"<text x='8' y='{y + 17}'>{E(short(lane, 22))}</text>")
    for k in range(0, 5):
        xx = left + width * k / 4
        out.append(f"<line x1='{xx:.1f}' y1='16' x2='{xx:.1f}' y2='{height}' stroke='#eef0f3'/>"
                   f"<text x='{xx + (2 if k < 4 else -2):.1f}' y='12' text-anchor='{'start' if k < 4 else 'end'}' "
                   f"style='fill:#98a2b3'>{(span_ns * k / 4) / 1e6:.0f} ms</text>")

    def bar(span: Any, lane: int, label: str) -> None:
        phase = life.phase(span.span_id) if life else None
        if span is run.root and f.failed:
            phase = "critical"
        fill = PHASE_FILL.get(phase, PHASE_FILL[None])
        y = 20 + lane * lane_h + 4
        xs, xe = x(span.start_ns), max(x(span.end_ns), x(span.start_ns) + 3)
        stroke = "stroke='#000' stroke-width='2'" if span.span_id in chain_ids else "stroke='#fff'"
        etype = life.error_type(span.span_id) if life else None
        title = f"{span.name} {phase or ''} {etype or ''} {(span.end_ns - span.start_ns) / 1e6:.1f} ms"
        out.append(f"<g class='bar' data-span='{span.span_id}'><rect x='{xs:.1f}' y='{y}' width='{xe - xs:.1f}' "
                   f"height='{lane_h - 8}' rx='3' fill='{fill}' {stroke}><title>{E(title)}</title></rect>")
        if xe - xs > 40:
            out.append(f"<text x='{xs + 4:.1f}' y='{y + 13}' style='fill:#fff'>{E(short(label, int((xe - xs) / 6)))}</text>")
        out.append("</g>")

    bar(run.root, 0, run.root.name)
    for step in run.steps:
        bar(step, 1, f"step {run.step_index_of(step)}")
    for tool in run.tools:
        bar(tool, 2 + tools.index(str(tool.attr(GEN_AI_TOOL_NAME) or tool.name)), str(tool.attr(GEN_AI_TOOL_NAME) or ""))
    out.append("</svg>")
    return "".join(out)


def _graph(f: Finding, run_data: dict[str, Any]) -> str:
    run, life, graph = f.run, f.lifecycle, f.graph
    if graph is None:
        return ""
    chain_edges: set[tuple[str, str]] = set()
    chain_nodes: dict[str, str] = {}  # span on a chain -> its phase there (the first chain's wins)
    for chain in reversed(run_data.get("chains") or [run_data["chain"]]):
        for a, b in zip(chain, chain[1:]):
            chain_edges.add((b["span_id"], a["span_id"]))
        chain_nodes.update((h["span_id"], h["phase"]) for h in chain)
    # layout: column = step index; row 0 = step, rows 1.. = its tools; the run at the far right
    pos: dict[str, tuple[float, float]] = {}
    col_w, row_h, nw, nh = 170, 58, 150, 34
    steps = run.steps
    step_col = {s.span_id: i for i, s in enumerate(steps)}
    tool_rows: dict[int, int] = {}
    for i, s in enumerate(steps):
        pos[s.span_id] = (20 + i * col_w, 20)
    for tool in run.tools:
        # under the step that decided it (`decided_by`: a foreign tool is its model call's sibling),
        # else under its step ancestor
        col = next((step_col[t] for t, relation in graph.edges.get(tool.span_id, ())
                    if relation == Relation.DECIDED_BY.value and t in step_col), None)
        node = run.spans.get(tool.parent_id or "")
        while node is not None and col is None:
            col = step_col.get(node.span_id)
            node = run.spans.get(node.parent_id or "")
        col = col if col is not None else len(steps)
        row = tool_rows.get(col, 0) + 1
        tool_rows[col] = row
        pos[tool.span_id] = (20 + col * col_w, 20 + row * row_h)
    root_col = max([len(steps)] + [c + 1 for c in tool_rows])
    pos[run.root.span_id] = (20 + root_col * col_w, 20)
    width = 40 + (root_col + 1) * col_w
    height = 40 + (max(tool_rows.values(), default=0) + 1) * row_h
    # natural size, scrolled sideways when long: labels stay readable at any number of steps
    out = [f"<div class='graph'><svg viewBox='0 0 {width} {height}' width='{width}' role='img' aria-label='dependency graph'>",
           "<defs><marker id='a' viewBox='0 0 10 10' refX='10' refY='5' markerWidth='7' markerHeight='7' orient='auto'>"
           "<path d='M0,0L10,5L0,10z' fill='#98a2b3'/></marker>"
           "<marker id='ac' viewBox='0 0 10 10' refX='10' refY='5' markerWidth='7' markerHeight='7' orient='auto'>"
           "<path d='M0,0L10,5L0,10z' fill='#d62728'/></marker></defs>"]
    # edges drawn from the dependency to the dependent (the direction errors flow)
    for source, targets in graph.edges.items():
        for target, relation in targets:
            if source not in pos or target not in pos:
                continue
            (x1, y1), (x2, y2) = pos[target], pos[source]
            on = (source, target) in chain_edges
            ax, ay = x1 + nw / 2, y1 + nh / 2
            bx, by = x2 + nw / 2, y2 + nh / 2
            # attach to box borders
            if abs(bx - ax) >= abs(by - ay):
                ax += nw / 2 if bx > ax else -nw / 2
                bx -= nw / 2 if bx > ax else -nw / 2
            else:
                ay += nh / 2 if by > ay else -nh / 2
                by -= nh / 2 if by > ay else -nh / 2
            mx, my = (ax + bx) / 2, (ay + by) / 2 - (12 if ay == by else 0)
            dash = "" if relation in STRONG_RELATIONS or relation == RESULT_OF else " stroke-dasharray='5 4'"
            color, w, mk = ("#d62728", 3, "ac") if on else ("#98a2b3", 1.3, "a")
            out.append(f"<path d='M{ax:.1f},{ay:.1f} Q{mx:.1f},{my:.1f} {bx:.1f},{by:.1f}' fill='none' stroke='{color}' "
                       f"stroke-width='{w}'{dash} marker-end='url(#{mk})'><title>{E(relation)}</title></path>")
    for span_id, (x0, y0) in pos.items():
        span = run.spans[span_id]
        phase = chain_nodes.get(span_id) or (life.phase(span_id) if life else None)
        if span is run.root and f.failed:
            phase = "critical"
        fill = PHASE_FILL.get(phase, PHASE_FILL[None])
        if is_step_span(span):
            label = f"step {run.step_index_of(span)}"
        elif is_tool_span(span):
            label = str(span.attr(GEN_AI_TOOL_NAME) or span.name)
        else:
            label = span.name
        etype = life.error_type(span_id) if life else None
        stroke = "stroke='#000' stroke-width='3'" if span_id in chain_nodes else "stroke='#fff' stroke-width='1'"
        out.append(f"<g class='node' data-span='{span_id}'><rect x='{x0}' y='{y0}' width='{nw}' height='{nh}' rx='6' "
                   f"fill='{fill}' {stroke}><title>{E(span.name)} {E(phase or '')} {E(etype or '')}</title></rect>"
                   f"<text x='{x0 + 8}' y='{y0 + 14}' style='fill:#fff;font-weight:600'>{E(short(label, 22))}</text>"
                   f"<text x='{x0 + 8}' y='{y0 + 27}' style='fill:#fff'>{E(short(etype or phase or 'ok', 24))}</text></g>")
    out.append("</svg></div>")
    return "".join(out)


def _replay(f: Finding) -> str:
    out = ["<details><summary>Step-by-step replay</summary><table class='steps'><tr><th>step</th><th>phase</th>"
           "<th>context delta</th><th>decision</th><th>tools (args → result)</th></tr>"]
    for v in steps_of(f):
        delta = (f"+{len(v.added)}" + (f" <b style='color:#d62728'>-{len(v.dropped)} dropped</b>" if v.dropped else "")
                 if v.context_recorded else "<small>not recorded</small>")
        for msg in v.new_messages[:4]:
            inner = msg.get("message") if isinstance(msg.get("message"), dict) else msg
            delta += f"<br><code>{E(str(inner.get('role', '?')))}</code>: {E(short(inner.get('content') or inner.get('tool_calls'), 120))}"
        tools = "<br>".join(
            f"<code>{E(t.name)}({E(short(t.arguments, 80))})</code> → {E(short(t.result, 100))} "
            f"<small>[{E(t.outcome or '?')}{(' ' + E(t.error_type)) if t.error_type else ''}]</small>" for t in v.tools)
        color = PHASE_FILL.get(v.phase, PHASE_FILL[None])
        phase = f"<span class='pill' style='background:{color}'>{E(v.phase)}</span>" if v.phase else ""
        out.append(f"<tr><td>{'★ ' if v.on_chain else ''}{'' if v.index is None else v.index}</td><td>{phase}"
                   f"{(' ' + E(v.error_type)) if v.error_type else ''}</td><td>{delta}</td>"
                   f"<td>{E(decision_text(v.decision, 240))}</td><td>{tools}</td></tr>")
    out.append("</table></details>")
    return "".join(out)
