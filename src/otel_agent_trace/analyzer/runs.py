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
    if span.attributes.get(GEN_AI_OPERATION_NAME) == OP_INVOKE_AGENT:
        return True
    name = span.name  # its first word is `invoke_agent`
    return name.startswith(OP_INVOKE_AGENT) and (len(name) == _RUN_PREFIX or name[_RUN_PREFIX] == " ")


_RUN_PREFIX = len(OP_INVOKE_AGENT)


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
        roots: list[Span] = []
        for span in members.values():
            if span.parent_id:
                children[span.parent_id].append(span)
            if is_run_span(span):
                roots.append(span)
        run_ids = {r.span_id for r in roots}
        for root in roots:
            run = Run(trace_id, root)
            spans_of = run.spans
            stack = [root]
            while stack:
                node = stack.pop()
                spans_of[node.span_id] = node
                below = children.get(node.span_id)
                if below:
                    stack.extend(c for c in below if c.span_id not in run_ids)
            steps: list[Span] = []
            tools: list[Span] = []
            for s in spans_of.values():
                if is_step_span(s):
                    steps.append(s)
                if is_tool_span(s):
                    tools.append(s)
            steps.sort(key=lambda s: s.attributes.get(STEP_INDEX))
            tools.sort(key=lambda s: s.start_ns)
            run.steps, run.tools = steps, tools
            runs.append(run)
    runs.sort(key=lambda r: r.root.start_ns)
    return runs
