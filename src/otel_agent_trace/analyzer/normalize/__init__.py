"""Foreign conventions → our conventions, on the analyzer's `Span` objects, one trace at a time.

Traces from the official GenAI instrumentations, OpenInference and OpenLLMetry are rewritten so
that runs.py, graph.py and locate.py work on them unchanged:
- the run: a span of role run (OpenInference AGENT, OpenLLMetry agent/workflow, semconv
  invoke_agent) gets `gen_ai.operation.name=invoke_agent` and `gen_ai.agent.name`. A trace with
  decisions but no run span gets its top-level span (the one above the decisions) as the run.
  A trailing LLM call outside every run span, after the last run ended, without tool calls, is
  the harness's answer-formatting call (GAIA's `FINAL ANSWER:` reduction), not a run: it is
  marked `agent_trace.harness_call=true` and left out (`is_harness_call`).
- the step: **the LLM span itself is the decision step** (no wrapper span is invented): it gets
  `agent_trace.step.index` (order of start within its run), `agent_trace.step.kind` (`tool_call`
  when it requested tools, else `final`) and `agent_trace.step.tool_calls`. runs.py accepts such a
  span as a step because it carries `agent_trace.normalized_from` (its name keeps the original,
  e.g. `LiteLLMModel.__call__`, so reports show what the user's backend shows).
- the tool: `gen_ai.operation.name=execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.call.id` (when
  known), `gen_ai.tool.call.arguments|result`, the step index of the deciding step, and
  `agent_trace.tool.outcome`: `exception` (or `timeout`) from an exception event or error status,
  else `detectors.classify_result` of the result, else an error banner in the head of the result
  text (`evidence.result_error`: HTTP 4xx/5xx page or client error, rate limit, missing file,
  connection failure, timeout, traceback; the matched line goes to `agent_trace.error.evidence`);
  a tool whose result was not recorded counts `ok`.
- dependencies (`agent_trace.depends_on` + `.relations`), rebuilt from data flow:
  `decided_by` tool → the step whose output carries the tool's call id; without ids, the nearest
  preceding step under the same parent (else in the run), preferring one that requested a tool of
  that name; `consumes` step → tool when the step's input messages carry the tool's call id
  (`tool_call_id`, or smolagents' `Call id: X` text) or the tool's result text; for a tool whose
  result text is unknown (an exception), the first step that started after it ended.
- an LLM span with error status gets `agent_trace.error.type=llm_error`; its token usage
  (OpenInference `llm.token_count.prompt|completion`, OpenLLMetry `gen_ai.usage.prompt_tokens|
  completion_tokens`, as ints or decimal strings) becomes `gen_ai.usage.input_tokens|output_tokens`.
- a run root gets `agent_trace.run.subagent_runs`: how many runs are nested directly in it (a
  smolagents manager calling its managed agents); their reports are results the run consumed.
Every rewritten span carries `agent_trace.normalized_from` (the convention). A trace that holds any
`agent_trace.*` attribute comes from our instrumentation and passes through untouched.
"""

from __future__ import annotations

import re
from collections import defaultdict

from otel_agent_trace.analyzer.normalize.conventions import LLM, RUN, TOOL, Facts, facts_of
from otel_agent_trace.analyzer.normalize.evidence import result_error
from otel_agent_trace.analyzer.spans import STATUS_ERROR, Span
from otel_agent_trace.causes import event_exception
from otel_agent_trace.detectors import classify_result
from otel_agent_trace.semconv import (
    AGENT_TRACE_PREFIX,
    DEPENDS_ON,
    DEPENDS_ON_RELATIONS,
    ERROR_EVIDENCE,
    ERROR_TYPE,
    GEN_AI_AGENT_NAME,
    GEN_AI_OPERATION_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    HARNESS_CALL,
    INSTRUMENTATION_SCOPE,
    NORMALIZED_FROM,
    OP_CHAT,
    OP_EXECUTE_TOOL,
    OP_INVOKE_AGENT,
    REDACTION_PREFIX,
    SAMPLING_PREFIX,
    STEP_INDEX,
    STEP_KIND,
    STEP_TOOL_CALLS,
    SUBAGENT_RUNS,
    TOOL_OUTCOME,
)
from otel_agent_trace.vocabulary import ErrorType, Outcome, Relation

