"""OTLP JSON log records (`{"resourceLogs": [...]}`, an ExportLogsServiceRequest per line, as the
Collector's file exporter writes them beside or among trace lines): the evaluation results among
them, as spans the analysis reads like the rest.

The GenAI semantic conventions define `gen_ai.evaluation.result` as an event, and events are
moving to the Logs API: a log record whose `eventName` (or, from older emitters, whose
`event.name` attribute) is `gen_ai.evaluation.result`. Each becomes one *carrier* span: named
after the event, in the record's trace, its parent the span the record names (the evaluated
span; none when the record carries only a trace id, or nothing), with the record's attributes
(and those of a map body) plus `EVALUATION_SOURCE` = `log_record`. The analysis takes carriers
out of the trace before checking it and turns each into an event on the span it names
(`analyzer/evaluations.py`); the same path reads the small span `record_evaluation` writes when
no LoggerProvider is configured. Other log records are skipped without a note: a logs line is
never an error for a trace analyzer. A record whose ids or attributes are unreadable is reported
with its line, the rest of the line read.
"""

from __future__ import annotations

import hashlib
from typing import Any

from otel_agent_trace.analyzer.readers.otlp_values import any_value, attributes_careful, hex_id, int_field
from otel_agent_trace.analyzer.spans import InputReport, Span
from otel_agent_trace.semconv import EVALUATION_SOURCE, GEN_AI_EVALUATION_NAME, GEN_AI_EVALUATION_RESULT

_EVENT_NAME_ATTRIBUTE = "event.name"


def is_logs(doc: Any) -> bool:
    return isinstance(doc, dict) and ("resourceLogs" in doc or "resource_logs" in doc)


def spans_of_logs(doc: dict[str, Any], path: str, line: int, report: InputReport) -> list[Span]:
    """The carrier spans of one parsed logs export (see the module docstring)."""
    resource_logs = doc.get("resourceLogs", doc.get("resource_logs"))
    if not isinstance(resource_logs, list):
        report.bad(line, f"resourceLogs is {type(resource_logs).__name__}, not a list")
        return []
    out: list[Span] = []
    for rl in resource_logs:
        if not isinstance(rl, dict):
            report.bad(line, "resourceLogs entry is not an object")
            continue
        raw_resource = rl.get("resource")
        resource = attributes_careful(raw_resource.get("attributes") if isinstance(raw_resource, dict) else None,
                                       line, report, "resource")
        scope_logs = rl.get("scopeLogs", rl.get("scope_logs"))
        if not isinstance(scope_logs, list):
            if scope_logs is not None:
                report.bad(line, f"scopeLogs is {type(scope_logs).__name__}, not a list")
            continue
        for sl in scope_logs:
            records = sl.get("logRecords", sl.get("log_records")) if isinstance(sl, dict) else None
            if not isinstance(records, list):
                if records is not None or not isinstance(sl, dict):
                    report.bad(line, "scopeLogs entry without a logRecords list")
                continue
            scope = sl.get("scope")
            scope_name = scope.get("name") if isinstance(scope, dict) else ""
            for index, record in enumerate(records):
                if not isinstance(record, dict):
                    report.bad(line, f"log record {index} is not an object; dropped")
                    continue
                where = f"log record {index}"
                attributes = attributes_careful(record.get("attributes"), line, report, where)
                name = record.get("eventName", record.get("event_name")) or attributes.get(_EVENT_NAME_ATTRIBUTE)
                if name != GEN_AI_EVALUATION_RESULT:
                    continue
                try:
                    body = any_value(record.get("body")) if isinstance(record.get("body"), dict) else None
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    report.bad(line, f"{where}: body unreadable ({exc}); its attributes are read")
                    body = None
                if isinstance(body, dict):  # an event payload in the body: its keys, where attributes lack them
                    attributes = {**{k: v for k, v in body.items() if isinstance(k, str)}, **attributes}
                attributes.pop(_EVENT_NAME_ATTRIBUTE, None)
                if not isinstance(attributes.get(GEN_AI_EVALUATION_NAME), str):
                    report.bad(line, f"{where}: {GEN_AI_EVALUATION_RESULT} without {GEN_AI_EVALUATION_NAME}; dropped")
                    continue
                try:
                    trace_id = hex_id(record.get("traceId", record.get("trace_id")), 16)
                    parent = hex_id(record.get("spanId", record.get("span_id")), 8) or None
                except (TypeError, ValueError) as exc:
                    report.bad(line, f"{where}: trace or span id unreadable ({exc}); dropped")
                    continue
                time = (int_field(record, ("timeUnixNano", "time_unix_nano"), line, report, where)
                        or int_field(record, ("observedTimeUnixNano", "observed_time_unix_nano"), line, report, where))
                attributes[EVALUATION_SOURCE] = "log_record"
                out.append(Span(trace_id, carrier_id(path, line, index), parent, GEN_AI_EVALUATION_RESULT, time, time,
                                attributes=attributes, resource=resource, source=(path, line), scope=scope_name))
    return out


def carrier_id(path: str, line: int, index: int) -> str:
    """A span id for the carrier of a log record (16 hex digits, stable for a given input)."""
    return hashlib.blake2b(f"{path}\0{line}\0{index}".encode(), digest_size=8).hexdigest()
