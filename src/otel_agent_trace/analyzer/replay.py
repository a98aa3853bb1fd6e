"""The step-by-step replay view of seed 000: replay, not re-run.

For every step of a run: the context delta (messages added to and dropped from the previous
step's context, by message hash; with content capture, the new messages themselves), the model's
decision (its output message), each tool it called with arguments, result and outcome, and the
step's lifecycle phase as recomputed offline. `otel-agent-trace show TRACE_ID FILE...`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from otel_agent_trace.analyzer.locate import Finding, error_type_of
from otel_agent_trace.analyzer.runs import is_tool_span
from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.model import (
    CONTEXT_MESSAGE_HASHES,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    STEP_KIND,
    TOOL_OUTCOME,
    parse_json_or_text,
    semconv_messages,
)

NEW_MESSAGES = "agent_trace.context.new_messages"


@dataclass
class ToolView:
    span: Span
    name: str
    arguments: Any
    result: Any
    outcome: str | None
    phase: str | None
    error_type: str | None


@dataclass
class StepView:
    span: Span
    index: int | None
    kind: str | None
    phase: str | None
    error_type: str | None
    added: list[str] = field(default_factory=list)  # message hashes
    dropped: list[str] = field(default_factory=list)
    new_messages: list[dict[str, Any]] = field(default_factory=list)
    decision: Any = None
    tokens: tuple[int, int] | None = None
    tools: list[ToolView] = field(default_factory=list)
    on_chain: bool = False


def steps_of(finding: Finding) -> list[StepView]:
    run, life = finding.run, finding.lifecycle
    on_chain = {h.span.span_id for chain in (finding.chains or [finding.chain]) for h in chain}
    children: dict[str, list[Span]] = {}
    for span in run.spans.values():
        children.setdefault(span.parent_id or "", []).append(span)
    views: list[StepView] = []
    previous: list[str] | None = None
    for step in run.steps:
        hashes = step.attr(CONTEXT_MESSAGE_HASHES)
        hashes = list(hashes) if isinstance(hashes, list) else None
        view = StepView(step, run.step_index_of(step), step.attr(STEP_KIND),
                        life.phase(step.span_id) if life else None, error_type_of(step, life))
        if hashes is not None:
            before = previous or []
            view.added = [h for h in hashes if h not in set(before)]
            view.dropped = [h for h in before if h not in set(hashes)]
            previous = hashes
        new = parse_json_or_text(step.attr(NEW_MESSAGES))
        if isinstance(new, list):
            view.new_messages = [m for m in new if isinstance(m, dict)]
        descendants = _descendants(step, children)
        for span in descendants:
            out = span.attr(GEN_AI_OUTPUT_MESSAGES)
            if out is not None and view.decision is None:
                view.decision = [m.canonical() for m in semconv_messages(out)] or parse_json_or_text(out)
                tin, tout = span.attr(GEN_AI_USAGE_INPUT_TOKENS), span.attr(GEN_AI_USAGE_OUTPUT_TOKENS)
                if tin is not None or tout is not None:
                    view.tokens = (int(tin or 0), int(tout or 0))
            if is_tool_span(span):
                view.tools.append(ToolView(span, str(span.attr(GEN_AI_TOOL_NAME) or span.name),
                                           span.attr(GEN_AI_TOOL_CALL_ARGUMENTS), span.attr(GEN_AI_TOOL_CALL_RESULT),
                                           span.attr(TOOL_OUTCOME), life.phase(span.span_id) if life else None,
                                           error_type_of(span, life)))
        view.on_chain = step.span_id in on_chain or any(t.span.span_id in on_chain for t in view.tools)
        views.append(view)
    return views


def _descendants(span: Span, children: dict[str, list[Span]]) -> list[Span]:
    out: list[Span] = []
    stack = list(children.get(span.span_id, ()))
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(children.get(node.span_id, ()))
    return sorted(out, key=lambda s: (s.start_ns, s.span_id))


def decision_text(decision: Any, limit: int = 300) -> str:
    """The model's output as one line: its text and the calls it requested."""
    if decision is None:
        return "(not recorded)"
    messages = decision if isinstance(decision, list) else [decision]
    parts: list[str] = []
    for m in messages:
        if not isinstance(m, dict):
            parts.append(str(m))
            continue
        if m.get("content"):
            parts.append(str(m["content"]))
        for call in m.get("tool_calls") or ():
            if isinstance(call, dict):
                args = call.get("arguments")
                parts.append(f"-> {call.get('name')}({_compact(args)})")
    return short(" ".join(parts) or "(empty)", limit)


def _compact(value: Any) -> str:
    if isinstance(value, (dict, list)):
        import orjson

        return orjson.dumps(value).decode()
    return "" if value is None else str(value)


def short(value: Any, limit: int = 200) -> str:
    text = _compact(value).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render(finding: Finding, color: bool = False) -> str:
    run = finding.run
    def paint(text: str, code: str | None) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if color and code else text
    phase_color = {"origin": "31;1", "propagate": "33", "recovered": "32", "critical": "35;1"}
    lines = [f"run {run.agent or 'agent'}  trace {run.trace_id}  span {run.root.span_id}  "
             f"{'FAILED' if finding.failed else 'ok'}  {len(run.steps)} steps"]
    if finding.origin is not None:
        lines.append(f"origin: step {run.step_index_of(finding.origin)} {finding.origin.name} "
                     f"[{finding.origin_error_type}]  bug class: {finding.bug_class}")
    for view in steps_of(finding):
        mark = "*" if view.on_chain else " "
        phase = f"  phase={paint(view.phase, phase_color.get(view.phase or ''))}" if view.phase else ""
        etype = f" [{view.error_type}]" if view.error_type else ""
        lines.append("")
        lines.append(f"{mark} step {view.index}  {view.kind or ''}{phase}{etype}")
        delta = f"+{len(view.added)} message(s)" + (f", {paint(f'-{len(view.dropped)} dropped', '31;1')}" if view.dropped else "")
        lines.append(f"    context : {delta}")
        for msg in view.new_messages:
            inner = msg.get("message") if isinstance(msg.get("message"), dict) else msg
            lines.append(f"      + {inner.get('role', '?')}: {short(inner.get('content') or inner.get('tool_calls'), 160)}")
        tokens = f"  ({view.tokens[0]} in / {view.tokens[1]} out tokens)" if view.tokens else ""
        lines.append(f"    decision: {decision_text(view.decision)}{tokens}")
        for tool in view.tools:
            tphase = f"  phase={paint(tool.phase, phase_color.get(tool.phase or ''))}" if tool.phase else ""
            terr = f" [{tool.error_type}]" if tool.error_type else ""
            lines.append(f"    tool    : {tool.name}({short(tool.arguments, 160)})")
            lines.append(f"      result: {short(tool.result, 200)}  outcome={tool.outcome or '?'}{tphase}{terr}")
    if finding.critical is not None:
        lines.append("")
        lines.append(f"critical: {finding.critical.name} [{finding.critical_error_type}] {finding.description}")
    return "\n".join(lines) + "\n"
