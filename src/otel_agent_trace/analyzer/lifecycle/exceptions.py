"""Exceptions read from spans: their evidence line (`exception_reason`), the error type they mean,
and the origins they make on framework spans (`framework_origins`)."""

from __future__ import annotations

from otel_agent_trace.analyzer.lifecycle.state import PROPAGATE, Lifecycle, derived_origin
from otel_agent_trace.analyzer.normalize.evidence import exception_kind
from otel_agent_trace.analyzer.spans import STATUS_ERROR, Span
from otel_agent_trace.causes import event_exception
from otel_agent_trace.vocabulary import ErrorType

# evidence.exception_kind -> error type (who failed: the model's format/arguments, a budget, the tool)
KIND_ERROR_TYPE = {
    "format": ErrorType.INVALID_ARGUMENTS.value,  # the model's output did not follow the required format
    "arguments": ErrorType.INVALID_ARGUMENTS.value,  # the model called a tool with arguments it does not take
    "max_steps": ErrorType.BUDGET_EXCEEDED.value,
    "generation": ErrorType.LLM_ERROR.value,
    "operations": ErrorType.TOOL_TIMEOUT.value,  # the interpreter's operation limit: the code ran too long
    "timeout": ErrorType.TOOL_TIMEOUT.value,
}
KIND_REASON = {
    "format": "the model's output could not be parsed or run as written",
    "arguments": "a tool was called with arguments its signature does not accept",
    "max_steps": "the agent hit its step limit",
    "generation": "the model call failed",
    "operations": "the interpreter's operation limit was reached (resource exhaustion)",
    "timeout": "timed out",
    "not_found": "a resource (file, module) was not found",
    "http": "an HTTP error",
    "connection": "a connection failure",
    "rate_limit": "rate limited",
}


def exception_text(span: Span) -> tuple[str, str]:
    """(exception type, message) of a span's first exception event (an exception group's: of the
    exception that caused it), else ('', status message)."""
    for event in span.events:
        if event.name == "exception":
            exc_type, message = event_exception(event.attributes)
            return exc_type, message[:2000]
    return "", span.status_message


def exception_reason(span: Span) -> tuple[str, str]:
    """(kind, evidence line) of a failed span's exception (see normalize/evidence.py)."""
    exc_type, message = exception_text(span)
    kind = exception_kind(exc_type, message)
    head = " ".join(message.split())
    head = head if len(head) <= 160 else head[:157] + "..."
    label = exc_type.rsplit(".", 1)[-1] + ": " if exc_type else ""
    return kind, f"{KIND_REASON.get(kind, 'exception')}: {label}{head}"


def exception_error_type(span: Span) -> str:
    """Error type of a failed non-tool span, from its exception type and message."""
    exc_type, message = exception_text(span)
    return KIND_ERROR_TYPE.get(exception_kind(exc_type, message), ErrorType.TOOL_EXCEPTION.value)


def raised(span: Span) -> bool:
    """Status ERROR, or an `exception` event."""
    return span.status_code == STATUS_ERROR or (bool(span.events) and any(e.name == "exception" for e in span.events))


def framework_origins(life: Lifecycle, restating: dict[str, str], raised_others: list[Span]) -> None:
    """A framework span that failed while carrying out a decision (e.g. smolagents' "Step N"
    running the model's code), typed by its exception; when a tool (or model call) under it
    raised, its exception restates that one's: the child is the origin, the span propagates."""
    for span in raised_others:
        if span.span_id in restating:
            st = life.state(span.span_id)
            st.reason = f"restates the exception of a {restating[span.span_id]} it ran"
            if not st.phase:
                st.phase, st.derived = PROPAGATE, True
            continue
        kind, evidence = exception_reason(span)
        derived_origin(life, span, KIND_ERROR_TYPE.get(kind, ErrorType.TOOL_EXCEPTION.value),
                        f"exception on a framework span: {evidence}")