_CALL_ID_TEXT = re.compile(r"Call id:\s*([A-Za-z0-9_\-.:]+)")
_MATCH_CHARS = 200  # the leading characters of a tool result looked for in later contexts
_MIN_MATCH = 12


def is_ours(spans: list[Span]) -> bool:
    """Did our recorder write this trace? Decided by instrumentation scope: a span of scope
    `otel_agent_trace` is ours. Fallback for inputs without our scope (Jaeger, the minimizer's
    output, hand-written traces): the attributes the recorder writes, never those the processor
    stamps (`agent_trace.redaction.*`, `agent_trace.sampling.*`: earlier versions stamped them on
    foreign spans too)."""
    if any(s.scope == INSTRUMENTATION_SCOPE for s in spans):
        return True
    for s in spans:  # (our steps and tools carry one of these: found without looking at every key)
        attributes = s.attributes
        if STEP_INDEX in attributes or TOOL_OUTCOME in attributes:
            return True
    return any(key.startswith(AGENT_TRACE_PREFIX) and key != NORMALIZED_FROM and not key.startswith(_PROCESSOR_KEYS)
               for s in spans for key in s.attributes)


_PROCESSOR_KEYS = (REDACTION_PREFIX, SAMPLING_PREFIX)


def normalize_trace(spans: list[Span]) -> str | None:
    """Rewrite one trace's spans in place; returns the convention applied (None: untouched)."""
    if not spans or is_ours(spans) or any(NORMALIZED_FROM in s.attributes for s in spans):
        return None
    facts = {s.span_id: f for s in spans if (f := facts_of(s)) is not None}
    if not any(f.role in (LLM, TOOL) for f in facts.values()):
        return None
    by_id = {s.span_id: s for s in spans}
    children: dict[str, list[Span]] = defaultdict(list)
    for s in spans:
        if s.parent_id and s.parent_id in by_id and s.parent_id != s.span_id:
            children[s.parent_id].append(s)
    roots = _run_roots(spans, facts, by_id, children)
    conventions = {f.convention for f in facts.values()}
    convention = conventions.pop() if len(conventions) == 1 else "mixed"
    for root in roots:
        _mark(root, convention)
        root.attributes[GEN_AI_OPERATION_NAME] = OP_INVOKE_AGENT
        fact = facts.get(root.span_id)
        if fact and fact.role == RUN and fact.agent_name and GEN_AI_AGENT_NAME not in root.attributes:
            root.attributes[GEN_AI_AGENT_NAME] = fact.agent_name
        elif GEN_AI_AGENT_NAME not in root.attributes:
            root.attributes[GEN_AI_AGENT_NAME] = root.name
    root_ids = {r.span_id for r in roots}
    for root in roots:
        members = _subtree(root, children, root_ids)
        member_ids = {m.span_id for m in members}
        root.attributes[SUBAGENT_RUNS] = sum(1 for r in roots if r is not root and r.parent_id in member_ids)
        _normalize_run(root, members, facts, convention)
    return convention


def _mark(span: Span, convention: str) -> None:
    span.attributes[NORMALIZED_FROM] = convention


