"""Fault matrix, in process (issue 18): each fault leaves the agent's results identical to an
uninstrumented run of the same agent in the same test, with at most one log line of ours per
failure kind. Black-box: the real openai client against the scripted server, the public
instrumentor, `agent_run`; spans are only counted, never inspected for internals.

Process-level faults (exporters, disk, SIGTERM, exit) are in tests/test_fault_processes.py.
"""

from __future__ import annotations

import asyncio
import collections
import importlib
import json
import logging
import pkgutil
import sys
import threading
from typing import Any, Callable

import openai
import pytest
import support_agent
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import SpanProcessor

import otel_agent_trace
from otel_agent_trace import _failopen
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

USER = [{"role": "user", "content": "fault-matrix"}]
SAFELY = _failopen.safely  # the real one, before any test patches the modules that import it


def outcome(fn: Callable[[], Any]) -> tuple:
    """What the agent saw: ("ok", value) or ("raised", type, message)."""
    try:
        return ("ok", fn())
    except BaseException as exc:  # noqa: BLE001 - the outcome is the comparison
        return ("raised", type(exc).__name__, str(exc))


def our_log_lines(caplog) -> collections.Counter:
    return collections.Counter(r.getMessage() for r in caplog.records
                               if r.name.startswith("otel_agent_trace") and r.levelno >= logging.WARNING)


def assert_quiet(caplog):
    lines = our_log_lines(caplog)
    assert all(n <= 1 for n in lines.values()), lines


def both(instrument, caplog, scripts, scenario, *, stateful=False, **client_options):
    """(uninstrumented outcome, instrumented outcome, Traced): a fresh server for each."""
    results = []
    traced = None
    for instrumented in (False, True):
        if instrumented:
            traced = instrument()
            caplog.set_level(logging.WARNING)
            caplog.clear()
        with ScriptedOpenAIServer(scripts, stateful=stateful) as server:
            options = {"api_key": "t", "max_retries": 0, **client_options}
            results.append(scenario(server, options))
    assert_quiet(caplog)
    return results[0], results[1], traced


def chat(server, options, **kwargs):
    client = openai.OpenAI(base_url=server.base_url, **options)
    return outcome(lambda: client.chat.completions.create(model="m", messages=USER, **kwargs).model_dump(exclude={"created"}))


# --- provider errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("turns,options", [
    ([{"status": 500, "error": "upstream exploded"}], {}),
    ([{"status": 429, "error": "slow down"}, {"status": 429, "error": "slow down"}, {"content": "ok after retries"}],
     {"max_retries": 2}),
    ([{"content": "too late", "delay": 1.5}], {"timeout": 0.3}),
], ids=["http-500", "429-then-ok-with-retries", "timeout"])
def test_provider_errors(instrument, caplog, turns, options):
    plain, traced_outcome, traced = both(instrument, caplog, {"fault-matrix": turns}, chat, stateful=True, **options)
    assert plain == traced_outcome
    assert plain[0] == ("ok" if len(turns) == 3 else "raised")
    assert len(traced.named("chat")) >= 1  # the call was recorded, and its span ended


