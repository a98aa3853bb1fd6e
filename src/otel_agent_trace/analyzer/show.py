"""The step-by-step replay view of seed 000: replay, not re-run.

For every step of a run: the context delta (messages added to and dropped from the previous
step's context, by message hash; with content capture, the new messages themselves), the model's
decision (its output message), each tool it called with arguments, result and outcome, and the
step's lifecycle phase as recomputed offline. `otel-agent-trace show TRACE_ID FILE...`.

A step of a foreign trace (normalized: the model call itself is the step, its tools are siblings
linked by `decided_by`) records no message hashes and no output attribute of ours: its context
delta and decision are read from what its convention recorded (`normalize.conventions.facts_of`:
the input and output messages, hashed here as the recorder would), and its tools are the ones
that depend on it by `decided_by`, wherever they sit in the span tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from otel_agent_trace.analyzer.graph import Graph
from otel_agent_trace.analyzer.locate import Finding, error_type_of, failure_text
from otel_agent_trace.analyzer.metrics import token_count
from otel_agent_trace.analyzer.normalize.conventions import Facts, facts_of
from otel_agent_trace.analyzer.runs import Run, is_tool_span
from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.hashing import message_hash
from otel_agent_trace.json_text import parse_json_or_text
from otel_agent_trace.messages import Message, semconv_messages
from otel_agent_trace.semconv import (
    CONTEXT_MESSAGE_HASHES,
    CONTEXT_NEW_MESSAGES,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    NORMALIZED_FROM,
    STEP_KIND,
    TOOL_OUTCOME,
)
from otel_agent_trace.vocabulary import Relation


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
    context_recorded: bool = False  # message hashes (ours) or input messages (foreign) were recorded
    added: list[str] = field(default_factory=list)  # message hashes
    dropped: list[str] = field(default_factory=list)
    new_messages: list[dict[str, Any]] = field(default_factory=list)
    decision: Any = None
    tokens: tuple[int, int] | None = None
    tools: list[ToolView] = field(default_factory=list)
    on_chain: bool = False


def steps_of(finding: Finding) -> list[StepView]:
    run, life, graph = finding.run, finding.lifecycle, finding.graph
    # a span on this failure's chains shows its phase in it (a rule may call a retried failure
    # the run's failure: recovered for the lifecycle, the origin here)
    on_chain = {h.span.span_id: h.phase for chain in reversed(finding.chains or [finding.chain]) for h in chain}

    def phase(span: Span) -> str | None:
        return on_chain.get(span.span_id) or (life.phase(span.span_id) if life else None)

    children: dict[str, list[Span]] = {}
    for span in run.spans.values():
        children.setdefault(span.parent_id or "", []).append(span)
    views: list[StepView] = []
    previous: list[str] | None = None
    for step in run.steps:
        facts = facts_of(step) if NORMALIZED_FROM in step.attributes else None
        hashes = step.attr(CONTEXT_MESSAGE_HASHES)
        hashes = list(hashes) if isinstance(hashes, list) else None
        inputs: dict[str, Message] = {}
        if hashes is None and facts is not None and facts.inputs:
            hashes = [message_hash(m) for m in facts.inputs]
            inputs = dict(zip(hashes, facts.inputs))
        view = StepView(step, run.step_index_of(step), step.attr(STEP_KIND), phase(step), error_type_of(step, life))
        if hashes is not None:
            view.context_recorded = True
            before = previous or []
            view.added = [h for h in hashes if h not in set(before)]
            view.dropped = [h for h in before if h not in set(hashes)]
            previous = hashes
        new = parse_json_or_text(step.attr(CONTEXT_NEW_MESSAGES))
        if isinstance(new, list):
            view.new_messages = [m for m in new if isinstance(m, dict)]
        elif inputs:
            view.new_messages = [inputs[h].canonical() for h in dict.fromkeys(view.added)]
        descendants = _descendants(step, children)
        for span in [step, *descendants]:  # (a foreign step is the model call: its output is its own)
            out = span.attr(GEN_AI_OUTPUT_MESSAGES)
            if out is not None and view.decision is None:
                view.decision = [m.canonical() for m in semconv_messages(out)] or parse_json_or_text(out)
                view.tokens = _tokens(span)
        if view.decision is None and facts is not None:
            view.decision = _decision(facts)
            view.tokens = _tokens(step)
        for span in _tools(step, descendants, run, graph):
            result = span.attr(GEN_AI_TOOL_CALL_RESULT)
            raised = failure_text(span) if result is None else None
            if raised:
                result = f"(raised) {raised}"
            view.tools.append(ToolView(span, str(span.attr(GEN_AI_TOOL_NAME) or span.name),
                                       span.attr(GEN_AI_TOOL_CALL_ARGUMENTS), result,
                                       span.attr(TOOL_OUTCOME), phase(span), error_type_of(span, life)))
        view.on_chain = step.span_id in on_chain or any(t.span.span_id in on_chain for t in view.tools)
        views.append(view)
    return views


def _tokens(span: Span) -> tuple[int, int] | None:
    tin, tout = span.attr(GEN_AI_USAGE_INPUT_TOKENS), span.attr(GEN_AI_USAGE_OUTPUT_TOKENS)
    return None if tin is None and tout is None else (token_count(tin), token_count(tout))


def _decision(facts: Facts) -> list[dict[str, Any]] | None:
    """A foreign model call's output as one assistant message (None: nothing recorded). Text that
    is JSON next to tool calls is the output restated as data (OpenInference `output.value`), not
    something the model wrote."""
    text = facts.output_text
    if facts.calls and not isinstance(parse_json_or_text(text), str):
        text = None
    if not facts.calls and not text:
        return None
    return [Message("assistant", text, tuple(facts.calls)).canonical()]


def _tools(step: Span, descendants: list[Span], run: Run, graph: Graph | None) -> list[Span]:
    """The tools the step ran: those below it, and those that depend on it by `decided_by`."""
    found = {s.span_id: s for s in descendants if is_tool_span(s)}
    if graph is not None:
        for source, relation in graph.reverse.get(step.span_id, ()):
            span = run.spans.get(source)
            if relation == Relation.DECIDED_BY.value and span is not None and is_tool_span(span):
                found.setdefault(source, span)
    return sorted(found.values(), key=lambda s: (s.start_ns, s.span_id))


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
        delta = (f"+{len(view.added)} message(s)" + (f", {paint(f'-{len(view.dropped)} dropped', '31;1')}" if view.dropped else "")
                 if view.context_recorded else "(not recorded)")
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
