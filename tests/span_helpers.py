"""Small readers of SDK spans shared by the tests (not fixtures: those live in conftest.py)."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def hexid(span: ReadableSpan) -> str:
    return format(span.context.span_id, "016x")


def otlp_value(v: Any) -> dict[str, Any]:
    """An OTLP JSON AnyValue (int64 as a string), for hand-written traces."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [otlp_value(x) for x in v]}}
    return {"stringValue": str(v)}

