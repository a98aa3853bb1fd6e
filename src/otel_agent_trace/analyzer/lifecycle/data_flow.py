"""Data-flow origins: a degenerate value a tool returned that a later call then failed on."""

from __future__ import annotations

from typing import Any

from otel_agent_trace.analyzer.graph import Graph
from otel_agent_trace.analyzer.lifecycle.state import Lifecycle, derived_origin, tool_name_of
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.json_text import parse_json_or_text
from otel_agent_trace.semconv import GEN_AI_TOOL_CALL_ARGUMENTS, GEN_AI_TOOL_CALL_RESULT
from otel_agent_trace.vocabulary import Relation

DEGENERATE_VALUE = "degenerate_value"  # analyzer only: see `degenerate_flows`
_DEGENERATE = (0, 0.0, "", None, -1, "N/A", "n/a", "null", "None", "unknown", "UNKNOWN", "-")


def degenerate_flows(run: Run, graph: Graph, life: Lifecycle) -> None:
    """Data-flow origins: a failed tool call whose argument `k` has a degenerate value (zero,
    empty, null, a sentinel) that an earlier tool's result gave under the same key `k`: the value
    flowed (a derived `data` edge) and its producer is the origin (`degenerate_value`); the failed
    call is where it showed."""
    failed = [t for t in run.tools if t.span_id in life.origins]
    if not failed:
        return
    for tool in failed:
        arguments = parse_json_or_text(tool.attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS))
        if not isinstance(arguments, dict):
            continue
        for key, value in arguments.items():
            if not _is_degenerate(value):
                continue
            producer = next((p for p in reversed(run.tools) if p.start_ns < tool.start_ns
                             and _gives(p, key, value)), None)
            if producer is None:
                continue
            graph.add(tool.span_id, producer.span_id, Relation.DATA.value)
            derived_origin(life, producer, DEGENERATE_VALUE,
                            f"returned {key}={value!r}, which {tool_name_of(tool)} then used and failed on")
            break


def _is_degenerate(value: Any) -> bool:
    return not isinstance(value, bool) and any(value == d and type(value) is type(d) for d in _DEGENERATE) \
        or value == [] or value == {}


def _gives(span: Span, key: str, value: Any) -> bool:
    """Whether a tool's result (JSON) holds `key` with exactly `value`, at any depth."""
    result = span.attributes.get(GEN_AI_TOOL_CALL_RESULT)
    if not isinstance(result, str) or f'"{key}"' not in result:
        return False
    stack = [parse_json_or_text(result)]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if key in node and node[key] == value and type(node[key]) is type(value):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False
