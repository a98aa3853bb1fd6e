"""Shared fixtures: a real SDK tracer provider, the instrumentor, the scripted model server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_agent_trace
from otel_agent_trace._failopen import reset_log_once
from otel_agent_trace.instrumentor import AgentTraceInstrumentor
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import support_agent  # noqa: E402


class Traced:
    """The spans one test produced, with lookups by name and id."""

    def __init__(self, exporter: InMemorySpanExporter):
        self.exporter = exporter

    @property
    def spans(self) -> list[ReadableSpan]:
        # what the process's end would do: implicit runs still open after their answer end now
        otel_agent_trace.end_implicit_runs()
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return sorted((s for s in self.spans if s.name.startswith(prefix)), key=lambda s: s.start_time)

    def by_id(self, span_id: int) -> ReadableSpan:
        return next(s for s in self.spans if s.context.span_id == span_id)

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        return sorted((s for s in self.spans if s.parent is not None and s.parent.span_id == parent.context.span_id),
                      key=lambda s: s.start_time)

    def runs(self) -> list[ReadableSpan]:
        return self.named("invoke_agent")


@pytest.fixture
def instrument() -> Iterator[Any]:
    """Call `instrument(**config)` to instrument with a fresh in-memory provider; undone after."""
    instrumentor = AgentTraceInstrumentor()
    state: dict[str, Any] = {}

    def start(**config: Any) -> Traced:
        if instrumentor.is_instrumented_by_opentelemetry:  # hypothesis calls this once per example
            instrumentor.uninstrument()
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        instrumentor.instrument(tracer_provider=provider, **config)
        state["provider"] = provider
        return Traced(exporter)

    reset_log_once()
    yield start
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
    support_agent._carrier_calls.clear()


@pytest.fixture(scope="session")
def demo_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(support_agent.SCRIPTS) as server:
        yield server


@pytest.fixture
def client(demo_server: ScriptedOpenAIServer) -> Any:
    import openai

    return openai.OpenAI(base_url=demo_server.base_url, api_key="test", max_retries=0)
