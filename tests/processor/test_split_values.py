"""Values split across two JSON strings (issue 18's carried limit, issue 31: documented precisely).

Redaction scans each string on its own (each JSON string, each attribute). What that means for a
value cut in two, pinned here as docs/reliability.md ("Split across two JSON strings") states it,
through the real SDK, our processor (`install`, redaction on) and the `agent_trace_file` exporter:

- caught: a half that is itself a value of some kind (the first 14 digits of a phone are still a
  phone; an address cut after its TLD's first letter is still an email); a half under a key whose
  name marks a secret (`password`, `api_key`, ...) or under a user key rule;
- not caught (both halves written as they are): every other cut, whatever the kind (an SSN, a
  card, an email cut at its `@`, a NINO, a SIN, an API key), and a value cut across two attributes.
"""

from __future__ import annotations

import json

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from processor_helpers import attrs, read_spans

from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.semconv import GEN_AI_TOOL_CALL_ARGUMENTS
from otel_agent_trace.processor import install

NOT_CAUGHT = [("123-45-", "6789"), ("4111 1111 ", "1111 1111"), ("ada.lovelace@", "example.org"),
              ("AB 12 ", "34 56 C"), ("130 692", " 544"), ("4111 1111 1111 111", "1"),
              ("sk-proj-Ab3dEf6hIj9kLm", "Np2qRs5tUv8wXy")]
# (first half, second half, the kind that finds a half on its own)
CAUGHT = [("+86 138 0013 800", "0", "PHONE"), ("2001:db8:85a3::8a2e:370:7", "334", "IP"),
          ("ada.lovelace@example.or", "g", "EMAIL")]


def _written(tmp_path, arguments: list[str], pairs: list[tuple[str, str]]) -> list[dict]:
    path = tmp_path / "split.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(str(path))))
    install(provider, redact_key="test")
    tracer = provider.get_tracer("test")
    for text in arguments:
        with tracer.start_as_current_span("execute_tool lookup", attributes={GEN_AI_TOOL_CALL_ARGUMENTS: text}):
            pass
    for first, second in pairs:  # the same value cut across two attributes
        with tracer.start_as_current_span("execute_tool lookup", attributes={"app.first": first, "app.second": second}):
            pass
    provider.shutdown()
    return [attrs(s["attributes"]) for s in read_spans(path)]


def test_a_value_cut_in_two_json_strings_is_caught_only_where_documented(tmp_path):
    documents = [{"first": a, "second": b} for a, b in NOT_CAUGHT] + [{"first": a, "second": b} for a, b, _ in CAUGHT]
    documents.append({"password": "hunter", "note": "2!"})  # a secret key's value: whole, whatever it is
    spans = _written(tmp_path, [json.dumps(d) for d in documents], NOT_CAUGHT)
    written = [json.loads(s[GEN_AI_TOOL_CALL_ARGUMENTS]) for s in spans[:len(documents)]]
    for (first, second), out in zip(NOT_CAUGHT, written):
        assert out == {"first": first, "second": second}  # both halves, as they were
    for (first, second, kind), out in zip(CAUGHT, written[len(NOT_CAUGHT):]):
        assert out["first"].startswith(f"[{kind}:") and out["second"] == second
    assert written[-1]["password"].startswith("[SECRET:") and written[-1]["note"] == "2!"
    # across two attributes: each scanned alone, neither half is a value
    for (first, second), span in zip(NOT_CAUGHT, spans[len(documents):]):
        assert (span["app.first"], span["app.second"]) == (first, second)
    # the control: each value whole in one string is redacted
    (tmp_path / "whole").mkdir()
    whole = _written(tmp_path / "whole", [json.dumps({"value": a + b}) for a, b in NOT_CAUGHT], [])
    for (first, second), span in zip(NOT_CAUGHT, whole):
        assert first + second not in span[GEN_AI_TOOL_CALL_ARGUMENTS], span
