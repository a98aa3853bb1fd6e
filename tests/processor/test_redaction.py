"""Redactor details: copies only when needed, cache, chunking, JSON kept valid."""

import random

import orjson
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from processor_corpus import DETECTORS

from otel_agent_trace.semconv import INSTRUMENTATION_SCOPE, REDACTION_COUNT
from otel_agent_trace.processor import AgentTraceSpanProcessor
from otel_agent_trace.processor.redaction import RedactedSpan, Redactor


def test_clean_span_is_passed_as_is_and_dirty_one_counted():
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(AgentTraceSpanProcessor(next=SimpleSpanProcessor(memory)))
    tracer = provider.get_tracer(INSTRUMENTATION_SCOPE)
    with tracer.start_as_current_span("chat gpt-x") as clean:
        clean.set_attribute("gen_ai.usage.input_tokens", 12)
    with tracer.start_as_current_span("chat gpt-x") as dirty:
        dirty.set_attribute("note", "mail a@b.co and b@c.co")
    first, second = memory.get_finished_spans()
    # the SDK's own snapshot goes on untouched: no copy made for a span with nothing to redact
    assert not isinstance(first, RedactedSpan) and REDACTION_COUNT not in first.attributes
    assert first.context == clean.get_span_context()
    assert second.attributes[REDACTION_COUNT] == 2


def test_foreign_span_is_redacted_alike_but_never_stamped():
    """Only spans of our scope get `agent_trace.*`: another instrumentation's span is redacted the
    same way (privacy is not reduced) and carries no attribute of ours."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(AgentTraceSpanProcessor(next=SimpleSpanProcessor(memory), redact_key="k"))
    for scope in (INSTRUMENTATION_SCOPE, "com.anthropic.sdk.python"):
        with provider.get_tracer(scope).start_as_current_span("chat mail a@b.co") as span:
            span.set_attribute("note", "mail a@b.co and b@c.co")
    ours, foreign = memory.get_finished_spans()
    assert ours.attributes[REDACTION_COUNT] == 3
    assert "a@b.co" not in foreign.name and "a@b.co" not in foreign.attributes["note"]
    assert (foreign.name, foreign.attributes["note"]) == (ours.name, ours.attributes["note"])
    assert not any(k.startswith("agent_trace.") for k in foreign.attributes)


def test_long_text_chunks_equal_whole_scan():
    rnd = random.Random(5)
    gens = list(DETECTORS.values())
    lines = [f"line {i}: {rnd.choice(gens)(rnd)} said hello at 2026-11-30 12:00" for i in range(400)]
    text = "\n".join(lines)
    chunked = Redactor(key="k").text(text)
    whole = Redactor(key="k")._scan_text(text)
    assert len(text) > 8192 and chunked == whole and chunked[1] == 400


def test_cache_makes_repeated_context_cheap():
    r = Redactor(key="k")
    messages = [{"role": "user", "content": f"call 1381234{i:04d} please"} for i in range(30)]
    first = r.value("gen_ai.input.messages", orjson.dumps(messages).decode())
    messages.append({"role": "assistant", "content": "ok"})
    second = r.value("gen_ai.input.messages", orjson.dumps(messages).decode())
    assert first[1] == second[1] == 30
    assert orjson.loads(second[0])[:30] == orjson.loads(first[0])  # same pseudonyms, valid JSON


def test_non_json_brackets_and_truncated_json_are_scanned_as_text():
    r = Redactor(key="k")
    out, n = r.value("gen_ai.tool.call.result", '[{"phone": "13812345678", "note": "trunc')
    assert n == 1 and "13812345678" not in out
    out, n = r.value("x", "[note] call 13812345678")
    assert n == 1 and out.startswith("[note] call [PHONE:")
