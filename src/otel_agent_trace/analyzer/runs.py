"""Group spans into runs: an `invoke_agent` span and the steps and tool calls below it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from otel_agent_trace.analyzer.spans import NORMALIZED_FROM, Span
from otel_agent_trace.model import (
    GEN_AI_AGENT_NAME,
    STEP_KIND,
    GEN_AI_OPERATION_NAME,
    OP_EXECUTE_TOOL,
    OP_INVOKE_AGENT,
    STEP_INDEX,
    STEP_SPAN_PREFIX,
)


@dataclass
class Run:
    trace_id: str
    root: Span
    spans: dict[str, Span] = field(default_factory=dict)  # span id -> span, the run's subtree
    steps: list[Span] = field(default_factory=list)  # ordered by step index
    tools: list[Span] = field(default_factory=list)  # ordered by start time

    @property
    def agent(self) -> str | None:
        return self.root.attr(GEN_AI_AGENT_NAME)

    def step_index_of(self, span: Span) -> int | None:
        """The step a span belongs to: its own index, or its nearest step ancestor's."""
        node: Span | None = span
        while node is not None:
            index = node.attr(STEP_INDEX)
            if isinstance(index, int):
                return index
            node = self.spans.get(node.parent_id or "")
        return None


def is_run_span(span: Span) -> bool:
    return span.attr(GEN_AI_OPERATION_NAME) == OP_INVOKE_AGENT or span.name.split(" ", 1)[0] == OP_INVOKE_AGENT


def is_step_span(span: Span) -> bool:
    """Our `agent_step N` spans, or the decision spans normalization marked (see normalize/)."""
    if not isinstance(span.attr(STEP_INDEX), int):
        return False
    return span.name.startswith(STEP_SPAN_PREFIX) or (NORMALIZED_FROM in span.attributes and STEP_KIND in span.attributes)


def is_tool_span(span: Span) -> bool:
    return span.attr(GEN_AI_OPERATION_NAME) == OP_EXECUTE_TOOL or span.name.startswith(OP_EXECUTE_TOOL + " ")


def group_runs(spans: Iterable[Span]) -> list[Run]:
    """Runs in order of start time; a run owns its subtree up to (not into) a nested run."""
    by_trace: dict[str, dict[str, Span]] = defaultdict(dict)
    for span in spans:
        by_trace[span.trace_id].setdefault(span.span_id, span)
    runs: list[Run] = []
    for trace_id, members in by_trace.items():
        children: dict[str, list[Span]] = defaultdict(list)
        for span in members.values():
            if span.parent_id:
                children[span.parent_id].append(span)
        for root in members.values():
            if not is_run_span(root):
                continue
            run = Run(trace_id, root)
            stack = [root]
            while stack:
                node = stack.pop()
                run.spans[node.span_id] = node
                stack.extend(c for c in children.get(node.span_id, ()) if not is_run_span(c))
            run.steps = sorted((s for s in run.spans.values() if is_step_span(s)), key=lambda s: s.attr(STEP_INDEX))
            run.tools = sorted((s for s in run.spans.values() if is_tool_span(s)), key=lambda s: s.start_ns)
            runs.append(run)
    runs.sort(key=lambda r: r.root.start_ns)
    return runs
