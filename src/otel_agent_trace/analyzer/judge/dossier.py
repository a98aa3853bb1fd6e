"""What a failed run shows the judge: its task, how it failed, its steps as text (each step's
new input, i.e. its context delta, its output, the tools it ran with their results), and the
candidate places the report named, ranked.

Built from the finding while its spans are alive (`replay.steps_of`, the same views `show`
prints), bounded by `step_chars` per field, so the report can drop the spans right after.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from otel_agent_trace.analyzer.locate import Finding
from otel_agent_trace.analyzer.show import decision_text, short, steps_of
from otel_agent_trace.semconv import GEN_AI_AGENT_NAME, GEN_AI_INPUT_MESSAGES, RUN_INPUT

_TASK_ATTRIBUTES = ("input.value", GEN_AI_INPUT_MESSAGES, RUN_INPUT)


@dataclass
class StepText:
    """One step as the judge reads it. `position`: its place in the run (0..n-1), the number the
    questions use; `step_index`: the report's."""

    position: int
    step_index: int | None
    span_id: str
    name: str
    agent: str | None
    new_input: str
    output: str
    start_ns: int
    tools: list[str] = field(default_factory=list)

    def render(self, limit: int | None = None) -> str:
        """The step as the judge reads it; `limit`: each field cut to that many characters (the
        steps not asked about, when the whole log would not fit the prompt)."""
        def cut(text: str) -> str:
            return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."

        lines = [f"## Step {self.position} ({self.agent or 'agent'}, span {self.name})"]
        if self.new_input:
            lines.append(f"New input: {cut(self.new_input)}")
        lines.append(f"Output: {cut(self.output)}")
        lines.extend(f"Tool: {cut(t)}" for t in self.tools)
        return "\n".join(lines)


@dataclass
class Dossier:
    trace_id: str
    run_span_id: str
    agent: str | None
    task: str
    failure: str
    steps: list[StepText]
    candidates: list[int]  # positions the judge chooses among (`candidates`)
    from_report: bool  # the candidates are places the report named (else: every agent step)
    places: dict[str, int]  # span id -> the position of its step (the step, its wrapper, its tools)


def build(finding: Finding, entry: dict[str, Any], top: int, step_chars: int) -> Dossier:
    """The dossier of a run whose report entry is `entry`: its candidates (see `candidates`) start
    with the places the entry names (origin, `errors[]`), best first."""
    run = finding.run
    views = steps_of(finding)
    steps = [_step(position, view, run.agent, step_chars) for position, view in enumerate(views)]
    where = _positions(views, run)
    ranked: list[int] = []
    for span_id in _named_places(entry):
        position = where.get(span_id)
        if position is not None and position not in ranked:
            ranked.append(position)
    from_report = bool(ranked)
    return Dossier(run.trace_id, run.root.span_id, run.agent, _task(finding, views, step_chars),
                   _failure(entry, step_chars), steps, candidates(ranked, len(steps), top), from_report, where)


def candidates(named: list[int], steps: int, top: int) -> list[int]:
    """The steps the judge chooses among: the first `top` places the report named; when it names
    fewer, the steps nearest to its first place fill the list, earlier ones first (a suspicion
    marks where a mistake surfaced; the decisive one is often a turn or two before it); when it
    names none, every step. `top` 0: every step."""
    if not named or top <= 0 or top >= steps:
        return list(range(steps))
    out = named[:top]
    first = named[0]
    for distance in range(1, steps):
        for position in (first - distance, first + distance):
            if len(out) < top and 0 <= position < steps and position not in out:
                out.append(position)
    return out


def _named_places(entry: dict[str, Any]) -> list[str]:
    """The span ids the report names, in its reading order: the origin, then each `errors[]`
    entry's places (`located_at`, then the span itself). (`candidates[]` without an origin holds
    only the locator's low-confidence guess, the last step: no place of its own.)"""
    out: list[str] = []
    if entry.get("origin"):
        out.append(entry["origin"]["span_id"])
    for error in entry.get("errors") or ():
        out.extend(error.get("located_at") or ())
        out.append(error["span_id"])
    return out


def _positions(views: list[Any], run: Any) -> dict[str, int]:
    """Span id -> the position of the step it belongs to: the step itself, the framework span
    wrapping it (smolagents' `Step N`), and the tools it ran."""
    out: dict[str, int] = {}
    for position, view in enumerate(views):
        out.setdefault(view.span.span_id, position)
        parent = view.span.parent_id
        if parent and parent != run.root.span_id:
            out.setdefault(parent, position)
        for tool in view.tools:
            out.setdefault(tool.span.span_id, position)
    return out


def _step(position: int, view: Any, run_agent: str | None, limit: int) -> StepText:
    span = view.span
    agent = span.attributes.get(GEN_AI_AGENT_NAME) or run_agent
    new = " | ".join(_message_text(m) for m in view.new_messages)
    tools = [f"{t.name}({short(t.arguments, limit // 3)}) -> {short(t.result, limit)}"
             + (f" [outcome {t.outcome}]" if t.outcome and t.outcome not in ("ok", "success") else "") for t in view.tools]
    return StepText(position, view.index, span.span_id, span.name, str(agent) if agent else None,
                    short(new, limit), decision_text(view.decision, limit), span.start_ns, tools)


def _message_text(message: dict[str, Any]) -> str:
    inner = message.get("message") if isinstance(message.get("message"), dict) else message
    content = inner.get("content")
    if content is None and inner.get("tool_calls"):
        content = inner.get("tool_calls")
    return f"{inner.get('role', '?')}: {short(content, 100_000)}"


def _task(finding: Finding, views: list[Any], limit: int) -> str:
    """The task: the run's recorded input, else the first user message a step received."""
    for name in _TASK_ATTRIBUTES:
        value = finding.run.root.attributes.get(name)
        if value:
            return short(value, limit)
    for view in views:
        for message in view.new_messages:
            inner = message.get("message") if isinstance(message.get("message"), dict) else message
            if inner.get("role") == "user" and inner.get("content"):
                return short(inner["content"], limit)
    return "(not recorded)"


def _failure(entry: dict[str, Any], limit: int) -> str:
    """How the run is known to have failed, as the report says it."""
    critical = entry.get("critical") or {}
    parts = [str(critical.get("description") or critical.get("error_type") or "the run failed")]
    parts.extend(str(line) for line in (entry.get("evidence") or ())[:2])
    return short("; ".join(parts), limit)
