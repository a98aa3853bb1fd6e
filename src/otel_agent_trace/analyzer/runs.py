"""Group spans into runs: an `invoke_agent` span and the steps and tool calls below it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from operator import attrgetter, gt, le
from typing import Any, Callable, Iterable

import orjson

from otel_agent_trace.analyzer.spans import STATUS_ERROR, Span
from otel_agent_trace.messages import context_hashes
from otel_agent_trace.semconv import (
    CONTEXT_MESSAGE_HASHES,
    CONTEXT_NEW_MESSAGES,
    CONTEXT_SHARED_PREFIX,
    ERROR_TYPE,
    ERROR_TYPE_SEMCONV,
    GEN_AI_AGENT_NAME,
    GEN_AI_OPERATION_NAME,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    LIFECYCLE_PHASE,
    NEW_MESSAGE_CONTENT_FROM,
    NORMALIZED_FROM,
    OP_CHAT,
    OP_EXECUTE_TOOL,
    OP_INVOKE_AGENT,
    OUTPUT_MESSAGE_HASH,
    RUN_AGENTS,
    RUN_OUTCOME_OF,
    STEP_INDEX,
    STEP_KIND,
    STEP_SPAN_PREFIX,
    TOOL_SOURCE,
)


class _once:
    """`functools.cached_property` without its lock (Python 3.11 takes one on each first read,
    here twice per run): computed on the first read, then read from the instance's dict."""

    def __init__(self, compute: Callable[[Any], Any]):
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.compute(instance)
        return value


@dataclass
class Run:
    trace_id: str
    root: Span
    spans: dict[str, Span] = field(default_factory=dict)  # span id -> span, the run's subtree
    steps: list[Span] = field(default_factory=list)  # ordered by step index
    tools: list[Span] = field(default_factory=list)  # ordered by start time
    # model calls (`is_chat_span`) in subtree order, and the ids of `tools` and `chats`: each span's
    # role is decided once, here, instead of re-running the predicates in every pass
    chats: list[Span] = field(default_factory=list)
    tool_ids: set[str] = field(default_factory=set)
    chat_ids: set[str] = field(default_factory=set)
    # another instrumentation's tool spans inside our `execute_tool` spans (`_drop_restated_tools`)
    restated: set[str] = field(default_factory=set)
    # the spans with status ERROR, in subtree order (what `rules.fire` looks at first)
    failed: list[Span] = field(default_factory=list)

    @_once
    def tool_names(self) -> list[str]:
        """Each of `tools`' name as loops, retries and the metrics count it (its `gen_ai.tool.name`,
        else its span name), read once per run."""
        return [str(t.attributes.get(GEN_AI_TOOL_NAME) or t.name) for t in self.tools]

    @_once
    def step_ids(self) -> frozenset[str]:
        return frozenset(s.span_id for s in self.steps)

    @property
    def agent(self) -> str | None:
        return self.root.attr(GEN_AI_AGENT_NAME)

    def agent_of(self, span: Span) -> str | None:
        """The agent that acted at a span: its own `gen_ai.agent.name`, else its nearest
        ancestor's in the run (a group chat's turns each name their speaker), else the run's."""
        node: Span | None = span
        while node is not None:
            name = node.attributes.get(GEN_AI_AGENT_NAME)
            if name:
                return str(name)
            node = self.spans.get(node.parent_id or "")
        return self.agent

    def step_index_of(self, span: Span) -> int | None:
        """The step a span belongs to: its own index, or its nearest step ancestor's."""
        node: Span | None = span
        while node is not None:
            index = node.attributes.get(STEP_INDEX)
            if isinstance(index, int):
                return index
            node = self.spans.get(node.parent_id or "")
        return None


def is_run_span(span: Span) -> bool:
    return span.attributes.get(GEN_AI_OPERATION_NAME) == OP_INVOKE_AGENT or bool(name_roles(span.name) & NAMED_RUN)


def is_step_span(span: Span) -> bool:
    """Our `agent_step N` spans, or the decision spans normalization marked (see normalize/)."""
    attributes = span.attributes
    if not isinstance(attributes.get(STEP_INDEX), int):
        return False
    return bool(name_roles(span.name) & NAMED_STEP) or (NORMALIZED_FROM in attributes and STEP_KIND in attributes)


def is_tool_span(span: Span) -> bool:
    return span.attributes.get(GEN_AI_OPERATION_NAME) == OP_EXECUTE_TOOL or bool(name_roles(span.name) & NAMED_TOOL)


def is_chat_span(span: Span) -> bool:
    """A model call (`chat ...`, or `gen_ai.operation.name=chat`)."""
    return span.attributes.get(GEN_AI_OPERATION_NAME) == OP_CHAT or bool(name_roles(span.name) & NAMED_CHAT)


