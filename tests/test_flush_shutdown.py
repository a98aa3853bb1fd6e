"""A program that flushes or shuts down its tracer provider itself loses nothing (issue 31).

Every test runs tests/flush_agent.py (a plain tool loop, the real `openai` client against the
scripted server) under `opentelemetry-instrument` with our file exporter, no code change of ours,
then reads the file and the analyzer CLI's JSON report, as a user would.

- flush + shutdown at the end: the run is whole (9 spans, 1 run), exactly as without those calls;
- an exception after a flush: the run (already exported) reads as failed, through a `run_outcome`
  span linked to it, with the same report as when no flush came between;
- after shutdown, nothing of ours is recorded, and that is said once;
- serverless: one handler called again and again in one process with `force_flush()` after each
  call (what the AWS Lambda wrapper does): right after each flush, that invocation's run is whole
  in the file with its status; then the process is frozen (SIGSTOP: nothing of it runs, no
  atexit) and the file gives one run per invocation.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import flush_agent
import pytest
from client_helpers import spans_of

from otel_agent_trace.semconv import RUN_ENDED_BY, RUN_OUTCOME_OF, RUN_OUTCOME_SPAN

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
AGENT = [sys.executable, str(ROOT / "tests" / "flush_agent.py")]
# the loop: 3 steps, 3 chats, 2 inferred tool calls, 1 run
LOOP_SPANS = collections.Counter({"chat gpt-4o-mini": 3, "agent_step 0": 1, "agent_step 1": 1, "agent_step 2": 1,
                                  "execute_tool lookup": 2, "invoke_agent": 1})


def _env(path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env.update({"OTEL_TRACES_EXPORTER": "agent_trace_file", "OTEL_AGENT_TRACE_FILE": str(path),
                "OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none",
                "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "openai"})  # openai-v2, installed beside: ours alone
    return env


def agent(tmp_path: Path, mode: str) -> tuple[subprocess.CompletedProcess, Path]:
    path = tmp_path / f"{mode}.jsonl"
    done = subprocess.run([str(BIN / "opentelemetry-instrument"), *AGENT, mode], env=_env(path),
                          capture_output=True, text=True, timeout=120)
    return done, path


def analyze(path: Path) -> tuple[dict[str, Any], str]:
    done = subprocess.run([str(BIN / "otel-agent-trace"), "analyze", "--format", "json", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def names(path: Path) -> collections.Counter:
    return collections.Counter(s["name"] for s in spans_of(path))


def test_flush_and_shutdown_at_the_end_keep_the_whole_run(tmp_path):
    """The issue's reproduction: with `force_flush(); shutdown()` the file held 7 of 9 spans and 0 runs."""
    plain, plain_path = agent(tmp_path, "plain")
    flushed, path = agent(tmp_path, "flush")
    assert plain.returncode == flushed.returncode == 0, flushed.stderr
    assert plain.stdout == flushed.stdout == "Both orders shipped.\n"
    assert names(plain_path) == names(path) == LOOP_SPANS
    report, warnings = analyze(path)
    assert "orphan" not in warnings, warnings
    assert [(r["status"], r["steps"]) for r in report["runs"]] == [("ok", 3)]
    # the last step ended with the run, at its last activity (the answer), not at the flush
    spans = {s["name"]: s for s in spans_of(path)}
    last_chat_end = max(int(s["endTimeUnixNano"]) for s in spans_of(path) if s["name"].startswith("chat"))
    assert int(spans["agent_step 2"]["endTimeUnixNano"]) == int(spans["invoke_agent"]["endTimeUnixNano"])
    assert int(spans["agent_step 2"]["endTimeUnixNano"]) >= last_chat_end
    assert RUN_ENDED_BY not in spans["invoke_agent"]["attrs"]  # it had answered: ended by the flush, not cut


