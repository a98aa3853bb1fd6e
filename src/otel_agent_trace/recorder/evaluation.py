"""`record_evaluation`: an evaluation result as the GenAI semantic conventions' event
`gen_ai.evaluation.result`, from the code that judged a run (an eval harness, a feedback button),
during the run or after it, in this process or another that knows only the trace id.

Where the event goes, in this order (what a user of the SDK would expect: the event on the span
it judges whenever that span can still take it, else the signal the spec is moving events to):
1. **a span event on the evaluated span**, when that span is the current one and still recording
   (called inside `agent_run`, a tool, or any span of the run, with no ids or with its own ids);
2. **a log record** with event name `gen_ai.evaluation.result`, in the evaluated trace and span
   (`trace_id`, `span_id`: the run's span, a chat span...), when a LoggerProvider with a
   processor is configured (OTEL_LOGS_EXPORTER under `opentelemetry-instrument`, or
   `set_logger_provider`): the Collector's file exporter writes it, `analyze` reads it;
3. **a small span** named `gen_ai.evaluation.result` otherwise, in the evaluated trace, its
   parent the evaluated span, carrying the event's attributes (through the tracer provider and
   its processors, so the agent_trace_file exporter, redaction and sampling apply as to any span).
   Without `span_id` it is about the whole trace (`agent_trace.evaluation.scope` = `trace`).
With neither a current span nor `trace_id`, the event can only be joined by `response_id`.

Attributes: `gen_ai.evaluation.name` (required), `gen_ai.evaluation.score.value`,
`gen_ai.evaluation.score.label`, `gen_ai.evaluation.explanation`, `gen_ai.response.id`. With
redaction on (the default), a log record's text is redacted here, since log records do not pass
through our span processor. Fail-open: bad arguments or an SDK error are logged once; the call
returns None instead of how the event was recorded.
"""

from __future__ import annotations

import random
import threading
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

from otel_agent_trace import config as config_module
from otel_agent_trace._failopen import safely
from otel_agent_trace.semconv import (
    EVALUATION_SCOPE,
    GEN_AI_EVALUATION_EXPLANATION,
    GEN_AI_EVALUATION_NAME,
    GEN_AI_EVALUATION_RESULT,
    GEN_AI_EVALUATION_SCORE_LABEL,
    GEN_AI_EVALUATION_SCORE_VALUE,
    GEN_AI_RESPONSE_ID,
)

SPAN_EVENT, LOG_RECORD, SPAN = "span_event", "log_record", "span"
_redactor: Any = None
_redactor_lock = threading.Lock()


def record_evaluation(name: str, *, score: float | None = None, label: str | None = None,
                      explanation: str | None = None, trace_id: str | int | None = None,
                      span_id: str | int | None = None, response_id: str | None = None) -> str | None:
    """Record one `gen_ai.evaluation.result` (see the module docstring). Returns how it was
    recorded (`span_event`, `log_record`, `span`), or None when it could not be (logged once).

    `trace_id` / `span_id`: hex strings (32 / 16 digits, as the analyzer prints them) or ints."""
    return safely("record_evaluation", _record, name, score, label, explanation, trace_id, span_id, response_id)


def _record(name: str, score: Any, label: Any, explanation: Any, trace_id: Any, span_id: Any,
            response_id: Any) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError("record_evaluation: name must be a non-empty string")
    attributes: dict[str, Any] = {GEN_AI_EVALUATION_NAME: name}
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise TypeError(f"record_evaluation: score must be a number, not {type(score).__name__}")
        attributes[GEN_AI_EVALUATION_SCORE_VALUE] = float(score)
    if label is not None:
        attributes[GEN_AI_EVALUATION_SCORE_LABEL] = str(label)
    if explanation is not None:
        attributes[GEN_AI_EVALUATION_EXPLANATION] = str(explanation)
    if response_id is not None:
        attributes[GEN_AI_RESPONSE_ID] = str(response_id)
    wanted_trace = _id(trace_id, 128, "trace_id")
    wanted_span = _id(span_id, 64, "span_id")

    current = trace.get_current_span()
    here = current.get_span_context()
    if current.is_recording() and here.is_valid and wanted_trace in (None, here.trace_id) \
            and wanted_span in (None, here.span_id):
        current.add_event(GEN_AI_EVALUATION_RESULT, attributes)
        return SPAN_EVENT
    if wanted_trace is None and here.is_valid:  # the current span ended (or is not ours): its trace and span
        wanted_trace = here.trace_id
        wanted_span = here.span_id if wanted_span is None else wanted_span
    logger = _logger()
    if logger is not None:
        _emit_log(logger, attributes, wanted_trace, wanted_span)
        return LOG_RECORD
    _emit_span(attributes, wanted_trace, wanted_span)
    return SPAN


