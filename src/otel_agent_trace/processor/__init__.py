"""Span processor: value-level redaction and trace-level tail sampling, before every exporter."""

from otel_agent_trace.processor.install import install
from otel_agent_trace.processor.redaction import REDACTION_COUNT, Redactor
from otel_agent_trace.processor.rules import Rules, load_rules
from otel_agent_trace.processor.sampling import SAMPLING_RATIO, TailSampler
from otel_agent_trace.processor.span_processor import AgentTraceSpanProcessor

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