def _run_roots(spans: list[Span], facts: dict[str, Facts], by_id: dict[str, Span],
               children: dict[str, list[Span]]) -> list[Span]:
    runs = [s for s in spans if (f := facts.get(s.span_id)) and f.role == RUN]
    agents = [s for s in runs if facts[s.span_id].model != "workflow"]
    if agents:
        runs = agents  # OpenLLMetry: an agent inside a workflow is the run
    covered: set[str] = set()
    for root in runs:
        covered |= {s.span_id for s in _subtree(root, children, set())}
    last_run_end = max((r.end_ns for r in runs), default=None)
    # decisions outside every run span: their top-level ancestor becomes a run
    for s in spans:
        f = facts.get(s.span_id)
        if f is None or f.role not in (LLM, TOOL) or s.span_id in covered:
            continue
        if is_harness_call(s, f, last_run_end):
            s.attributes[HARNESS_CALL] = True
            continue
        top = s
        seen = {s.span_id}
        while top.parent_id and top.parent_id in by_id and top.parent_id not in seen:
            seen.add(top.parent_id)
            top = by_id[top.parent_id]
        if top.span_id not in {r.span_id for r in runs}:
            runs.append(top)
            covered |= {x.span_id for x in _subtree(top, children, set())}
    return runs


def is_harness_call(span: Span, fact: Facts, last_run_end: int | None) -> bool:
    """A trailing LLM call outside the agent: the harness formatting the run's answer.

    Benchmarks and apps often make one more model call after the agent returned (GAIA's
    harness asks the model to reduce the agent's report to `FINAL ANSWER: ...`). It is no run
    of its own: the trace has agent run spans (OpenInference AGENT, OpenLLMetry agent/workflow,
    semconv invoke_agent), the call lies outside all of them, starts after the last one ended,
    and requests no tool. Such a span is left as it is, marked `agent_trace.harness_call`.
    """
    return (last_run_end is not None and fact.role == LLM and not fact.calls
            and span.start_ns >= last_run_end)


def _subtree(root: Span, children: dict[str, list[Span]], stop: set[str]) -> list[Span]:
    out, stack, seen = [], [root], {root.span_id}
    while stack:
        node = stack.pop()
        out.append(node)
        for child in children.get(node.span_id, ()):
            if child.span_id not in seen and child.span_id not in stop:
                seen.add(child.span_id)
                stack.append(child)
    return out


def _normalize_run(root: Span, members: list[Span], facts: dict[str, Facts], convention: str) -> None:
    ordered = sorted(members, key=lambda s: (s.start_ns, s.end_ns))
    steps = [s for s in ordered if (f := facts.get(s.span_id)) and f.role == LLM]
    tools = [s for s in ordered if (f := facts.get(s.span_id)) and f.role == TOOL and s is not root]
    deps: dict[str, list[tuple[str, str]]] = defaultdict(list)

    for index, step in enumerate(steps):
        fact = facts[step.span_id]
        _mark(step, fact.convention)
        a = step.attributes
        a[STEP_INDEX] = index
        a[STEP_KIND] = "tool_call" if fact.calls else "final"
        if fact.calls:
            a[STEP_TOOL_CALLS] = [c.name for c in fact.calls]
        if step is not root:
            a.setdefault(GEN_AI_OPERATION_NAME, OP_CHAT)
        if fact.model:
            a.setdefault(GEN_AI_REQUEST_MODEL, fact.model)
        if fact.input_tokens is not None:
            a.setdefault(GEN_AI_USAGE_INPUT_TOKENS, fact.input_tokens)
        if fact.output_tokens is not None:
            a.setdefault(GEN_AI_USAGE_OUTPUT_TOKENS, fact.output_tokens)
        if step.status_code == STATUS_ERROR:
            a.setdefault(ERROR_TYPE, ErrorType.LLM_ERROR.value)

    call_owner = {c.id: step for step in steps for c in facts[step.span_id].calls if c.id}
    used_calls: set[str] = set()
    for tool in tools:
        fact = facts[tool.span_id]
        _mark(tool, fact.convention)
        a = tool.attributes
        a[GEN_AI_OPERATION_NAME] = OP_EXECUTE_TOOL
        if fact.tool_name:
            a[GEN_AI_TOOL_NAME] = fact.tool_name
        if fact.arguments is not None:
            a.setdefault(GEN_AI_TOOL_CALL_ARGUMENTS, fact.arguments)
        if fact.result is not None:
            a.setdefault(GEN_AI_TOOL_CALL_RESULT, fact.result)
        a.setdefault(TOOL_OUTCOME, _outcome(tool, fact).value)
        decider = call_owner.get(fact.call_id or "")
        if decider is None:
            decider = _nearest_decider(tool, steps, facts)
        if decider is not None:
            if not fact.call_id:  # the id the decider gave this call, matched by name in order
                for call in facts[decider.span_id].calls:
                    if call.id and call.id not in used_calls and call.name == fact.tool_name:
                        fact.call_id = call.id
                        a.setdefault(GEN_AI_TOOL_CALL_ID, call.id)
                        break
            if fact.call_id:
                used_calls.add(fact.call_id)
            a[STEP_INDEX] = decider.attributes[STEP_INDEX]
            deps[tool.span_id].append((decider.span_id, Relation.DECIDED_BY.value))
        consumer = _consumer(tool, fact, steps, facts)
        if consumer is not None:
            deps[consumer.span_id].append((tool.span_id, Relation.CONSUMES.value))

    for span_id, pairs in deps.items():
        span = next(s for s in members if s.span_id == span_id)
        if DEPENDS_ON in span.attributes:
            continue
        span.attributes[DEPENDS_ON] = [t for t, _ in pairs]
        span.attributes[DEPENDS_ON_RELATIONS] = [r for _, r in pairs]