# --- malformed provider responses -------------------------------------------------------------------------
MALFORMED = {
    "missing-usage-and-finish": {"body": {"id": "x", "object": "chat.completion", "created": 1, "model": "m",
                                          "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]}},
    "no-choices": {"body": {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []}},
    "choices-null": {"body": {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": None}},
    "empty-object": {"body": {}},
    "message-missing": {"body": {"id": "x", "object": "chat.completion", "created": 1, "model": "m",
                                 "choices": [{"index": 0, "finish_reason": "stop"}]}},
    "unknown-finish-reason": {"content": "hi", "finish_reason": "cosmic_ray"},
    "invalid-json-tool-arguments": {"tool_calls": [{"name": "lookup_order", "arguments": "{\"order_id\": \"A1"}]},
    "tool-arguments-not-a-string": {"body": {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [
        {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"nested": [1, 2]}}}]}}]}},
    "null-content": {"content": None},
    "usage-strings": {"body": {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "usage": {
        "prompt_tokens": "many", "completion_tokens": None}, "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}]}},
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_responses(instrument, caplog, name):
    plain, traced_outcome, traced = both(instrument, caplog, {"fault-matrix": [MALFORMED[name]]}, chat)
    assert plain == traced_outcome


@pytest.mark.parametrize("name", ["unknown-finish-reason", "invalid-json-tool-arguments", "null-content"])
def test_malformed_responses_streamed(instrument, caplog, name):
    def scenario(server, options):
        client = openai.OpenAI(base_url=server.base_url, **options)
        return outcome(lambda: [c.model_dump(exclude={"created"}) for c in
                                client.chat.completions.create(model="m", messages=USER, stream=True)])

    plain, traced_outcome, _ = both(instrument, caplog, {"fault-matrix": [MALFORMED[name]]}, scenario)
    assert plain == traced_outcome


# --- streams --------------------------------------------------------------------------------------------
STREAM = {"content": "a long streamed answer " * 8, "tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1001"}}]}


def _collect(stream, limit=None):
    out = []
    for chunk in stream:
        out.append(chunk.model_dump(exclude={"created"}))
        if limit is not None and len(out) >= limit:
            break
    return out


def test_stream_broken_mid_way(instrument, caplog):
    def scenario(server, options):
        client = openai.OpenAI(base_url=server.base_url, **options)
        return outcome(lambda: _collect(client.chat.completions.create(model="m", messages=USER, stream=True)))

    plain, traced_outcome, traced = both(instrument, caplog, {"fault-matrix": [{**STREAM, "break_after": 4}]}, scenario)
    assert plain == traced_outcome
    assert len(traced.named("chat")) == 1  # ended once, whatever the break did


def test_stream_abandoned_then_other_calls(instrument, caplog):
    def scenario(server, options):
        client = openai.OpenAI(base_url=server.base_url, **options)
        stream = client.chat.completions.create(model="m", messages=USER, stream=True)
        first = _collect(stream, limit=2)
        del stream  # abandoned: never read to the end, never closed
        after = chat(server, options)
        return first, after

    plain, traced_outcome, _ = both(instrument, caplog, {"fault-matrix": [STREAM, {"content": "next"}]}, scenario,
                                    stateful=True)
    assert plain == traced_outcome


def test_stream_consumed_from_another_thread(instrument, caplog):
    def scenario(server, options):
        client = openai.OpenAI(base_url=server.base_url, **options)
        stream = client.chat.completions.create(model="m", messages=USER, stream=True)
        box = {}
        worker = threading.Thread(target=lambda: box.setdefault("r", outcome(lambda: _collect(stream))))
        worker.start()
        worker.join(30)
        return box["r"]

    plain, traced_outcome, traced = both(instrument, caplog, {"fault-matrix": [STREAM]}, scenario)
    assert plain == traced_outcome and plain[0] == "ok"
    assert len(traced.named("chat")) == 1


# --- asyncio cancellation -------------------------------------------------------------------------------
def test_asyncio_cancellation_mid_call_and_mid_stream(instrument, caplog):
    def scenario(server, options):
        client = None

        async def call_cancelled():
            return await asyncio.wait_for(client.chat.completions.create(model="m", messages=_user("slow-call")), 0.2)

        async def stream_cancelled():
            stream = await client.chat.completions.create(model="m", messages=_user("slow-stream"), stream=True)
            got = []

            async def consume():
                async for chunk in stream:
                    got.append(chunk.choices[0].delta.content if chunk.choices else None)

            task = asyncio.create_task(consume())
            while len(got) < 2:
                await asyncio.sleep(0.01)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                return ("cancelled after", got[:2])
            return ("not cancelled", got)

        async def then_normal():
            r = await client.chat.completions.create(model="m", messages=_user("fine-call"))
            return r.choices[0].message.content

        async def main():
            nonlocal client
            client = openai.AsyncOpenAI(base_url=server.base_url, **options)
            async with client:
                return [outcome(lambda: None)[0], await _aoutcome(call_cancelled()),
                        await _aoutcome(stream_cancelled()), await _aoutcome(then_normal())]

        return asyncio.run(main())

    scripts = {"slow-call": [{"content": "slow", "delay": 1.0}],
               "slow-stream": [{"content": "streamed slowly " * 10, "chunk_delay": 0.1}],
               "fine-call": [{"content": "fine"}]}
    plain, traced_outcome, traced = both(instrument, caplog, scripts, scenario)
    assert plain == traced_outcome
    assert plain[1][:2] == ("raised", "TimeoutError") and plain[2][1][0] == "cancelled after" and plain[3] == ("ok", "fine")
    assert len(traced.named("chat")) == 3  # every call's span ended, cancelled ones too