# What a span's name says of its role, as bits: its first word is `invoke_agent` (a run), it starts
# with `agent_step` (a step, given an index), `execute_tool ` (a tool) or `chat ` (a model call).
NAMED_RUN, NAMED_STEP, NAMED_TOOL, NAMED_CHAT = 1, 2, 4, 8
_RUN_PREFIX = len(OP_INVOKE_AGENT)
_TOOL_PREFIX = OP_EXECUTE_TOOL + " "
_CHAT_PREFIX = OP_CHAT + " "
# name -> its roles: a trace repeats a few names (`chat gpt-4o-mini`, `execute_tool lookup_order`),
# so the prefix tests (each a costly call) run once per name, not per span and pass
NAME_ROLES: dict[str, int] = {}
_MAX_NAMES = 4096  # (names that never repeat, e.g. with an id in them, only refill it)


# what a span's `gen_ai.operation.name` says of its role, as the same bits (`_collect`)
_OPERATION_ROLES = {OP_EXECUTE_TOOL: NAMED_TOOL, OP_CHAT: NAMED_CHAT}


def name_roles(name: str) -> int:
    """The NAMED_* bits of a span name."""
    roles = NAME_ROLES.get(name)
    if roles is None:
        roles = (NAMED_RUN if name.startswith(OP_INVOKE_AGENT) and (len(name) == _RUN_PREFIX
                                                                   or name[_RUN_PREFIX] == " ") else 0) \
            | (NAMED_STEP if name.startswith(STEP_SPAN_PREFIX) else 0) \
            | (NAMED_TOOL if name.startswith(_TOOL_PREFIX) else 0) \
            | (NAMED_CHAT if name.startswith(_CHAT_PREFIX) else 0)
        if len(NAME_ROLES) >= _MAX_NAMES:
            NAME_ROLES.clear()
        NAME_ROLES[name] = roles
    return roles


def group_runs(spans: Iterable[Span]) -> list[Run]:
    """Runs in order of start time; a run owns its subtree up to (not into) a nested run."""
    # per trace: (span id -> span, the first of each id; parent id -> children)
    traces: dict[str, tuple[dict[str, Span], dict[str, list[Span]]]] = {}
    for span in spans:
        trace = traces.get(span.trace_id)
        if trace is None:
            trace = traces[span.trace_id] = ({}, defaultdict(list))
        members, children = trace
        if span.span_id in members:
            continue
        members[span.span_id] = span
        if span.parent_id:
            children[span.parent_id].append(span)
    runs: list[Run] = []
    for trace_id, (members, children) in traces.items():
        runs += _trace_runs(trace_id, [s for s in members.values() if is_run_span(s)], children)
    runs.sort(key=lambda r: r.root.start_ns)
    return runs


def trace_runs(trace_id: str, members: dict[str, Span], children: dict[str, list[Span]],
               roots: list[Span] | None = None) -> list[Run]:
    """`group_runs` of one trace whose spans (unique ids, in order) and children lists (parent id ->
    children, in that order) are already known (`trace.check_trace` builds both); `roots`: its
    run spans (`is_run_span`, in that order), when the check found them on its walk."""
    if roots is None:
        roots = [s for s in members.values() if is_run_span(s)]
    runs = _trace_runs(trace_id, roots, children)
    runs.sort(key=lambda r: r.root.start_ns)
    return runs


def _trace_runs(trace_id: str, roots: list[Span], children: dict[str, list[Span]]) -> list[Run]:
    """The runs of a trace's run spans (`roots`), less echoes."""
    if not roots:
        return []
    if len(roots) > 1:
        roots = _without_echoes(roots)
    run_ids = {r.span_id for r in roots}
    runs = []
    for root in roots:
        run = Run(trace_id, root)
        _collect(run, children, run_ids)
        runs.append(run)
    return runs