def _outcome(tool: Span, fact: Facts) -> Outcome:
    for event in tool.events:
        if event.name == "exception":
            kind = " ".join(event_exception(event.attributes))
            return Outcome.TIMEOUT if "timeout" in kind.lower() or "timed out" in kind.lower() else Outcome.EXCEPTION
    if tool.status_code == STATUS_ERROR:
        message = tool.status_message.lower()
        return Outcome.TIMEOUT if "timeout" in message or "timed out" in message else Outcome.EXCEPTION
    if fact.result is None:
        return Outcome.OK  # not recorded: nothing says it failed
    outcome = classify_result(fact.result)
    if outcome == Outcome.OK:
        found = result_error(fact.result)
        if found is not None:
            kind, line = found
            tool.attributes[ERROR_EVIDENCE] = f"{kind}: {line}"
            return Outcome.TIMEOUT if kind == "timeout" else Outcome.ERROR_RESULT
    return outcome


def _nearest_decider(tool: Span, steps: list[Span], facts: dict[str, Facts]) -> Span | None:
    before = [s for s in steps if s.start_ns <= tool.start_ns]
    if not before:
        return None
    named = lambda s: any(c.name == facts[tool.span_id].tool_name for c in facts[s.span_id].calls)  # noqa: E731
    for pool in ([s for s in before if s.parent_id == tool.parent_id], before):
        if pool:
            for step in reversed(pool):
                if named(step):
                    return step
            return pool[-1]
    return None


def _consumer(tool: Span, fact: Facts, steps: list[Span], facts: dict[str, Facts]) -> Span | None:
    later = [s for s in steps if s.start_ns >= tool.end_ns or s.start_ns > tool.start_ns]
    if fact.call_id:
        for step in later:
            for message in facts[step.span_id].inputs:
                if message.tool_call_id == fact.call_id:
                    return step
                if message.content and fact.call_id in message.content and _CALL_ID_TEXT.search(message.content):
                    if fact.call_id in _CALL_ID_TEXT.findall(message.content):
                        return step
    text = _result_text(fact.result)
    if text is not None and len(text) >= _MIN_MATCH:
        probe = text[:_MATCH_CHARS]
        for step in later:
            if any(m.content and probe in m.content for m in facts[step.span_id].inputs):
                return step
        return None
    if tool.attributes.get(TOOL_OUTCOME) != Outcome.OK.value or text is None:
        return later[0] if later else None
    return None


def _result_text(result: object) -> str | None:
    if result is None:
        return None
    text = result if isinstance(result, str) else str(result)
    return text.strip() or None
