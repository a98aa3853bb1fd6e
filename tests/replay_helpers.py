"""What the replay tests share: an instrumented phase writing a real trace file, a recording made
against the scripted server, a URL nobody listens on, and a log of the tools the agent ran."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_agent_trace
from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.instrumentor import AgentTraceInstrumentor
from otel_agent_trace.testing.scripted_openai import ScriptedOpenAIServer

import support_agent


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class Session:
    """One instrumented phase: its spans go to `path` (if given) and to memory."""

    def __init__(self, path: Path | None = None, **config: Any):
        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        if path is not None:
            self.provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(str(path))))
        self.instrumentor = AgentTraceInstrumentor()
        self.config = config

    def __enter__(self) -> "Session":
        if self.instrumentor.is_instrumented_by_opentelemetry:
            self.instrumentor.uninstrument()
        self.instrumentor.instrument(tracer_provider=self.provider, **self.config)
        return self

    def __exit__(self, *exc: Any) -> None:
        otel_agent_trace.end_implicit_runs()
        self.provider.force_flush()
        self.instrumentor.uninstrument()
        support_agent._carrier_calls.clear()

    def spans(self) -> list[Any]:
        otel_agent_trace.end_implicit_runs()
        return list(self.memory.get_finished_spans())


def tool_log(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict]]:
    """Log every tool the example agents run (each imported `run_tool` by name)."""
    calls: list[tuple[str, dict]] = []
    real = support_agent.run_tool

    def logged(name: str, arguments: dict) -> str:
        calls.append((name, arguments))
        return real(name, arguments)

    for module in ("support_agent", "responses_agent", "anthropic_agent"):
        if module in sys.modules:
            monkeypatch.setattr(sys.modules[module], "run_tool", logged)
    return calls


def record(tmp_path: Path, agent: Any, **config: Any) -> tuple[Path, str]:
    path = tmp_path / "recorded.jsonl"
    with ScriptedOpenAIServer(support_agent.SCRIPTS) as server, Session(path, **config) as session:
        answer = agent(server.base_url)
        trace_ids = {s.context.trace_id for s in session.spans()}
    assert len(trace_ids) == 1
    return path, answer