def _collect(run: Run, children: dict[str, list[Span]], run_ids: set[str]) -> None:
    """The run's subtree (up to nested runs) into `run.spans`, each span's role decided once
    (`is_step_span`, `is_tool_span`, `is_chat_span`, inline)."""
    spans_of = run.spans
    steps, tools, chats = run.steps, run.tools, run.chats
    tool_ids, chat_ids = run.tool_ids, run.chat_ids
    failed = run.failed
    get_children = children.get
    # one run in the trace, with no parent: no one below it is a run root (each child list is taken whole)
    alone = len(run_ids) == 1 and not run.root.parent_id
    stack = [run.root]
    pop = stack.pop
    known = NAME_ROLES.get
    step_indices: list[int] = []  # each step's index, as `steps`
    sourced = 0  # tools that carry `agent_trace.tool.source` (ours, see `_drop_restated_tools`)
    while stack:
        node = pop()
        node_id = node.span_id
        if RUN_OUTCOME_OF in node.attributes and node.parent_id == run.root.span_id:
            _fold_outcome(run, node)
            continue
        spans_of[node_id] = node
        below = get_children(node_id)
        if below:
            if alone:
                stack += below
            else:
                stack += [c for c in below if c.span_id not in run_ids]
        if node.status_code == STATUS_ERROR:
            failed.append(node)
        attributes = node.attributes
        roles = known(node.name)
        if roles is None:
            roles = name_roles(node.name)
        operation = attributes.get(GEN_AI_OPERATION_NAME)
        if operation is not None:  # (steps carry none; tools and chats say again what their name says)
            roles |= _OPERATION_ROLES.get(operation, 0) if operation.__class__ is str else 0
        if roles & NAMED_STEP or NORMALIZED_FROM in attributes:
            index = attributes.get(STEP_INDEX)
            if isinstance(index, int) and (roles & NAMED_STEP or STEP_KIND in attributes):
                steps.append(node)
                step_indices.append(index)
        if roles & NAMED_TOOL:
            if node.parent_id in tool_ids and _tool_name(spans_of[node.parent_id]) == _tool_name(node):
                run.restated.add(node_id)  # directly inside a span of the same tool: the same execution
            else:
                tools.append(node)
                tool_ids.add(node_id)
                if TOOL_SOURCE in attributes:
                    sourced += 1
        if roles & NAMED_CHAT:
            chats.append(node)
            chat_ids.add(node_id)
    if len(chats) > 1 and steps:
        _drop_duplicate_chats(run)
    if len(steps) > 1:
        _order_steps(steps, step_indices)
        _expand_contexts(steps)
    if steps and tools:
        _restore_tool_results(run)
    if len(tools) > 1:
        if 0 < sourced < len(tools):  # (a trace of one instrumentation restates no tool call)
            _drop_restated_tools(run)
        tools.sort(key=_START)


def _expand_contexts(steps: list[Span]) -> None:
    """Steps that list only the hashes after the prefix they share with the previous step
    (`agent_trace.context.shared_prefix`) get their whole context back, so every reader of
    `message_hashes` sees the whole list; unknown (a missing previous step): removed."""
    previous: list[str] | None = None
    last_index: int | None = None
    for step in steps:
        attributes = step.attributes
        index = attributes.get(STEP_INDEX)
        if CONTEXT_SHARED_PREFIX in attributes:
            known = previous if last_index is not None and index == last_index + 1 else None
            hashes = context_hashes(known, attributes)
            del attributes[CONTEXT_SHARED_PREFIX]
            if hashes is None:
                attributes.pop(CONTEXT_MESSAGE_HASHES, None)
            else:
                attributes[CONTEXT_MESSAGE_HASHES] = hashes
        hashes = attributes.get(CONTEXT_MESSAGE_HASHES)
        previous = list(hashes) if isinstance(hashes, (list, tuple)) else None
        last_index = index if isinstance(index, int) else None


_CONTENT_FROM_FIELD = f'"{NEW_MESSAGE_CONTENT_FROM}":'


def _restore_tool_results(run: Run) -> None:
    """Tool results that a step's `new_messages` names by their `execute_tool` span
    (`model.NEW_MESSAGE_CONTENT_FROM`, instead of writing them twice) get their content back, so
    every reader of `new_messages` sees it as traces written before that read (a span not in the
    run: the message stays without content)."""
    for step in run.steps:
        text = step.attributes.get(CONTEXT_NEW_MESSAGES)
        if text.__class__ is not str or _CONTENT_FROM_FIELD not in text:
            continue
        try:
            items = orjson.loads(text)
        except orjson.JSONDecodeError:
            continue  # (clipped: read as before, by each reader's own tolerance)
        if not isinstance(items, list):
            continue
        for item in items:
            if not isinstance(item, dict) or NEW_MESSAGE_CONTENT_FROM not in item:
                continue
            source = run.spans.get(str(item.pop(NEW_MESSAGE_CONTENT_FROM)))
            message = item.get("message")
            result = source.attributes.get(GEN_AI_TOOL_CALL_RESULT) if source is not None else None
            if isinstance(message, dict) and isinstance(result, str) and result:
                # the canonical key order (`Message.canonical`): role, content, then the rest
                item["message"] = {"role": message.get("role"), "content": result,
                                   **{k: v for k, v in message.items() if k != "role"}}
        step.attributes[CONTEXT_NEW_MESSAGES] = orjson.dumps(items).decode()


