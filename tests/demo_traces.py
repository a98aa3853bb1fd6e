"""The demo's four tickets recorded through the real openai client, SDK, batch span processor
and `agent_trace_file` exporter: the trace file most analyzer tests start from."""

from __future__ import annotations

from pathlib import Path

import openai
import support_agent
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.instrumentor import AgentTraceInstrumentor


def record_demo_tickets(path: Path, base_url: str) -> Path:
    client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0)
    provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
    provider.add_span_processor(BatchSpanProcessor(AgentTraceFileExporter(str(path))))
    instrumentor = AgentTraceInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
    instrumentor.instrument(tracer_provider=provider, entrypoints="support_agent:handle_ticket")
    try:
        for ticket in support_agent.TICKETS:
            try:
                support_agent.handle_ticket(client, ticket)
            except (support_agent.MissingRefundAmount, support_agent.StepLimitExceeded):
                pass
    finally:
        instrumentor.uninstrument()
        support_agent._carrier_calls.clear()
    provider.shutdown()
    return path
