"""OTLP JSON reader: JSON Lines (one ExportTraceServiceRequest per line, as the Collector's file
exporter and `agent_trace_file` write) or a single OTLP JSON document; `.gz` files too.

A line that cannot be read is reported with its number and reason and skipped; the rest of the
file is still read. Ids may be hex (OTLP JSON) or base64 (protobuf JSON mapping).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import itertools
from typing import IO, Any, Iterable, Iterator

import orjson

from otel_agent_trace.analyzer.spans import BadLine, Event, InputReport, Link, Span


def open_text(path: str) -> IO[bytes]:
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def read_file(path: str, report: InputReport) -> Iterator[Span]:
    """Spans of one file; problems go to `report` (file-level errors raise OSError)."""
    with open_text(path) as handle:
        first = handle.readline()
        lines: Iterable[bytes] = itertools.chain([first], handle)
        if _incomplete_json(first):
            # a pretty-printed single document, or JSON Lines whose first line is broken
            whole = first + handle.read()
            try:
                doc = orjson.loads(whole)
            except orjson.JSONDecodeError:
                lines = whole.splitlines()
            else:
                yield from _spans_of(doc, path, 1, report)
                return
        for number, raw in enumerate(lines, start=1):
            line = raw.strip()
            if not line:
                continue
            try:
                doc = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                report.bad_lines.append(BadLine(number, f"invalid JSON: {exc}"))
                continue
            yield from _spans_of(doc, path, number, report)


def _incomplete_json(line: bytes) -> bool:
    text = line.strip()
    if not text.startswith((b"{", b"[")):
        return False
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return True
    return False


def _spans_of(doc: Any, path: str, line: int, report: InputReport) -> Iterator[Span]:
    if not isinstance(doc, dict) or not isinstance(doc.get("resourceSpans", doc.get("resource_spans")), list):
        report.bad_lines.append(BadLine(line, "not an OTLP trace export (no resourceSpans list)"))
        return
    for rs in doc.get("resourceSpans", doc.get("resource_spans")) or ():
        if not isinstance(rs, dict):
            report.bad_lines.append(BadLine(line, "resourceSpans entry is not an object"))
            continue
        resource = attributes_of((rs.get("resource") or {}).get("attributes"))
        for ss in rs.get("scopeSpans", rs.get("scope_spans")) or ():
            for raw in (ss or {}).get("spans") or ():
                try:
                    span = span_of(raw, resource)
                except (KeyError, TypeError, ValueError) as exc:
                    report.bad_lines.append(BadLine(line, f"unreadable span: {type(exc).__name__}: {exc}"))
                    continue
                span.source = (path, line)
                report.spans += 1
                yield span


def span_of(raw: dict[str, Any], resource: dict[str, Any]) -> Span:
    status = raw.get("status") or {}
    return Span(
        trace_id=hex_id(raw["traceId"] if "traceId" in raw else raw["trace_id"], 16),
        span_id=hex_id(raw["spanId"] if "spanId" in raw else raw["span_id"], 8),
        parent_id=hex_id(raw.get("parentSpanId") or raw.get("parent_span_id"), 8) or None,
        name=str(raw.get("name", "")),
        start_ns=int(raw.get("startTimeUnixNano") or raw.get("start_time_unix_nano") or 0),
        end_ns=int(raw.get("endTimeUnixNano") or raw.get("end_time_unix_nano") or 0),
        status_code=_status_code(status.get("code", 0)),
        status_message=str(status.get("message") or ""),
        attributes=attributes_of(raw.get("attributes")),
        events=[Event(str(e.get("name", "")), int(e.get("timeUnixNano") or 0), attributes_of(e.get("attributes")))
                for e in raw.get("events") or ()],
        links=[Link(hex_id(k.get("traceId"), 16), hex_id(k.get("spanId"), 8), attributes_of(k.get("attributes")))
               for k in raw.get("links") or ()],
        resource=resource,
    )


def _status_code(code: Any) -> int:
    if isinstance(code, str):
        return {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}.get(code, 0)
    return int(code or 0)


def hex_id(value: Any, size: int) -> str:
    """Lowercase hex of an id given as hex (OTLP JSON) or base64 (protobuf JSON mapping)."""
    if not value:
        return ""
    text = str(value)
    if len(text) == size * 2:
        try:
            int(text, 16)
            return text.lower()
        except ValueError:
            pass
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"bad id {text!r}") from None
    if len(raw) != size:
        raise ValueError(f"bad id {text!r}")
    return raw.hex()


def attributes_of(raw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in raw or ():
        if isinstance(item, dict) and "key" in item:
            out[item["key"]] = any_value(item.get("value"))
    return out


def any_value(value: Any) -> Any:
    """Plain Python value of an OTLP AnyValue (int64 given as strings become ints)."""
    if not isinstance(value, dict) or not value:
        return None
    kind, inner = next(iter(value.items()))
    if kind == "intValue":
        return int(inner)
    if kind == "doubleValue":
        return float(inner)
    if kind == "arrayValue":
        return [any_value(v) for v in (inner or {}).get("values") or ()]
    if kind == "kvlistValue":
        return {kv["key"]: any_value(kv.get("value")) for kv in (inner or {}).get("values") or ()}
    if kind == "bytesValue":
        return inner
    return inner
