"""Metrics from the recorder (recorder/metrics.py), read with the SDK's InMemoryMetricReader after
real agent loops: the openai client against the scripted server, the real SDK. Every value is
checked against the spans of the same runs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import openai
import pytest
import support_agent
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from scenario_agent import call, run_loop

import otel_agent_trace
from otel_agent_trace.instrumentor import AgentTraceInstrumentor
from otel_agent_trace.recorder import metrics as recorder_metrics
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer


class Recorded:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def points(self, name: str, scope: str | None = "otel_agent_trace") -> list[tuple[dict[str, Any], Any]]:
        """(attributes, data point) of metric `name` (from `scope`, or any scope when None)."""
        data = self.reader.get_metrics_data()
        out = []
        for rm in data.resource_metrics if data else []:
            for sm in rm.scope_metrics:
                if scope is not None and sm.scope.name != scope:
                    continue
                for metric in sm.metrics:
                    if metric.name == name:
                        out.extend((dict(p.attributes), p) for p in metric.data.data_points)
        return out

    def scopes_of(self, name: str) -> set[str]:
        data = self.reader.get_metrics_data()
        return {sm.scope.name for rm in data.resource_metrics for sm in rm.scope_metrics
                for m in sm.metrics if m.name == name}

    def ended(self, operation: str) -> list[Any]:
        return [s for s in self.spans.get_finished_spans() if s.instrumentation_scope.name == "otel_agent_trace"
                and (s.attributes or {}).get("gen_ai.operation.name") == operation]


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorded]:
    monkeypatch.delenv("OTEL_METRICS_EXPORTER", raising=False)
    rec = Recorded()
    instrumentor = AgentTraceInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
    yield rec
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
    support_agent._carrier_calls.clear()


def _tickets(rec: Recorded, server: ScriptedOpenAIServer, **config: Any) -> None:
    AgentTraceInstrumentor().instrument(tracer_provider=rec.tracer_provider, meter_provider=rec.meter_provider,
                                        entrypoints="support_agent:handle_ticket", **config)
    client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    for ticket in support_agent.TICKETS:
        try:
            support_agent.handle_ticket(client, ticket)
        except (support_agent.MissingRefundAmount, support_agent.StepLimitExceeded):
            pass


def test_genai_client_metrics_match_the_chat_spans(recorded: Recorded, demo_server: ScriptedOpenAIServer) -> None:
    _tickets(recorded, demo_server)
    chats = recorded.ended("chat")
    assert len(chats) > 8
    durations = recorded.points("gen_ai.client.operation.duration")
    assert sum(p.count for _, p in durations) == len(chats)
    assert sum(p.sum for _, p in durations) == pytest.approx(sum((s.end_time - s.start_time) / 1e9 for s in chats))
    for attributes, point in durations:
        assert attributes["gen_ai.operation.name"] == "chat" and attributes["gen_ai.provider.name"] == "openai"
        assert attributes["gen_ai.request.model"] == "gpt-4o-mini"
        assert list(point.explicit_bounds) == list(recorder_metrics.DURATION_BUCKETS)
    usage = recorded.points("gen_ai.client.token.usage")
    by_type = {a["gen_ai.token.type"]: p for a, p in usage}
    assert set(by_type) == {"input", "output"}
    assert by_type["input"].sum == sum(s.attributes["gen_ai.usage.input_tokens"] for s in chats)
    assert by_type["output"].sum == sum(s.attributes["gen_ai.usage.output_tokens"] for s in chats)
    assert by_type["input"].count == len(chats)
    assert list(by_type["input"].explicit_bounds) == list(recorder_metrics.TOKEN_BUCKETS)
    for attributes, _ in usage:
        assert not any("id" in key.split(".")[-1] for key in attributes), "no ids"


def test_agent_metrics_match_the_runs(recorded: Recorded, demo_server: ScriptedOpenAIServer) -> None:
    _tickets(recorded, demo_server)
    runs = recorded.ended("invoke_agent")
    assert len(runs) == len(support_agent.TICKETS)
    expected = Counter(("failed" if s.status.status_code.name == "ERROR" else "ok") for s in runs)
    got = Counter()
    for attributes, point in recorded.points("agent_trace.runs"):
        assert attributes["gen_ai.agent.name"] == "handle_ticket"
        got[attributes["agent_trace.run.status"]] += point.value
    assert got == expected and expected["failed"] >= 1
    steps = [s for s in recorded.spans.get_finished_spans() if s.name.startswith("agent_step")]
    histogram = recorded.points("agent_trace.run.steps")
    assert sum(p.sum for _, p in histogram) == len(steps)
    assert sum(p.count for _, p in histogram) == len(runs)
    tools = Counter(s.attributes["gen_ai.tool.name"] for s in recorded.ended("execute_tool"))
    assert {a["gen_ai.tool.name"]: p.value for a, p in recorded.points("agent_trace.tool.calls")} == tools
    errors = Counter((s.attributes["gen_ai.tool.name"], s.attributes["agent_trace.error.type"])
                     for s in recorded.ended("execute_tool") if s.attributes.get("agent_trace.error.type"))
    assert errors, "the demo has failing tool calls"
    assert {(a["gen_ai.tool.name"], a["agent_trace.error.type"]): p.value
            for a, p in recorded.points("agent_trace.tool.errors")} == errors
    # ticket 4 repeats track_shipment until the host's step limit: a loop, in a failed run
    loops = [s for s in steps if (s.attributes or {}).get("agent_trace.error.type") == "loop_detected"]
    assert loops
    assert [p.value for _, p in recorded.points("agent_trace.run.loop_aborts")] == [1]


def test_budget_stops_and_cost_per_run(recorded: Recorded, demo_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o-mini": {"input": 0.15, "output": 0.6}}))
    _tickets(recorded, demo_server, max_steps=3, prices=str(prices))
    runs = recorded.ended("invoke_agent")
    stopped = [s for s in runs if s.attributes.get("agent_trace.budget.exceeded")]
    assert stopped
    assert {(a["agent_trace.budget.reason"], p.value) for a, p in recorded.points("agent_trace.run.budget_stops")} \
        == {("steps", len(stopped))}
    cost = recorded.points("agent_trace.run.cost")
    chats = recorded.ended("chat")
    assert sum(p.count for _, p in cost) == len(runs)
    assert sum(p.sum for _, p in cost) == pytest.approx(sum(s.attributes["agent_trace.usage.cost_usd"] for s in chats))


def test_tool_names_are_capped_with_an_other_bucket(recorded: Recorded) -> None:
    names = [f"tool_{i}" for i in range(60)]
    turns = [call(name) for name in names] + [{"content": "done"}]
    with ScriptedOpenAIServer({"go": turns}) as server:
        AgentTraceInstrumentor().instrument(tracer_provider=recorded.tracer_provider,
                                            meter_provider=recorded.meter_provider)
        client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)
        with otel_agent_trace.agent_run("capped"):
            run_loop(client, "go", {name: (lambda: "ok") for name in names}, max_turns=70)
    counted = {a["gen_ai.tool.name"]: p.value for a, p in recorded.points("agent_trace.tool.calls")}
    assert len(counted) == 51 and counted["other"] == 10
    assert sum(counted.values()) == 60


@pytest.mark.parametrize("coexist", ["nest", "adopt"])
def test_not_doubled_beside_the_official_openai_instrumentation(recorded: Recorded, demo_server: ScriptedOpenAIServer,
                                                                 coexist: str) -> None:
    """The official openai-v2 instrumentation emits the GenAI client metrics for the same calls:
    with coexist=nest or adopt (ours outermost, theirs under our chat span) only theirs count them."""
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    official = OpenAIInstrumentor()
    official.instrument(tracer_provider=recorded.tracer_provider, meter_provider=recorded.meter_provider)
    try:
        _tickets(recorded, demo_server, coexist=coexist)
    finally:  # in the reverse order: each unwraps its own wrapper, the outermost first
        AgentTraceInstrumentor().uninstrument()
        official.uninstrument()
    chats = recorded.ended("chat")
    usage = recorded.points("gen_ai.client.token.usage", scope=None)
    assert recorded.scopes_of("gen_ai.client.token.usage") == {"opentelemetry.util.genai.handler"}
    assert recorded.scopes_of("gen_ai.client.operation.duration") == {"opentelemetry.util.genai.handler"}
    assert sum(p.count for _, p in usage) == 2 * len(chats), "one input and one output point per call, once"
    assert recorded.points("agent_trace.runs"), "our agent metrics are still emitted"


def test_off_without_a_meter_provider_or_exporter(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in (None, "none", ""):
        if value is None:
            monkeypatch.delenv("OTEL_METRICS_EXPORTER", raising=False)
        else:
            monkeypatch.setenv("OTEL_METRICS_EXPORTER", value)
        provider = TracerProvider()
        assert recorder_metrics.install(provider, None) is None
        assert provider._active_span_processor._span_processors == ()
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
    provider = TracerProvider()
    assert recorder_metrics.install(provider, None) is not None
    assert len(provider._active_span_processor._span_processors) == 1
    recorder_metrics.uninstall()


def test_metrics_never_break_the_host(recorded: Recorded, demo_server: ScriptedOpenAIServer) -> None:
    """A meter whose instruments raise: the agent's results are unchanged, spans still recorded."""

    class Broken:
        def get_meter(self, *args: Any, **kwargs: Any) -> Any:
            return self

        def __getattr__(self, name: str) -> Any:
            def create(*args: Any, **kwargs: Any) -> Any:
                class Instrument:
                    def record(self, *a: Any, **k: Any) -> None:
                        raise RuntimeError("broken meter")

                    add = record
                return Instrument()
            return create

    AgentTraceInstrumentor().instrument(tracer_provider=recorded.tracer_provider, meter_provider=Broken(),
                                        entrypoints="support_agent:handle_ticket")
    client = openai.OpenAI(base_url=demo_server.base_url, api_key="test", max_retries=0)
    reply = support_agent.handle_ticket(client, support_agent.TICKETS[0])
    assert "$25.00" in reply
    assert recorded.ended("invoke_agent")