def test_an_exception_after_a_flush_still_fails_the_run(tmp_path):
    raised, raised_path = agent(tmp_path, "raise")
    flushed, path = agent(tmp_path, "flush-raise")
    assert raised.returncode == flushed.returncode == 1
    assert "RuntimeError: could not parse the answer" in flushed.stderr
    spans = spans_of(path)
    (run,) = [s for s in spans if s["name"] == "invoke_agent"]
    (outcome,) = [s for s in spans if s["name"] == RUN_OUTCOME_SPAN]
    assert outcome["traceId"] == run["traceId"] and outcome["parentSpanId"] == run["spanId"]
    assert outcome["attrs"][RUN_OUTCOME_OF] == run["spanId"]
    assert outcome["status"]["code"] == 2 and any(e["name"] == "exception" for e in outcome["events"])
    assert run.get("status", {}).get("code", 0) != 2  # exported before the exception: not failed itself
    assert names(path) - names(raised_path) == collections.Counter({RUN_OUTCOME_SPAN: 1})
    # the analyzer reads the run exactly as when the run span itself recorded the exception
    expected, _ = analyze(raised_path)
    report, _ = analyze(path)
    (want,), (got,) = expected["runs"], report["runs"]
    assert got["status"] == want["status"] == "failed"
    assert got["critical"]["error_type"] == want["critical"]["error_type"] == "run_exception"
    assert got["critical"]["span_id"] == got["run_span_id"]
    assert got["critical"]["description"] == want["critical"]["description"]
    assert (got["bug_class"], got["origin"], got["steps"]) == (want["bug_class"], want["origin"], want["steps"])


def test_nothing_of_ours_after_the_provider_shut_down(tmp_path):
    done, path = agent(tmp_path, "shutdown-late")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Both orders shipped.\n" * 2  # the agent's second loop ran unchanged
    assert names(path) == LOOP_SPANS  # the first run whole, nothing of the second
    said = [ln for ln in done.stderr.splitlines() if "tracer provider was shut down" in ln]
    assert len(said) == 1, done.stderr


def _until(proc: subprocess.Popen, prefix: str) -> list[str]:
    lines = []
    while True:
        line = proc.stdout.readline()
        assert line, f"the agent ended before {prefix!r}: {lines} {proc.stderr.read()}"
        lines.append(line.rstrip("\n"))
        if line.startswith(prefix):
            return lines


