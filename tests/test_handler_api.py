"""The recording API every integration uses (handler, record_chat / record_tool) and the one
configuration: unknown keywords refused, every setting reaching the stage that uses it."""

from __future__ import annotations

import dataclasses

import pytest
import support_agent
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from span_helpers import attrs

import homegrown_client
import otel_agent_trace
from otel_agent_trace import config as config_module
from otel_agent_trace.config import AgentTraceConfig
from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.instrumentor import AgentTraceInstrumentor
from otel_agent_trace.processor.install import install
from otel_agent_trace.recorder.handler import get_handler

HEALTHY, MALFORMED = support_agent.TICKETS[:2]


def _homegrown(base_url: str, ticket: str) -> str:
    return homegrown_client.run_agent(base_url, ticket, support_agent.TOOLS, support_agent.TOOL_SCHEMAS,
                                      support_agent.SYSTEM)


def test_homegrown_client_recorded_through_the_public_api(instrument, demo_server):
    traced = instrument()
    with otel_agent_trace.agent_run("homegrown"):
        reply = _homegrown(demo_server.base_url, HEALTHY)
    assert reply.startswith("Your refund for order A1001 is $25.00")
    [run] = traced.runs()
    steps = traced.named("agent_step")
    assert [attrs(s)["agent_trace.step.kind"] for s in steps] == ["tool_call", "tool_call", "final"]
    chats = traced.named("chat")
    assert {attrs(c)["gen_ai.provider.name"] for c in chats} == {"homegrown"}
    assert all(attrs(c)["gen_ai.usage.input_tokens"] > 0 for c in chats)
    tools = traced.named("execute_tool")
    assert [attrs(t)["agent_trace.tool.source"] for t in tools] == ["explicit", "explicit"]
    assert [attrs(t)["gen_ai.tool.call.id"] for t in tools] == ["call_0_0", "call_1_0"]
    # the next step consumes the explicit tool span: no inferred twin
    assert attrs(steps[1])["agent_trace.depends_on"] == (format(tools[0].context.span_id, "016x"),)


def test_homegrown_client_origin_found_by_the_analyzer(instrument, demo_server, tmp_path):
    from otel_agent_trace.analyzer.analysis import analyze
    from otel_agent_trace.analyzer.report.json_report import to_dict

    traced = instrument()
    path = tmp_path / "traces.jsonl"
    exporter = AgentTraceFileExporter(str(path))
    with pytest.raises(support_agent.MissingRefundAmount):
        with otel_agent_trace.agent_run("homegrown"):
            support_agent.check_reply(MALFORMED, _homegrown(demo_server.base_url, MALFORMED))
    exporter.export(traced.spans)
    [run] = to_dict(analyze([str(path)]))["runs"]
    assert run["status"] == "failed"
    assert (run["origin"]["tool"], run["origin"]["error_type"]) == ("lookup_order", "tool_empty_result")


def test_record_tool_outside_a_run_records_nothing_and_runs_the_code(instrument):
    traced = instrument()
    with otel_agent_trace.record_tool("lookup_order", {"order_id": "A1001"}) as recording:
        result = support_agent.lookup_order("A1001")
        recording.stop(result)
    assert result and traced.spans == []


def test_invocations_end_exactly_once_and_pass_exceptions_through(instrument):
    traced = instrument()
    with otel_agent_trace.agent_run("once"):
        with pytest.raises(KeyError):
            with otel_agent_trace.record_tool("broken", {}) as recording:
                raise KeyError("the host's own error")
        recording.stop("late")  # ignored: the exception already ended it
        recording.fail(RuntimeError("also ignored"))
    [tool] = traced.named("execute_tool")
    assert attrs(tool)["agent_trace.tool.outcome"] == "exception"
    assert tool.events[0].attributes["exception.type"] == "KeyError"


def test_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="redactt"):
        AgentTraceInstrumentor().instrument(redactt=False)
    assert not AgentTraceInstrumentor().is_instrumented_by_opentelemetry
    with pytest.raises(TypeError):
        AgentTraceConfig.from_env(sample_rate=0.5)


def test_one_config_reaches_recorder_processor_and_exporter(tmp_path, monkeypatch):
    """`instrument(**keywords)` builds the one config; the handler, a processor installed later
    and the file exporter all read that object, not the environment."""
    monkeypatch.setenv("OTEL_AGENT_TRACE_REDACT", "on")
    monkeypatch.setenv("OTEL_AGENT_TRACE_FILE", str(tmp_path / "from-env.jsonl"))
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    instrumentor = AgentTraceInstrumentor()
    keywords = {"redact": False, "sample_ratio": 0.5, "file": str(tmp_path / "from-code.jsonl"), "loop_threshold": 7,
                "capture_content": False, "max_steps": 9, "coexist": "off", "run_idle_seconds": 2.5}
    instrumentor.instrument(tracer_provider=provider, **keywords)
    try:
        config = config_module.current()
        for name, value in keywords.items():
            assert getattr(config, name) == value, name
        assert get_handler().config is config
        processor = install(provider)
        assert processor is not None and processor.config is config
        assert processor.redactor is None and processor.sampler is not None  # redact=False, ratio 0.5
        assert AgentTraceFileExporter().path == str(tmp_path / "from-code.jsonl")
    finally:
        instrumentor.uninstrument()
    assert config_module.current() != config  # uninstrument forgets it: the environment's again


def test_every_setting_is_a_keyword_and_an_environment_variable(monkeypatch):
    for field in dataclasses.fields(AgentTraceConfig):
        assert AgentTraceConfig.from_env(environ={}, **{field.name: getattr(AgentTraceConfig, field.name)})
    monkeypatch.setenv("OTEL_AGENT_TRACE_COEXIST", "adopt")
    monkeypatch.setenv("OTEL_AGENT_TRACE_RUN_IDLE_SECONDS", "4")
    config = AgentTraceConfig.from_env()
    assert (config.coexist, config.run_idle_seconds) == ("adopt", 4.0)
    with pytest.raises(ValueError):
        AgentTraceConfig.from_env(coexist="merge")


def test_loop_threshold_from_code_reaches_the_guard(instrument, client):
    traced = instrument(loop_threshold=5, entrypoints="support_agent:handle_ticket")
    with pytest.raises(support_agent.StepLimitExceeded):
        support_agent.handle_ticket(client, support_agent.TICKETS[3])
    flagged = [attrs(s)["agent_trace.step.index"] for s in traced.named("agent_step")
               if attrs(s).get("agent_trace.error.type") == "loop_detected"]
    assert flagged == [4]  # the fifth identical request, not the third


def test_an_answered_implicit_run_ends_after_run_idle_seconds(instrument, client):
    """A server between requests: nothing else happens, the run still ends (at its last activity)."""
    import time

    traced = instrument(run_idle_seconds=0.4)
    support_agent.handle_ticket(client, HEALTHY)
    finished = traced.exporter.get_finished_spans  # as exported, not as at the process's end
    deadline = time.monotonic() + 10
    while not [s for s in finished() if s.name.startswith("invoke_agent")] and time.monotonic() < deadline:
        time.sleep(0.1)
    [run] = [s for s in finished() if s.name.startswith("invoke_agent")]
    last_step = max(s.end_time for s in finished() if s.name.startswith("agent_step"))
    assert run.end_time == last_step  # not stretched to when the idle run was noticed
