"""Tool failures a healthy run worked around (issue 27 §4): not errors of the run.

A retry of the same tool that succeeds recovers a failure (lifecycle `propagation.retries`). Two more ways
are common in healthy runs, and this module finds them among the failed tool calls not already
recovered:

* **a fallback**: a later call of *another* tool that obtained what the failed call was for (an
  argument value of the failed call is among its own: the price of `SKU-12` timed out at
  `get_price`, then `read_catalogue(sku="SKU-12")` returned it) and succeeded. It is recorded as a
  derived `retry_of` edge, so the failure is `recovered`, recovered by that call.
* **an empty result that ends an iteration**: a page past the last one (`list_items(page=2)` ->
  `[]`) or a search with results on earlier pages: the same tool returned results before. And an
  **optional lookup that found nothing**: an empty result, when the run's final answer rests
  entirely on other results (`Lifecycle.verifiable`: every distinctive value of the answer is in a
  tool result). Neither is an error: the state is `recovered`, flagged `iteration_end` or
  `optional_lookup`.

In both cases the answer must not depend on the failed call's output: an answer with a value no
result holds (`verifiable` False) leaves every failure as it is.
"""

from __future__ import annotations

from typing import Any

from otel_agent_trace.analyzer.graph import Graph
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.detectors import parse_arguments
from otel_agent_trace.semconv import GEN_AI_TOOL_CALL_ARGUMENTS
from otel_agent_trace.vocabulary import ErrorType, Relation

_EMPTY = ErrorType.TOOL_EMPTY_RESULT.value
_RETRY_OF = Relation.RETRY_OF.value
ITERATION_END = "iteration_end"
OPTIONAL_LOOKUP = "optional_lookup"


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


def worked_around(run: Run, graph: Graph, life: Any, failed: set[str]) -> tuple[list[tuple[str, str]], set[str]]:
    """(fallback edges (later call, failed call), failures that are no error: iteration ends and
    optional lookups), among `failed` (the run's failed tool calls no retry recovered)."""
    if not failed or life.verifiable is False:
        return [], set()
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
                benign.add(tool.span_id)
                state.flags.add(ITERATION_END)
                state.reason = (state.reason + "; " if state.reason else "") + \
                    f"an empty result after {name} returned results: the end of the iteration, not an error"
                continue
            if life.verifiable:
                benign.add(tool.span_id)
                state.flags.add(OPTIONAL_LOOKUP)
                state.reason = (state.reason + "; " if state.reason else "") + \
                    "an optional lookup that found nothing: the final answer rests on other results"
                continue
        wanted = _argument_values(tool)
        if not wanted:
            continue
        for later, later_name in zip(tools[i + 1:], names[i + 1:]):
            if later_name != name and later.span_id not in origins and wanted & _argument_values(later):
                edges.append((later.span_id, tool.span_id))
                graph.add(later.span_id, tool.span_id, _RETRY_OF)
                break
    return edges, benign
