"""Leaks (issue 18): seeded values written the ways that hide them reach no exporter.

Counted in what each real exporter wrote (agent_trace_file, OTLP/HTTP to a loopback receiver),
after percent-decoding, base64 and NFKC (`processor_corpus.recoverable`). Short version here
(30 values of each of 16 detector kinds per form); `python bench/bench_leaks.py` runs the long
one and prints the table of docs/reliability.md.
"""

from __future__ import annotations

import random
from urllib.parse import quote

import openai
import orjson
from leak_harness import FORMS, OTLPReceiver, run
from processor_corpus import DETECTORS, benign, recoverable, sensitive_forms, sensitive_part
from processor_helpers import read_spans, strings
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.instrumentor import AgentTraceInstrumentor
from otel_agent_trace.processor import install
from otel_agent_trace.processor.redaction import Redactor
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

PER_DETECTOR = 30
# measured share of values cut in two JSON strings whose two halves both go out (docs/reliability.md);
# the halves are not values of any kind, so nothing finds them: carried as a limit, may only drop
SPLIT_LIMIT = 0.70


def test_adversarial_forms_leak_nothing_through_either_exporter(tmp_path):
    result = run(tmp_path, PER_DETECTOR)
    assert result["spans"]["agent_trace_file"] == result["spans"]["otlp_http"] > len(FORMS) * len(DETECTORS) * PER_DETECTOR
    assert all(n == PER_DETECTOR for n in result["values"].values()) and len(result["values"]) == len(FORMS) * len(DETECTORS)
    assert dict(result["leaks"]) == {}, sorted(result["leaks"].items())
    for path, (leaked, total) in result["split"].items():
        assert total == len(DETECTORS) * PER_DETECTOR
        assert leaked / total <= SPLIT_LIMIT, (path, leaked, total)


def test_the_leak_count_can_fail(tmp_path):
    """The same harness without redaction counts every value as leaked (the check can fail)."""
    rnd = random.Random(5)
    for gen in DETECTORS.values():
        value = gen(rnd)
        for form in (f"q={quote(value, safe='')}", f"contact {value}"):
            assert any(f.lower() in recoverable(form).lower() for f in sensitive_forms(value)), (value, form)


def _export_both(tmp_path, resource, emit):
    """Run `emit(tracer)` through install() with a file and an OTLP/HTTP exporter; return every
    string written by each: {path: [strings]}."""
    path = tmp_path / "t.jsonl"
    with OTLPReceiver() as receiver:
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(BatchSpanProcessor(AgentTraceFileExporter(path)))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint, timeout=10)))
        install(provider, redact=True, redact_key="k", sample_ratio=1.0)
        emit(provider)
        provider.shutdown()
        received = [t for _, texts in receiver.spans() for t in texts]
    spans = read_spans(path)
    assert spans and received
    return {"agent_trace_file": [t for s in spans for t in strings(s)], "otlp_http": received}


def test_resource_attributes_from_the_environment_are_redacted(tmp_path, monkeypatch):
    rnd = random.Random(7)
    values = [gen(rnd) for gen in DETECTORS.values()]
    # OTEL_RESOURCE_ATTRIBUTES: key=value pairs, values percent-encoded (W3C baggage octets)
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", ",".join(
        f"owner.{i}={quote(v, safe='')}" for i, v in enumerate(values)))
    resource = Resource.create({"service.name": "env-resource"})
    assert resource.attributes["owner.0"] == values[0]  # the SDK decoded them: the values are there

    def emit(provider):
        with provider.get_tracer("t").start_as_current_span("invoke_agent env"):
            pass

    for path, texts in _export_both(tmp_path, resource, emit).items():
        blob = recoverable("\x00".join(texts)).lower()
        leaked = [v for v in values if any(f.lower() in blob for f in sensitive_forms(v))]
        assert leaked == [], (path, leaked)
        assert "[phone:" in blob and "env-resource" in blob


def test_values_split_across_stream_chunks_are_redacted(tmp_path):
    """The real openai client streams the reply in 16-character chunks and the tool arguments in
    two halves, so every seeded value is cut across chunks; the recorded span holds none."""
    rnd = random.Random(11)
    values = [gen(rnd) for gen in DETECTORS.values() for _ in range(3)]
    reply = " | ".join(values)
    scripts = {"stream-leak": [{"content": reply, "tool_calls": [{"name": "lookup", "arguments": {"who": values}}]}]}
    path = tmp_path / "stream.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(AgentTraceFileExporter(path)))
    install(provider, redact=True, redact_key="k", sample_ratio=1.0)
    instrumentor = AgentTraceInstrumentor()
    with ScriptedOpenAIServer(scripts) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        instrumentor.instrument(tracer_provider=provider)
        try:
            chunks = list(client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "stream-leak"}], stream=True))
        finally:
            instrumentor.uninstrument()
    provider.shutdown()
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == reply  # the agent got every value, unchanged
    pieces = [c.choices[0].delta.content or "" for c in chunks if c.choices]
    cut = [v for v in values if not any(sensitive_part(v) in p for p in pieces)]
    assert len(cut) > len(values) // 2  # most values really were cut across chunks
    blob = recoverable("\x00".join(t for s in read_spans(path) for t in strings(s))).lower()
    assert "[phone:" in blob and "[email:" in blob  # the reply was recorded, redacted
    leaked = [v for v in values if any(f.lower() in blob for f in sensitive_forms(v))]
    assert leaked == []


def test_false_positive_rate_on_text_without_personal_data():
    """Code, UUIDs, hashes, timestamps, token counts, model names, versions, paths, base64 of
    binary: 20k strings, none changed (docs/reliability.md)."""
    rnd = random.Random(18)
    redactor = Redactor(key="k")
    changed = []
    for _ in range(20_000):
        text = benign(rnd)
        out, n = redactor.value("x", text)
        if n or out != text:
            changed.append((text, out))
    assert changed == [], changed[:5]


def test_base64_and_percent_encoded_values_keep_their_encoding():
    """A redacted base64 payload is still base64 (same alphabet and padding) of the redacted text."""
    import base64

    redactor = Redactor(key="k")
    payload = base64.b64encode(b"call 13800138000 or mail ann@example.com").decode()
    out, n = redactor.value("x", f"Basic {payload}")
    assert n == 2 and out.startswith("Basic ")
    decoded = base64.b64decode(out.removeprefix("Basic ")).decode()
    assert decoded.startswith("call [PHONE:") and "[EMAIL:" in decoded
    token = base64.urlsafe_b64encode(b"user 4111-1111-1111-1111?").decode().rstrip("=")
    out, n = redactor.value("x", f"t={token}")
    assert n == 1 and "=" not in out[2:] and "[CARD:" in base64.urlsafe_b64decode(out[2:] + "==").decode()
    assert orjson.loads(redactor.value("x", orjson.dumps({"b": payload}).decode())[0])["b"] != payload
