"""Lifecycle phases recomputed offline, from what a trace proves.

Online phases (`agent_trace.lifecycle.phase`) may be missing: foreign traces normalized into our
attribute names carry steps, tools, outcomes and dependencies but no phases, and older recorders
did not flag every error type. This package derives, for every span of a run, a `SpanState`:

* origin    - a tool whose outcome is not `ok` (or, without an outcome, whose status is ERROR,
              that has an `exception` event, or whose result text classifies as empty/error);
              a chat span with status ERROR (`llm_error`) or `finish_reason=length`
              (`truncated_output`); any span marked `origin` online, with its recorded error
              type; the detectors of `detectors.py`, as the recorder runs them online:
              malformed or schema-violating arguments (`invalid_arguments`) and a tool the model
              was not given (`unknown_tool`) at the step that requested the call (`model_made`),
              a repeated request (`loop_detected`, `loops`), values of a final answer never
              received (`fabricated_value`, `fabricated`), a lost system or developer message
              (`context_dropped`, `dropped_context`); an exception on a framework span, typed by
              `normalize/evidence.exception_kind` (format / arguments -> `invalid_arguments`,
              operation limit -> `tool_timeout`, ...), unless it restates the exception of a tool
              it ran or of a model call it made (`compute`, step 1); a final answer no tool result
              supports (`unsupported_answer`, analyzer only: flag
              `plan_named_tool` when the model's own plan named a tool it then never called, else
              flag `suspicion`, an origin inferred without proof). `SpanState.reason` keeps the
              text that proves each (exception kind and message, the result's error banner).
* propagate - a span that depends (any relation) on an origin or propagate span.
* recovered - an origin that a later `retry_of` chain ended in success (edges recorded, or,
              when a trace has none, the next execution of the same tool: a derived retry).
* critical  - set by the critical-failure rules (critical_rules.py), not here.

Recorded values win over derived ones; `derived=True` says the analyzer inferred it.
Flags are facts rules can match on besides the error type (`tool_retry_exceeded`, ...).

One module per family of passes, run in order by `compute`: `recorded` (online origins),
`context` (lost instructions), `tool_calls` (failed tools, the requests behind them),
`model_calls`, `exceptions` (framework spans), `data_flow` (degenerate values), `loops`,
`answers` (fabricated and unsupported answers), `propagation` (recovery, taint); `state` holds
what they build.
"""

from __future__ import annotations

from otel_agent_trace.analyzer.graph import Graph
from otel_agent_trace.analyzer.lifecycle.answers import (PLAN_NAMED_TOOL, SUSPICION, UNSUPPORTED_ANSWER, answer_text,
                                                         fabricated, unsupported_answer)
from otel_agent_trace.analyzer.lifecycle.context import dropped_context, unseen_argument_values
from otel_agent_trace.analyzer.lifecycle.data_flow import DEGENERATE_VALUE, degenerate_flows
from otel_agent_trace.analyzer.lifecycle.exceptions import exception_text, framework_origins
from otel_agent_trace.analyzer.lifecycle.loops import loops
from otel_agent_trace.analyzer.lifecycle.model_calls import chat_origins
from otel_agent_trace.analyzer.lifecycle.propagation import propagate, retries
from otel_agent_trace.analyzer.lifecycle.recorded import recorded_origins
from otel_agent_trace.analyzer.lifecycle.state import Lifecycle, SpanState, call_key_of, count, derived_origin
from otel_agent_trace.analyzer.lifecycle.tool_calls import (arguments_malformed, tool_definitions, tool_error_type,
                                                            tool_origins)
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.settings import AnalyzerSettings

__all__ = ["DEGENERATE_VALUE", "PLAN_NAMED_TOOL", "SUSPICION", "UNSUPPORTED_ANSWER", "Lifecycle", "SpanState",
           "answer_text", "arguments_malformed", "call_key_of", "compute", "count", "exception_text",
           "tool_error_type", "unseen_argument_values"]


def compute(run: Run, graph: Graph, settings: AnalyzerSettings, delegated: dict[str, str] | None = None) -> Lifecycle:
    """A run's lifecycle, pass by pass (each pass's docstring says what it adds); `settings`: the
    analysis's (the loop threshold); `delegated`: span id -> error type of the spans whose
    sub-agent answered on an error (origins here)."""
    life = Lifecycle()
    has_definitions, restating, raised_others = recorded_origins(run, life)
    definitions = tool_definitions(run) if has_definitions else None
    finals = dropped_context(run, life)  # (first: a step's context is checked before its decision, as online)
    results = tool_origins(run, life, definitions)
    answers = chat_origins(run, life)
    if raised_others:
        framework_origins(life, restating, raised_others)
    if life.origins:  # (only a failed tool can show a degenerate value)
        degenerate_flows(run, graph, life)
    loops(run, life, settings.loop_threshold)
    if finals:
        fabricated(run, life, finals, results, answers)
    unsupported_answer(run, life, definitions)
    retries(run, graph, life)
    for span_id, error_type in (delegated or {}).items():
        if span_id in run.spans:
            derived_origin(life, run.spans[span_id], error_type, "its sub-agent's answer carried an error", False)
    propagate(graph, life, run)
    return life