def test_serverless_handler_flushed_after_each_invocation_then_frozen(tmp_path):
    path = tmp_path / "serverless.jsonl"
    invocations = 4  # the third meets a model error (HTTP 500), which the runtime reports and goes on
    proc = subprocess.Popen([str(BIN / "opentelemetry-instrument"), *AGENT, "serverless", str(invocations)],
                            env=_env(path), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    expected = ["ok", "ok", "suspect", "ok"]  # suspect: an LLM error, the run did not fail itself
    try:
        for i in range(invocations):
            said = _until(proc, f"FLUSHED {i}")
            assert said[-2] == (f"ERROR {i} InternalServerError" if i == 2 else f"ANSWER {i} Both orders shipped.")
            report, warnings = analyze(path)  # right after this invocation's flush
            assert "orphan" not in warnings, warnings
            assert [r["status"] for r in report["runs"]] == expected[: i + 1]
            run = report["runs"][i]
            assert run["steps"] == (1 if i == 2 else 3)
            if i == 2:
                assert run["origin"]["error_type"] == "llm_error"
            proc.stdin.write("\n")
            proc.stdin.flush()
        _until(proc, "FROZEN")
        proc.send_signal(signal.SIGSTOP)  # frozen: nothing more of the process runs
        report, _ = analyze(path)
        assert [r["status"] for r in report["runs"]] == expected
        assert len({r["trace_id"] for r in report["runs"]}) == invocations
        per_run = collections.Counter(s["traceId"] for s in spans_of(path))
        assert sorted(per_run.values()) == [3, 9, 9, 9]  # each whole: run + step + failed chat; the loops
    finally:
        proc.kill()
        proc.wait(timeout=30)


# --- in process: the paths one by one (real SDK, real openai client, our processor in front) ------
@pytest.fixture
def recorded():
    """(provider, processor, exporter, client): our processor in front of an in-memory exporter."""
    import openai
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_agent_trace.instrumentor import AgentTraceInstrumentor
    from otel_agent_trace.processor import AgentTraceSpanProcessor
    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    processor = AgentTraceSpanProcessor(next=SimpleSpanProcessor(exporter))
    provider.add_span_processor(processor)
    instrumentor = AgentTraceInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with ScriptedOpenAIServer(flush_agent.SCRIPTS) as server:
            yield provider, processor, exporter, openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    finally:
        instrumentor.uninstrument()


def _names(exporter: Any) -> collections.Counter:
    return collections.Counter(s.name for s in exporter.get_finished_spans())


def test_our_processors_own_force_flush_ends_the_lingering_run_first(recorded):
    provider, processor, exporter, client = recorded
    flush_agent.agent(client, "ticket 1: where are my orders?")
    assert "invoke_agent" not in _names(exporter)  # it lingers after its answer
    processor.force_flush()
    assert _names(exporter) == LOOP_SPANS


def test_an_agent_run_open_at_shutdown_ends_before_it(recorded):
    from otel_agent_trace import agent_run

    provider, processor, exporter, client = recorded
    with agent_run("support"):
        flush_agent.agent(client, "ticket 1: where are my orders?")
        provider.shutdown()  # a worker shutting down on a signal, its run still open
        before = _names(exporter)
        flush_agent.agent(client, "ticket 2: where are my orders?")  # not recorded
    expected = LOOP_SPANS - collections.Counter({"invoke_agent": 1}) + collections.Counter({"invoke_agent support": 1})
    assert before == _names(exporter) == expected
    (run,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent support"]
    assert run.attributes[RUN_ENDED_BY] == "provider_shutdown"


def test_spans_ending_after_shutdown_are_counted_and_logged_once(recorded, caplog):
    provider, processor, exporter, client = recorded
    provider.shutdown()
    tracer = provider.get_tracer("another.instrumentation")
    for _ in range(3):
        tracer.start_span("GET /orders").end()
    assert processor.stats["after_shutdown"] == 3
    said = [r for r in caplog.records if "ended after the tracer provider shut down" in r.getMessage()]
    assert len(said) == 1
    assert _names(exporter) == collections.Counter()


def test_a_flush_of_another_provider_leaves_our_run_open(recorded):
    from opentelemetry.sdk.trace import TracerProvider

    provider, processor, exporter, client = recorded
    flush_agent.agent(client, "ticket 1: where are my orders?")
    TracerProvider(shutdown_on_exit=False).force_flush()  # not the one we record to
    assert "invoke_agent" not in _names(exporter)
    provider.force_flush()
    assert _names(exporter) == LOOP_SPANS


def test_the_last_step_ends_with_its_answer_only_the_run_lingers(tmp_path):
    """'A step span ends when its step ends: only the run root lingers.' In process, the real SDK
    with a `SimpleSpanProcessor` (a span is exported the moment it ends) into our file exporter:
    right after the final answer, every step of the implicit run is in the file and its run is not;
    the flush then exports the run, ending at its answer, as its last step did."""
    import time

    import openai
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from otel_agent_trace.exporter import AgentTraceFileExporter
    from otel_agent_trace.instrumentor import AgentTraceInstrumentor

    path = tmp_path / "in-process.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(str(path))))
    instrumentor = AgentTraceInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with flush_agent.ScriptedOpenAIServer(flush_agent.SCRIPTS) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
            assert flush_agent.agent(client, "ticket 1: where are my orders?") == "Both orders shipped."
            answered = time.time_ns()
            before = names(path)
            assert before == LOOP_SPANS - collections.Counter({"invoke_agent": 1})  # the run alone lingers
            provider.force_flush()
            assert names(path) == LOOP_SPANS
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    spans = {s["name"]: s for s in spans_of(path)}
    last_chat_end = max(int(s["endTimeUnixNano"]) for s in spans_of(path) if s["name"].startswith("chat"))
    step_end = int(spans["agent_step 2"]["endTimeUnixNano"])
    assert last_chat_end <= step_end <= answered
    assert int(spans["invoke_agent"]["endTimeUnixNano"]) == step_end  # the run ended at its answer, not the flush