def _id(value: Any, bits: int, what: str) -> int | None:
    if value is None or value == "" or value == 0:
        return None
    if isinstance(value, bool):
        raise TypeError(f"record_evaluation: {what} must be hex text or an int")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        try:
            number = int(value.lower().removeprefix("0x"), 16)
        except ValueError:
            raise ValueError(f"record_evaluation: {what} {value!r} is not hex") from None
    else:
        raise TypeError(f"record_evaluation: {what} must be hex text or an int, not {type(value).__name__}")
    if not 0 < number < (1 << bits):
        raise ValueError(f"record_evaluation: {what} {value!r} is out of range")
    return number


def _logger() -> Any:
    """The `otel_agent_trace` logger of a configured LoggerProvider (one with a processor), or None."""
    from opentelemetry import _logs

    provider = _logs.get_logger_provider()
    if isinstance(provider, (_logs.NoOpLoggerProvider, getattr(_logs, "ProxyLoggerProvider", ()))) \
            or type(provider).__name__ in ("ProxyLoggerProvider", "NoOpLoggerProvider"):
        return None
    processors = getattr(getattr(provider, "_multi_log_record_processor", None), "_log_record_processors", None)
    if processors is not None and not processors:  # an SDK provider nothing reads from
        return None
    from otel_agent_trace.version import __version__

    return provider.get_logger("otel_agent_trace", __version__)


def _emit_log(logger: Any, attributes: dict[str, Any], trace_id: int | None, span_id: int | None) -> None:
    from opentelemetry._logs import LogRecord, SeverityNumber

    cfg = config_module.current()
    if cfg.redact:
        redacted, _ = _redaction(cfg).attributes(attributes)
        attributes = redacted or attributes
    import time

    now = time.time_ns()
    logger.emit(LogRecord(timestamp=now, observed_timestamp=now, trace_id=trace_id or 0, span_id=span_id or 0,
                          trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED) if trace_id else None,
                          severity_number=SeverityNumber.INFO, event_name=GEN_AI_EVALUATION_RESULT,
                          attributes=attributes))


def _redaction(cfg: Any) -> Any:
    global _redactor
    with _redactor_lock:
        if _redactor is None:
            from otel_agent_trace.processor.redaction import Redactor
            from otel_agent_trace.processor.redaction_rules import load_rules

            _redactor = Redactor(key=cfg.redact_key, rules=load_rules(cfg.redact_rules))
        return _redactor


def _emit_span(attributes: dict[str, Any], trace_id: int | None, span_id: int | None) -> None:
    from otel_agent_trace.recorder.handler import get_handler

    ctx = otel_context.get_current()
    if trace_id is not None:
        if span_id is None:  # about the whole trace: a parent id no span has (the analyzer reads the scope)
            attributes = {**attributes, EVALUATION_SCOPE: "trace"}
            span_id = random.getrandbits(64) or 1
        parent = trace.NonRecordingSpan(trace.SpanContext(trace_id, span_id, is_remote=True,
                                                          trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)))
        ctx = trace.set_span_in_context(parent, otel_context.Context())
    get_handler().tracer.start_span(GEN_AI_EVALUATION_RESULT, context=ctx, attributes=attributes).end()