def _user(text):
    return [{"role": "user", "content": text}]


async def _aoutcome(coro):
    try:
        return ("ok", await coro)
    except BaseException as exc:  # noqa: BLE001
        return ("raised", type(exc).__name__, str(exc))


# --- concurrency: 100 runs, threads and tasks ---------------------------------------------------------------
def _marker_turns(body):
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if not any(m["role"] == "tool" for m in body["messages"]):
        return {"tool_calls": [{"name": "echo", "arguments": {"marker": user}}]}
    tool = next(m["content"] for m in body["messages"] if m["role"] == "tool")
    return {"content": f"final for {user} from {tool}"}


SCRIPTS_100 = {"*": [_marker_turns, _marker_turns]}


def _run_sync(client, marker):
    with otel_agent_trace.agent_run(f"concurrent {marker}"):
        messages = [{"role": "user", "content": marker}]
        first = client.chat.completions.create(model="m", messages=messages)
        call = first.choices[0].message.tool_calls[0]
        messages += [first.choices[0].message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": json.loads(call.function.arguments)["marker"]}]
        return client.chat.completions.create(model="m", messages=messages).choices[0].message.content


async def _run_async(client, marker):
    with otel_agent_trace.agent_run(f"concurrent {marker}"):
        messages = [{"role": "user", "content": marker}]
        first = await client.chat.completions.create(model="m", messages=messages)
        call = first.choices[0].message.tool_calls[0]
        messages += [first.choices[0].message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": json.loads(call.function.arguments)["marker"]}]
        return (await client.chat.completions.create(model="m", messages=messages)).choices[0].message.content


def _check_not_mixed(traced, markers):
    """Every trace holds one run, and its chat spans carry only that run's marker."""
    by_trace = collections.defaultdict(list)
    for span in traced.spans:
        by_trace[span.context.trace_id].append(span)
    runs = [s for s in traced.spans if s.name.startswith("invoke_agent")]
    assert len(runs) == len(markers) == len(by_trace)
    for spans in by_trace.values():
        text = json.dumps([dict(s.attributes or {}) for s in spans if s.name.startswith("chat")])
        present = [m for m in markers if f"{m}\\\"" in text or f"{m}\"" in text]
        assert len(present) == 1, present
        assert sum(1 for s in spans if s.name.startswith("chat")) == 2


def test_100_concurrent_runs_in_threads(instrument, caplog):
    markers = [f"run-{i:03d}" for i in range(100)]

    def scenario(server, options):
        client = openai.OpenAI(base_url=server.base_url, **options)
        results = {}
        threads = [threading.Thread(target=lambda m=m: results.setdefault(m, outcome(lambda: _run_sync(client, m))))
                   for m in markers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        return [results[m] for m in markers]

    plain, traced_outcome, traced = both(instrument, caplog, SCRIPTS_100, scenario)
    assert plain == traced_outcome and all(r[0] == "ok" and r[1] == f"final for {m} from {m}" for r, m in zip(plain, markers))
    _check_not_mixed(traced, markers)


def test_100_concurrent_runs_as_asyncio_tasks(instrument, caplog):
    markers = [f"task-{i:03d}" for i in range(100)]

    def scenario(server, options):
        async def main():
            async with openai.AsyncOpenAI(base_url=server.base_url, **options) as client:
                return await asyncio.gather(*(_aoutcome(_run_async(client, m)) for m in markers))

        return asyncio.run(main())

    plain, traced_outcome, traced = both(instrument, caplog, SCRIPTS_100, scenario)
    assert plain == traced_outcome and all(r[0] == "ok" for r in plain)
    _check_not_mixed(traced, markers)


# --- lifecycle: instrument()/uninstrument() repeated and racing with calls ------------------------------------
def test_instrument_uninstrument_repeated_and_racing_with_calls(instrument, caplog):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_agent_trace.instrumentor import AgentTraceInstrumentor

    caplog.set_level(logging.WARNING)
    with ScriptedOpenAIServer({"*": [{"content": "steady"}]}) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)
        expected = chat(server, {"api_key": "t", "max_retries": 0})
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        instrumentor = AgentTraceInstrumentor()
        stop = threading.Event()
        seen = []

        def caller():
            while not stop.is_set():
                seen.append(outcome(lambda: client.chat.completions.create(model="m", messages=USER).model_dump(exclude={"created", "id"})))

        callers = [threading.Thread(target=caller) for _ in range(4)]
        for t in callers:
            t.start()
        try:
            for _ in range(30):
                instrumentor.instrument(tracer_provider=provider)
                instrumentor.instrument(tracer_provider=provider)  # twice: a no-op
                instrumentor.uninstrument()
                instrumentor.uninstrument()
        finally:
            stop.set()
            for t in callers:
                t.join(30)
        assert seen and all(s == ("ok", {k: v for k, v in expected[1].items() if k != "id"}) for s in seen), seen[:3]
        # afterwards: instrumented once means one span per call; uninstrumented means none
        exporter.clear()
        instrumentor.instrument(tracer_provider=provider)
        instrumentor.instrument(tracer_provider=provider)
        client.chat.completions.create(model="m", messages=USER)
        assert len([s for s in exporter.get_finished_spans() if s.name.startswith("chat")]) == 1
        instrumentor.uninstrument()
        exporter.clear()
        client.chat.completions.create(model="m", messages=USER)
        assert exporter.get_finished_spans() == ()
    assert_quiet(caplog)


# --- our own bugs: an exception injected into each of our wrappers' steps ------------------------------------------
def _modules_with_safely():
    """Every module of the package that calls our code through `_failopen.safely` (found, not listed)."""
    import otel_agent_trace as package

    found = []
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if ".analyzer" in info.name or info.name.endswith(("cli", "__main__")):
            continue
        try:
            module = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001,S112 - optional parts
            continue
        if module is not _failopen and getattr(module, "safely", None) is SAFELY:
            found.append(module)
    return found


def _agent_outcomes(client):
    """The demo's four tickets (runs, steps, tools) after one streamed call outside a run."""
    streamed = outcome(lambda: _collect(client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": support_agent.TICKETS[0]}], stream=True)))
    results = []
    for ticket in support_agent.TICKETS:
        results.append(outcome(lambda: support_agent.handle_ticket(client, ticket)))
    support_agent._carrier_calls.clear()
    return results, streamed


def _discover_places(instrument, client, monkeypatch):
    """Run the demo agent instrumented with a spy `safely`: every place our wrappers call us."""
    places = collections.Counter()

    def spy(where, fn, *args, **kwargs):
        places[where] += 1
        return SAFELY(where, fn, *args, **kwargs)

    with monkeypatch.context() as m:
        for module in _modules_with_safely():
            m.setattr(module, "safely", spy)
        instrument(entrypoints="support_agent:handle_ticket")
        _agent_outcomes(client)
    return sorted(places)


def test_an_exception_injected_at_each_place_leaves_the_agent_unchanged(instrument, client, caplog, monkeypatch):
    baseline = _agent_outcomes(client)
    places = _discover_places(instrument, client, monkeypatch)
    assert len(places) >= 5, places  # run, model call, stream and tool places at least
    saved = otel_context.get_current()
    for where in places:
        def failing(name, fn, *args, _where=where, **kwargs):
            if name == _where:
                def boom(*a, **k):
                    raise RuntimeError(f"injected into {_where}")
                return SAFELY(name, boom, *args, **kwargs)
            return SAFELY(name, fn, *args, **kwargs)

        with monkeypatch.context() as m:
            for module in _modules_with_safely():
                m.setattr(module, "safely", failing)
            _failopen.reset_log_once()
            caplog.set_level(logging.WARNING)
            caplog.clear()
            traced = instrument(entrypoints="support_agent:handle_ticket")
            got = _agent_outcomes(client)
        # a failed `*.detach` leaves the call's context attached in this thread (the injected
        # failure replaced the detach itself): put the test's context back for the next place
        otel_context.attach(saved)
        assert got == baseline, where
        lines = our_log_lines(caplog)
        assert sum(lines.values()) == 1, (where, lines)  # one line for this failure kind, however often it fired
        assert traced.spans is not None


# --- our own bugs: each processor stage ---------------------------------------------------------------------
@pytest.mark.parametrize("stage", ["redaction", "redaction-and-scrub", "sampling", "next"])
def test_an_exception_in_each_processor_stage_leaves_the_agent_unchanged(client, caplog, monkeypatch, tmp_path, stage):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_agent_trace.instrumentor import AgentTraceInstrumentor
    from otel_agent_trace.processor import install, redaction, sampling

    baseline = _agent_outcomes(client)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    ours = install(provider, redact=True, redact_key="k", sample_ratio=0.5)

    def boom(*args, **kwargs):
        raise RuntimeError(f"injected into {stage}")

    if stage.startswith("redaction"):
        monkeypatch.setattr(redaction.Redactor, "span", boom)
    if stage == "redaction-and-scrub":
        monkeypatch.setattr(sys.modules[type(ours).__module__], "scrub_span", boom)
    if stage == "sampling":
        monkeypatch.setattr(sampling.TailSampler, "on_end", boom)
    if stage == "next":
        monkeypatch.setattr(ours.next, "on_end", boom)
    caplog.set_level(logging.WARNING)
    instrumentor = AgentTraceInstrumentor()
    instrumentor.instrument(tracer_provider=provider, entrypoints="support_agent:handle_ticket")
    try:
        got = _agent_outcomes(client)
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    assert got == baseline
    lines = our_log_lines(caplog)
    assert 1 <= sum(lines.values()) <= 2 and all(n == 1 for n in lines.values()), lines
    spans = exporter.get_finished_spans()
    if stage == "redaction":  # fail closed: exported scrubbed of every string, never raw
        assert spans and all(s.name == "[REDACTED]" for s in spans)
    if stage == "redaction-and-scrub":
        assert spans == ()  # dropped rather than leaked
    if stage == "sampling":
        assert spans  # kept (exported unsampled) rather than lost


# --- found by this suite (fixed by recorder v2: uninstrument ends the open runs) ---------------------------------------------------------------
class _Counting(SpanProcessor):
    """A real SDK span processor that counts what started and what ended."""

    def __init__(self):
        self.started, self.ended = [], []

    def on_start(self, span, parent_context=None):
        self.started.append(span.name)

    def on_end(self, span):
        self.ended.append(span.name)

    def shutdown(self):
        pass

    def force_flush(self, timeout_millis=30000):
        return True


def test_no_span_reaches_a_provider_after_its_uninstrument(client):
    from opentelemetry.sdk.trace import TracerProvider

    from otel_agent_trace.instrumentor import AgentTraceInstrumentor

    instrumentor = AgentTraceInstrumentor()
    old, new = _Counting(), _Counting()

    def sessions():  # a fresh thread: no state of earlier tests, none left to later ones
        for counting in (old, new):
            provider = TracerProvider()
            provider.add_span_processor(counting)
            instrumentor.instrument(tracer_provider=provider, entrypoints="support_agent:handle_ticket")
            try:
                _agent_outcomes(client)
            finally:
                instrumentor.uninstrument()
            if counting is old:
                seen["old after its session"] = len(old.ended)
        seen["old at the end"] = len(old.ended)

    seen = {}
    worker = threading.Thread(target=sessions)
    worker.start()
    worker.join(60)
    assert seen["old after its session"] == seen["old at the end"], seen
