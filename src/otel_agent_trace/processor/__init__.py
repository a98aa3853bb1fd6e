"""Span processor: value-level redaction and trace-level tail sampling, before every exporter."""

from otel_agent_trace.processor.install import install
from otel_agent_trace.processor.redaction import Redactor
from otel_agent_trace.processor.redaction_rules import Rules, load_rules
from otel_agent_trace.processor.sampling import TailSampler
from otel_agent_trace.processor.span_processor import AgentTraceSpanProcessor
from otel_agent_trace.semconv import REDACTION_COUNT, SAMPLING_RATIO

__all__ = [
    "REDACTION_COUNT",
    "SAMPLING_RATIO",
    "AgentTraceSpanProcessor",
    "Redactor",
    "Rules",
    "TailSampler",
    "install",
    "load_rules",
]
