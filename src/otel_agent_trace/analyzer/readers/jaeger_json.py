"""Jaeger JSON: the UI's "Download JSON" and the HTTP API `/api/traces` (`{"data": [trace, ...]}`,
each trace `{traceID, spans, processes}`), or one trace object alone.

Mapping to the analyzer's span: `references` CHILD_OF → parent (the first one; without one, a
first same-trace FOLLOWS_FROM is the parent too, as Jaeger writes a parent that is also linked), FOLLOWS_FROM → a
link (Jaeger keeps no link attributes; ours are mirrored in `agent_trace.depends_on`), typed tags
→ attributes (`int64` and `float64` to numbers, `bool` to bools), `startTime`/`duration` in
microseconds → nanoseconds, `processes[processID]` → resource (`serviceName` → `service.name`),
`logs` → events (the `event` field is the name), `otel.status_code` / `error=true` → status,
`span.kind` → kind. Ids are left-padded to 32/16 hex digits (Jaeger trims leading zeros).
"""

from __future__ import annotations

from typing import Any, Iterator

from otel_agent_trace.analyzer.spans import Event, InputReport, Link, Span

_KINDS = {"internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}


def spans_of_jaeger(doc: dict[str, Any], path: str, line: int, report: InputReport) -> Iterator[Span]:
    traces = doc.get("data") if "data" in doc else [doc]
    if not isinstance(traces, list):
        report.bad(line, f"Jaeger JSON: data is {type(traces).__name__}, not a list")
        return
    for errors in doc.get("errors") or ():
        report.bad(line, f"Jaeger API error: {errors}")
    for trace in traces:
        if not isinstance(trace, dict) or not isinstance(trace.get("spans"), list):
            report.bad(line, "Jaeger JSON: trace without a spans list")
            continue
        processes = trace.get("processes") if isinstance(trace.get("processes"), dict) else {}
        resources = {pid: _resource(p) for pid, p in processes.items() if isinstance(p, dict)}
        for raw in trace["spans"]:
            try:
                span = _span(raw, resources)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                report.bad(line, f"Jaeger span dropped: {type(exc).__name__}: {exc}")
                continue
            span.source = (path, line)
            report.spans += 1
            yield span


def _resource(process: dict[str, Any]) -> dict[str, Any]:
    out = _tags(process.get("tags"))
    if process.get("serviceName"):
        out["service.name"] = process["serviceName"]
    return out


def _id(value: Any, chars: int) -> str:
    if not isinstance(value, str) or not value or len(value) > chars:
        raise ValueError(f"bad id {value!r}")
    int(value, 16)
    return value.lower().rjust(chars, "0")


def _span(raw: dict[str, Any], resources: dict[str, dict[str, Any]]) -> Span:
    trace_id = _id(raw["traceID"], 32)
    parent = None
    links = []
    for ref in raw.get("references") or ():
        target = Link(_id(ref.get("traceID") or raw["traceID"], 32), _id(ref["spanID"], 16))
        if ref.get("refType", "CHILD_OF") == "CHILD_OF" and parent is None and target.trace_id == trace_id:
            parent = target.span_id
        else:
            links.append(target)
    if raw.get("parentSpanID") and parent is None:  # older exports carry it directly
        parent = _id(raw["parentSpanID"], 16) if raw["parentSpanID"] != "0" else None
    elif parent is None and links and links[0].trace_id == trace_id:
        # OTLP -> Jaeger turns the parent reference into FOLLOWS_FROM, kept first, when a link also
        # targets the parent (our tool spans link their deciding step); the Collector's own
        # Jaeger -> OTLP translator reads it back the same way: no CHILD_OF, first FOLLOWS_FROM is the parent
        parent = links[0].span_id
    attributes = _tags(raw.get("tags"))
    status = 0
    code = str(attributes.pop("otel.status_code", "")).upper()
    if code == "ERROR" or attributes.get("error") is True:
        status = 2
    elif code == "OK":
        status = 1
    message = str(attributes.pop("otel.status_description", "") or "")
    kind = _KINDS.get(str(attributes.pop("span.kind", "")).lower(), 0)
    start_ns = int(raw.get("startTime") or 0) * 1000
    events = []
    for log in raw.get("logs") or ():
        fields = _tags(log.get("fields"))
        events.append(Event(str(fields.pop("event", "log")), int(log.get("timestamp") or 0) * 1000, fields))
    return Span(trace_id, _id(raw["spanID"], 16), parent, str(raw.get("operationName", "")), start_ns,
                start_ns + int(raw.get("duration") or 0) * 1000, status, message, attributes, events, links,
                resources.get(raw.get("processID"), {}) if raw.get("processID") else _resource(raw.get("process") or {}),
                None, kind)


def _tags(tags: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tag in tags or ():
        if not isinstance(tag, dict) or "key" not in tag:
            continue
        value = tag.get("value")
        kind = tag.get("type", "string")
        try:
            if kind == "int64":
                value = int(value)
            elif kind == "float64":
                value = float(value)
            elif kind == "bool":
                value = value if isinstance(value, bool) else str(value).lower() == "true"
        except (TypeError, ValueError):
            value = str(value)
        if kind == "string" and isinstance(value, str) and value[:1] == "[" and value[-1:] == "]":
            value = _array(value)  # OTLP array attributes reach Jaeger as JSON text
        out[str(tag["key"])] = value
    return out


def _array(text: str) -> Any:
    import orjson

    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    return parsed if isinstance(parsed, list) and all(isinstance(v, (str, int, float, bool)) for v in parsed) else text
