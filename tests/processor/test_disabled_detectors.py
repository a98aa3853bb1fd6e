"""Each built-in detector can be turned off (issue 31): `redact_disabled` as a keyword in code, or
`OTEL_AGENT_TRACE_REDACT_DISABLED` in the environment.

The real openai client calls the scripted server with a US SSN, a UK NINO, an email and a card in
the user's text, a tool call's arguments and a tool result; our processor sits in front of the
real `agent_trace_file` exporter. A disabled kind reaches the file as it was, every other kind
is still pseudonymized; with nothing disabled, none reaches it. Unknown names are refused.
"""

from __future__ import annotations

import json

import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_agent_trace.config import AgentTraceConfig
from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.instrumentor import AgentTraceInstrumentor
from otel_agent_trace.processor import install

VALUES = {"US_SSN": "123-45-6789", "UK_NINO": "AB 12 34 56 C", "EMAIL": "ada@example.org",
          "CARD": "4111 1111 1111 1111"}


def _run(tmp_path, base_url: str, name: str, **keywords) -> str:
    """One tool loop turn carrying every value three ways; the file's text."""
    path = tmp_path / f"{name}.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(str(path))))
    install(provider, redact_key="test", **keywords)
    instrumentor = AgentTraceInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        values = list(VALUES.values())
        client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0)
        client.chat.completions.create(model="gpt-4o", messages=[
            {"role": "user", "content": "Customer: " + "; ".join(values)},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
                "name": "lookup", "arguments": json.dumps({"contact": values})}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": json.dumps([{"note": v} for v in values])}])
    finally:
        instrumentor.uninstrument()  # ends the implicit run: every span is in the file
    provider.force_flush()
    return path.read_text()


def _in_clear(text: str) -> set[str]:
    return {kind for kind, value in VALUES.items() if value in text}


def test_a_disabled_kind_is_written_as_it_was_and_the_others_are_not(tmp_path, demo_server):
    assert _in_clear(_run(tmp_path, demo_server.base_url, "all")) == set()
    text = _run(tmp_path, demo_server.base_url, "keyword", redact_disabled=["US_SSN"])
    assert _in_clear(text) == {"US_SSN"}
    assert "[UK_NINO:" in text and "[EMAIL:" in text and "[CARD:" in text and "[US_SSN:" not in text


def test_the_environment_variable_does_the_same(tmp_path, demo_server, monkeypatch):
    monkeypatch.setenv("OTEL_AGENT_TRACE_REDACT_DISABLED", "uk_nino, US_SSN")
    text = _run(tmp_path, demo_server.base_url, "env")
    assert _in_clear(text) == {"US_SSN", "UK_NINO"}
    assert "[EMAIL:" in text and "[CARD:" in text


def test_an_unknown_detector_name_is_refused():
    with pytest.raises(ValueError, match="unknown detector.*US_SNN.*known: .*US_SSN"):
        AgentTraceConfig.from_env({}, redact_disabled="US_SNN")
    with pytest.raises(ValueError, match="unknown detector"):
        AgentTraceConfig.from_env({"OTEL_AGENT_TRACE_REDACT_DISABLED": "NINO"})
