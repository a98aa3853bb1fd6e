"""Small readers of SDK spans shared by the tests (not fixtures: those live in conftest.py)."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from otel_agent_trace.minimizer.trace_out import otlp_value  # noqa: F401 - the one OTLP JSON value encoder, for hand-written traces


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def hexid(span: ReadableSpan) -> str:
    return format(span.context.span_id, "016x")
