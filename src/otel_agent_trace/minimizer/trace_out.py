"""The minimal run as a trace file (OTLP JSON Lines), readable by `analyze`, `show` and Jaeger.

It is the recorded run cut down to the kept tool steps: the run span, the agent steps that
requested them (with their model calls) and the final step, and the kept tool spans, with their
recorded attributes; dependency edges to spans that were cut are dropped. It gets a new trace id
(derived from the original's and the kept steps), so it can sit beside the original; the run span
names its origin in `agent_trace.minimized.*`.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable

import orjson

from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.semconv import (
    DEPENDS_ON,
    DEPENDS_ON_RELATIONS,
    MINIMIZED_FROM,
    MINIMIZED_SIGNATURE,
    MINIMIZED_STRATEGY,
)


def minimal_trace_id(trace_id: str, positions: Iterable[int]) -> str:
    return hashlib.sha256(f"{trace_id}:{sorted(positions)}".encode()).hexdigest()[:32]


def write_minimal_trace(path: str, run: Run, kept_span_ids: Iterable[str], signature: str, strategy: str) -> str:
    """Write the cut-down run to `path`; returns its trace id."""
    kept_tools = set(kept_span_ids)
    keep = {run.root.span_id} | kept_tools
    for span_id in kept_tools:  # each kept tool's ancestors up to the run
        parent = run.spans[span_id].parent_id
        while parent and parent in run.spans and parent not in keep:
            keep.add(parent)
            parent = run.spans[parent].parent_id
    if run.steps:
        keep.add(run.steps[-1].span_id)
    kept_steps = {s.span_id for s in run.steps} & keep
    for span in run.spans.values():  # the model calls of kept steps
        if span.parent_id in kept_steps and span.span_id not in run.tool_ids:
            keep.add(span.span_id)
    positions = [i for i, t in enumerate(run.tools) if t.span_id in kept_tools]
    trace_id = minimal_trace_id(run.trace_id, positions)
    spans = sorted((run.spans[i] for i in keep), key=lambda s: (s.start_ns, s.span_id))
    marks = {MINIMIZED_FROM: run.trace_id, MINIMIZED_SIGNATURE: signature, MINIMIZED_STRATEGY: strategy}
    encoded = [_span(s, trace_id, keep, marks if s.span_id == run.root.span_id else {}) for s in spans]
    record = {"resourceSpans": [{
        "resource": {"attributes": otlp_attributes(run.root.resource)},
        "scopeSpans": [{"scope": {"name": "otel_agent_trace.minimizer"}, "spans": encoded}],
    }]}
    with open(path, "wb") as handle:
        handle.write(orjson.dumps(record) + b"\n")
    return trace_id


def write_run(path: str, run: Run, redact: Any = None) -> None:
    """Write a run's spans only (its subtree), unchanged but for `redact` (a processor `Redactor`)."""
    keep = set(run.spans)
    spans = sorted(run.spans.values(), key=lambda s: (s.start_ns, s.span_id))
    resource = dict(run.root.resource)
    if redact is not None:
        resource = redact.attributes(resource)[0] or resource
    encoded = [_span(s, run.trace_id, keep, {}, redact) for s in spans]
    record = {"resourceSpans": [{"resource": {"attributes": otlp_attributes(resource)},
                                 "scopeSpans": [{"scope": {"name": "otel_agent_trace.regress"}, "spans": encoded}]}]}
    with open(path, "wb") as handle:
        handle.write(orjson.dumps(record) + b"\n")


def _span(span: Span, trace_id: str, keep: set[str], extra: dict[str, Any], redact: Any = None) -> dict[str, Any]:
    attributes = dict(span.attributes)
    if redact is not None:
        attributes = redact.attributes(attributes)[0] or attributes
    targets, relations = attributes.pop(DEPENDS_ON, None), attributes.pop(DEPENDS_ON_RELATIONS, None)
    if isinstance(targets, list) and isinstance(relations, list):
        pairs = [(t, r) for t, r in zip(targets, relations) if t in keep]
        if pairs:
            attributes[DEPENDS_ON] = [t for t, _ in pairs]
            attributes[DEPENDS_ON_RELATIONS] = [r for _, r in pairs]
    attributes.update(extra)
    out: dict[str, Any] = {
        "traceId": trace_id, "spanId": span.span_id, "name": span.name, "kind": span.kind or 1,
        "startTimeUnixNano": str(span.start_ns), "endTimeUnixNano": str(span.end_ns),
        "attributes": otlp_attributes(attributes),
        "status": {"code": span.status_code, **({"message": span.status_message} if span.status_message else {})},
    }
    if span.parent_id and span.parent_id in keep:
        out["parentSpanId"] = span.parent_id
    if span.events:
        out["events"] = [{"name": e.name, "timeUnixNano": str(e.time_ns), "attributes": otlp_attributes(e.attributes)}
                         for e in span.events]
    links = [link for link in span.links if link.span_id in keep]
    if links:
        out["links"] = [{"traceId": trace_id, "spanId": link.span_id, "attributes": otlp_attributes(link.attributes)}
                        for link in links]
    return out


def otlp_attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": otlp_value(value)} for key, value in values.items()]


def otlp_value(value: Any) -> dict[str, Any]:
    """An OTLP JSON AnyValue (int64 as a string; dicts as kvlists)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [otlp_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": otlp_attributes(value)}}
    return {"stringValue": str(value)}
