"""The seeded corpus through the real SDK and `agent_trace_file`: nothing seeded is written.

>= 10k values of every detector (also written with full-width forms, other scripts' digits and
IBANs in lower or mixed case), each placed in every field a span carries: span name,
attribute values (plain, arrays, JSON-encoded messages and nested JSON tool arguments), event
attributes (exception.message / exception.stacktrace), link attributes, status description and
resource attributes.
"""

import hashlib
import random

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Link, Status, StatusCode
from processor_corpus import DETECTORS, sensitive_forms
from processor_helpers import attrs, read_spans, strings

from otel_agent_trace import semconv
from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.processor import AgentTraceSpanProcessor

PER_DETECTOR = 10_000
BATCHES = 4  # hypothesis examples; each carries PER_DETECTOR / BATCHES values of every detector


def _numeric(i):
    return {
        semconv.GEN_AI_USAGE_INPUT_TOKENS: 1000 + i, semconv.GEN_AI_USAGE_OUTPUT_TOKENS: 13812345678 + i,
        semconv.STEP_INDEX: i, "corpus.float": 4111111111111111.0 + i, "corpus.flag": bool(i & 1),
        "corpus.ints": [i, 13912345678, 4111111111111111],
    }


def _hashes(i):
    h = hashlib.sha256(str(i).encode()).hexdigest()
    return {semconv.CONTEXT_HASH: h, semconv.CONTEXT_MESSAGE_HASHES: [h[:16], h[16:32]], semconv.DEPENDS_ON: [h[:16]]}


def _emit(tracer, i, values):
    """One span carrying `values` (one per detector) in every field."""
    joined = " ; ".join(values)
    messages = [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": f"my details: {joined}"},
        {"role": "assistant", "tool_calls": [{"id": f"call_{i}", "type": "function", "function": {
            "name": "lookup", "arguments": orjson.dumps({"query": values[0], "all": values}).decode()}}]},
        {"role": "tool", "content": [{"type": "text", "text": values[-1]}, {"type": "text", "text": joined}]},
    ]
    parent = trace.get_current_span().get_span_context()
    link = Link(parent, {"corpus.link": joined}) if parent.is_valid else None
    with tracer.start_as_current_span(
        f"execute_tool {values[i % len(values)]}",
        links=[link] if link else None,
        attributes={"corpus.i": i, "corpus.text": f"call {joined} now", "corpus.list": list(values),
                    "gen_ai.input.messages": orjson.dumps(messages).decode(),
                    semconv.GEN_AI_TOOL_CALL_ARGUMENTS: orjson.dumps({"contact": values}).decode(),
                    "url.full": f"https://api.example.com/v1/users?phone={values[0]}&mail={values[3]}",
                    **_numeric(i), **_hashes(i)},
        record_exception=False, set_status_on_exception=False,
    ) as span:
        span.add_event("tool.result", {"result": joined, "n": i})
        try:
            raise ValueError(f"lookup failed for {joined}")
        except ValueError as exc:
            span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, f"failed: {joined}"))


@settings(max_examples=BATCHES, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32))
def test_corpus_leaves_no_seeded_value(seed, tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "traces.jsonl"
    rnd = random.Random(seed)
    n = PER_DETECTOR // BATCHES
    rows = [[gen(rnd) for gen in DETECTORS.values()] for _ in range(n)]
    resource = Resource.create({"service.name": "corpus", "deployment.owner": " / ".join(rows[0]),
                                "host.ip": rows[1][6]})
    provider = TracerProvider(resource=resource)
    processor = AgentTraceSpanProcessor(next=BatchSpanProcessor(AgentTraceFileExporter(path), max_queue_size=n * 3),
                                        redact=True, redact_key="corpus-key", sample_ratio=1.0)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("otel_agent_trace")  # ours: counted (foreign spans are not stamped)
    with tracer.start_as_current_span("invoke_agent corpus"):
        for i, values in enumerate(rows):
            _emit(tracer, i, values)
    # the same values again in a second trace: pseudonyms must be equal
    with tracer.start_as_current_span("invoke_agent twin"):
        for i, values in enumerate(rows[:50]):
            _emit(tracer, i, values)
    provider.shutdown()

    spans = read_spans(path)
    assert len(spans) == n + 50 + 2
    by_i: dict[int, list] = {}
    for span in spans:
        a = attrs(span.get("attributes"))
        if "corpus.i" not in a:
            continue
        i = a["corpus.i"]
        by_i.setdefault(i, []).append(a)
        # every string of the span, decoded, plus its resource
        blob = "\x00".join(strings(span)).lower()
        for value in rows[i]:
            for form in sensitive_forms(value):
                assert form.lower() not in blob, (value, form, i)
        assert a == {**a, **_numeric(i), **_hashes(i)}, "a numeric or hash attribute changed"
        assert a["agent_trace.redaction.count"] >= 10 * 5
        orjson.loads(a["gen_ai.input.messages"])  # still valid JSON
        orjson.loads(a[semconv.GEN_AI_TOOL_CALL_ARGUMENTS])
        res = "\x00".join(strings(span["_resource"]))
        for value in rows[0]:
            for form in sensitive_forms(value):
                assert form not in res, (value, form)
    # stable pseudonyms: the twin spans carry exactly the same redacted text
    for i in range(50):
        first, twin = by_i[i]
        for key in ("corpus.text", "gen_ai.input.messages", "corpus.list", semconv.GEN_AI_TOOL_CALL_ARGUMENTS):
            assert first[key] == twin[key]
        assert "[PHONE:" in first["corpus.text"] and "[EMAIL:" in first["corpus.text"]