def _fold_outcome(run: Run, outcome: Span) -> None:
    """A `run_outcome` span (an exception failed the run after a flush exported its span): the
    run reads exactly as if its span had recorded the failure itself."""
    root = run.root
    if root.status_code == STATUS_ERROR:
        return
    root.status_code, root.status_message = outcome.status_code, outcome.status_message
    for key in (LIFECYCLE_PHASE, ERROR_TYPE, ERROR_TYPE_SEMCONV):
        if key in outcome.attributes:
            root.attributes[key] = outcome.attributes[key]
    root.events = [*root.events, *outcome.events]
    if root.status_code == STATUS_ERROR:
        run.failed.insert(0, root)


def _order_steps(steps: list[Span], indices: list[int]) -> None:
    """`steps` by index, a stable sort (`indices`: each step's). The walk meets a recorder's steps
    last first (their parent lists them in the order they ended): then a reversal sorts them."""
    after = indices[1:]
    if all(map(gt, indices, after)):
        steps.reverse()
    elif not all(map(le, indices, after)):  # (in order already: nothing to do)
        steps[:] = [steps[i] for i in sorted(range(len(steps)), key=indices.__getitem__)]


def _without_echoes(roots: list[Span]) -> list[Span]:
    """Run spans less those that record their parent run again: a run span directly inside a run
    span of the same agent is another instrumentation's record of it (pydantic-ai's own
    `invoke_agent` under ours), not a sub-agent (a sub-agent runs inside a tool or a step). Its
    subtree is the outer run's; its chat and tool spans are dropped there as duplicates. An entry
    point's run lists the framework agents it ran in `agent_trace.run.agents`."""
    by_id = {r.span_id: r for r in roots}
    kept = []
    for root in roots:
        parent = by_id.get(root.parent_id or "")
        agent = root.attributes.get(GEN_AI_AGENT_NAME)
        if parent is None or (parent.attributes.get(GEN_AI_AGENT_NAME) != agent
                              and agent not in (parent.attributes.get(RUN_AGENTS) or ())):
            kept.append(root)
    return kept


def _tool_name(span: Span) -> str:
    return str(span.attributes.get(GEN_AI_TOOL_NAME) or span.name.removeprefix(_TOOL_PREFIX))


def _drop_duplicate_chats(run: Run) -> None:
    """Another instrumentation's record of a model call we recorded is not a second call.

    With the official openai-v2, OpenInference or OpenLLMetry instrumentation active beside ours,
    each request has our chat span (under its step, carrying `agent_trace.*` keys) and theirs:
    nested under ours (`coexist=nest`, the default) or beside our steps (`coexist=off`). Theirs
    is dropped from the run's model calls, so tokens are counted once and no run is made of it.
    """
    chats = run.chats
    ours = [c for c in chats if OUTPUT_MESSAGE_HASH in (a := c.attributes) or ERROR_TYPE in a or LIFECYCLE_PHASE in a]
    if not ours or len(ours) == len(chats):
        return  # a trace of one instrumentation (ours, or a foreign one normalized)
    run.chats[:] = ours
    run.chat_ids.intersection_update(c.span_id for c in ours)


def _drop_restated_tools(run: Run) -> None:
    """Another span of a tool execution we recorded, inside our `execute_tool` span, is not a
    second execution: an MCP server's `tools/call {name}` span (`gen_ai.operation.name=execute_tool`,
    continuing the trace through the request's `_meta`, or in-process), a framework's own tool span.
    It stays in the run's spans; it leaves the run's tool calls, so loops, retries, metrics and
    origins see the call once, as we recorded it (its failure restates ours: `run.restated`)."""
    ours = {t.span_id for t in run.tools if TOOL_SOURCE in t.attributes}
    if not ours or len(ours) == len(run.tools):
        return
    spans = run.spans
    restated = set()
    for tool in run.tools:
        if tool.span_id in ours:
            continue
        node = spans.get(tool.parent_id or "")
        while node is not None and node.span_id not in ours:
            node = spans.get(node.parent_id or "")
        if node is not None:
            restated.add(tool.span_id)
    if restated:
        run.tools[:] = [t for t in run.tools if t.span_id not in restated]
        run.tool_ids.difference_update(restated)
        run.restated |= restated


# a chat span carrying this key, `ERROR_TYPE` or `LIFECYCLE_PHASE` is ours (`_drop_duplicate_chats`)
_START = attrgetter("start_ns")


def sub_runs(grouped: list[Run]) -> set[int]:
    """The `id()`s of the runs nested in another run of the trace (sub-agents'): the rest are
    top-level runs, the task as a user started it."""
    if len(grouped) < 2:
        return set()
    owner = {sid: id(run) for run in grouped for sid in run.spans}
    return {id(run) for run in grouped if owner.get(run.root.parent_id or "", id(run)) != id(run)}
