"""Tool failures a healthy run worked around (issue 27 §4): not errors of the run.

A retry of the same tool that succeeds recovers a failure (lifecycle `propagation.retries`). Two more ways
are common in healthy runs, and this module finds them among the failed tool calls not already
recovered:

* **a fallback**: a later call of *another* tool (or one the same step made beside it, in
  parallel) that obtained what the failed call was for (an
  argument value of the failed call is among its own: the price of `SKU-12` timed out at
  `get_price`, then `read_catalogue(sku="SKU-12")` returned it) and succeeded. It is recorded as a
  derived `retry_of` edge, so the failure is `recovered`, recovered by that call.
* **an empty result that ends an iteration**: a page past the last one (`list_items(page=2)` ->
  `[]`) or a search with results on earlier pages: the same tool returned results before. And an
  **optional lookup that found nothing**: an empty result, when the run's final answer rests
  entirely on other results (`Lifecycle.verifiable`: every distinctive value of the answer is in a
  tool result). And an **action that returns nothing** (`archive_note(...) -> null`: a tool whose
  name starts with a verb that does something, `ACTION_TOOL`), which is its acknowledgment, not a
  missing result. None is an error: the state is `recovered`, flagged `iteration_end`,
  `optional_lookup` or `action_done`. (A *lookup* that returned nothing, followed by an answer
  whose values all come from the task, "Order A9999 shipped yesterday", stays an error.)
* **nothing found, and the answer says so**: an empty result, or an error result that says what
  was asked for is not there (`404`, `not found`, `no such`, `does not exist`), when the final
  answer reports that nothing was found (`You have no overdue invoices.`, `I could not find order
  A9999.`) and no later call failed (the demo's `lookup_order("A10O2") -> []` fed
  `calculate_refund(items=[])`, which failed: it stays the origin): the agent told the user what
  the data says. Flagged `reported_absent`.

In every case the answer must not depend on the failed call's output: an answer with a value the
run never received (`grounded` False) leaves every failure as it is.
"""

from __future__ import annotations

import re
from typing import Any

from otel_agent_trace.analyzer.graph import Graph
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.detectors import parse_arguments
from otel_agent_trace.semconv import GEN_AI_TOOL_CALL_ARGUMENTS, GEN_AI_TOOL_CALL_RESULT
from otel_agent_trace.vocabulary import ErrorType, Relation

_EMPTY = ErrorType.TOOL_EMPTY_RESULT.value
_ERROR_RESULT = ErrorType.TOOL_ERROR_RESULT.value
_RETRY_OF = Relation.RETRY_OF.value
ITERATION_END = "iteration_end"
OPTIONAL_LOOKUP = "optional_lookup"
REPORTED_ABSENT = "reported_absent"
ACTION_DONE = "action_done"
# a tool that does something (its name's first word): its empty result acknowledges it
ACTION_TOOL = re.compile(r"(?i)^(?:archive|delete|remove|send|update|set|create|add|cancel|close|mark|move|post|save|"
                         r"write|upload|notify|submit|approve|assign|enable|disable|start|stop|restart|schedule|book|"
                         r"reset|clear|rename|tag|label|publish|deploy|merge|commit|push|pay|refund|transfer|invite|share|"
                         r"subscribe|unsubscribe|insert|put|patch|register|store|sync|lock|unlock|reply|forward|"
                         r"acknowledge|resolve|reopen|pin|unpin|star|like|follow|unfollow|block|unblock|mute|unmute)(?:[_\-.]|[A-Z]|$)")
# an error result saying that what was asked for is not there
_NOT_FOUND = re.compile(r"(?i)\bnot[ _]found\b|\b404\b|\bno such\b|\bdoes(?:n't| not) exist\b")
# an answer saying that nothing was found
_ABSENT = re.compile(r"(?i)\b(?:could(?:n't| not)|can(?:'t|not)|unable to|did(?:n't| not)|was(?:n't| not) able to)"
                     r" (?:find|locate)\b|\bnot (?:be )?found\b|\bdoes(?:n't| not) exist\b|\bno (?:such|matching)\b|"
                     r"\b(?:there (?:is|are|was|were)|you (?:have|had)) no\b|\bnothing (?:was |is )?(?:found|there)\b|"
                     r"\bno \w+(?: \w+)? (?:was|were) found\b")


def _argument_values(span: Any) -> set[str]:
    """The scalar argument values of a tool call, as text (what a fallback would ask for again)."""
    parsed = parse_arguments(span.attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS))
    values: set[str] = set()
    stack = [parsed]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, str) and len(value.strip()) >= 2:
            values.add(value.strip().lower())
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            values.add(f"{value:g}")
    return values


def _no_error(benign: set[str], span_id: str, state: Any, flag: str, why: str) -> None:
    """A failure that is no error of the run: kept as benign, flagged, and the reason said."""
    benign.add(span_id)
    state.flags.add(flag)
    state.reason = (state.reason + "; " if state.reason else "") + why


def worked_around(run: Run, graph: Graph, life: Any, failed: set[str]) -> tuple[list[tuple[str, str]], set[str]]:
    """(fallback edges (later call, failed call), failures that are no error: iteration ends,
    optional lookups, actions done and absences reported), among `failed` (the run's failed tool
    calls no retry recovered)."""
    if not failed or life.grounded is False:
        return [], set()
    absent = bool(life.answer) and _ABSENT.search(life.answer) is not None
    tools, names = run.tools, run.tool_names
    edges: list[tuple[str, str]] = []
    benign: set[str] = set()
    origins = life.origins
    for i, (tool, name) in enumerate(zip(tools, names)):
        if tool.span_id not in failed:
            continue
        state = life.states.get(tool.span_id)
        if state is not None and state.error_type == _EMPTY:
            earlier = any(n == name and t.span_id not in origins for t, n in zip(tools[:i], names[:i]))
            if earlier:
                _no_error(benign, tool.span_id, state, ITERATION_END,
                          f"an empty result after {name} returned results: the end of the iteration, not an error")
                continue
            if life.verifiable:
                _no_error(benign, tool.span_id, state, OPTIONAL_LOOKUP,
                          "an optional lookup that found nothing: the final answer rests on other results")
                continue
            if ACTION_TOOL.match(name or ""):
                _no_error(benign, tool.span_id, state, ACTION_DONE,
                          f"{name} does something and returned nothing: its acknowledgment, not a missing result")
                continue
        if absent and state is not None and not any(t.span_id in failed for t in tools[i + 1:]) and (
                state.error_type == _EMPTY or (state.error_type == _ERROR_RESULT and
                                               _NOT_FOUND.search(str(tool.attributes.get(GEN_AI_TOOL_CALL_RESULT) or "")))):
            _no_error(benign, tool.span_id, state, REPORTED_ABSENT,
                      "nothing found, and the final answer says so: the agent reported what the data says")
            continue
        wanted = _argument_values(tool)
        if not wanted:
            continue
        # a later call, or one the same step made beside it (parallel calls: their order is not
        # the order they were decided in)
        others = [(t, n) for j, (t, n) in enumerate(zip(tools, names))
                  if j > i or (j < i and t.parent_id == tool.parent_id and t.parent_id is not None)]
        for later, later_name in others:
            if later_name != name and later.span_id not in origins and wanted & _argument_values(later):
                edges.append((later.span_id, tool.span_id))
                graph.add(later.span_id, tool.span_id, _RETRY_OF)
                break
    return edges, benign
