"""No seeded value leaks through any client's translation (issue 18: each client issue adds its rows).

Each client we patch (openai Chat Completions, openai Responses, anthropic Messages, litellm) is
called for real against the scripted server, plain and streamed, with seeded values of every
detector in the user's text, in a tool call's arguments (as a nested JSON string) and in a tool's
result. The spans go through `processor.install` (redaction on, the default) into the real
`agent_trace_file` exporter; every string in the file, and what percent-decoding, base64 or NFKC
recovers from it, is searched for each value. The same values without redaction are written (the
test can fail).
"""

from __future__ import annotations

import json
import random

import anthropic
import litellm
import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from processor_corpus import DETECTORS, recoverable, sensitive_forms
from processor_helpers import strings

from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.instrumentor import AgentTraceInstrumentor
from otel_agent_trace.processor import install

CLIENTS = ["chat", "responses", "anthropic", "litellm"]


def _values(seed: int) -> list[str]:
    rnd = random.Random(seed)
    return [make(rnd) for make in DETECTORS.values()]


def _call(client_kind: str, base_url: str, values: list[str], stream: bool) -> None:
    """One model call of `client_kind` whose request carries every value three ways."""
    text = "Customer details: " + "; ".join(values)
    arguments = json.dumps({"query": json.dumps({"contact": values})})  # nested JSON string
    result = json.dumps([{"note": v} for v in values])
    if client_kind in ("chat", "litellm"):
        messages = [{"role": "user", "content": text},
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": arguments}}]},
                    {"role": "tool", "tool_call_id": "call_1", "content": result}]
        if client_kind == "chat":
            client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0)
            answer = client.chat.completions.create(model="gpt-4o", messages=messages, stream=stream)
        else:
            answer = litellm.completion(model="openai/gpt-4o", api_base=base_url, api_key="test", messages=messages,
                                        stream=stream)
    elif client_kind == "responses":
        client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0)
        answer = client.responses.create(model="gpt-4o", stream=stream, input=[
            {"role": "user", "content": text},
            {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": arguments},
            {"type": "function_call_output", "call_id": "call_1", "output": result}])
    else:
        client = anthropic.Anthropic(base_url=base_url.removesuffix("/v1"), api_key="test", max_retries=0)
        answer = client.messages.create(model="claude-sonnet-4-5", max_tokens=64, stream=stream, messages=[
            {"role": "user", "content": text},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup",
                                               "input": json.loads(arguments)}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": result}]}])
    if stream:
        for _ in answer:  # consume the stream: the chat span ends with it
            pass


def _leaked(path, values: list[str]) -> list[str]:
    blob = recoverable("\n".join(text for line in path.read_text().splitlines() if line.strip()
                                  for text in strings(json.loads(line))))
    return [v for v in values if any(form in blob for form in sensitive_forms(v))]


@pytest.fixture
def traced_to_file(tmp_path):
    """Instrument with a real provider: our processor (redaction as configured) in front of the
    `agent_trace_file` exporter. Yields `start(redact) -> path`."""
    instrumentor = AgentTraceInstrumentor()

    def start(redact: bool):
        path = tmp_path / f"leaks-{redact}.jsonl"
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(str(path))))
        install(provider, redact=redact, redact_key="test")
        instrumentor.instrument(tracer_provider=provider, redact=redact)
        return provider, path

    yield start
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("client_kind", CLIENTS)
def test_no_seeded_value_reaches_the_file_through_any_client(traced_to_file, demo_server, client_kind, stream):
    values = _values(seed=CLIENTS.index(client_kind) * 2 + stream)
    provider, path = traced_to_file(redact=True)
    _call(client_kind, demo_server.base_url, values, stream)
    AgentTraceInstrumentor().uninstrument()  # ends the implicit run: every span is in the file
    provider.force_flush()
    assert path.exists() and path.stat().st_size > 0
    assert _leaked(path, values) == []


@pytest.mark.parametrize("client_kind", CLIENTS)
def test_without_redaction_the_same_values_are_written(traced_to_file, demo_server, client_kind):
    """The control: the check above finds values when they are there."""
    values = _values(seed=100 + CLIENTS.index(client_kind))
    provider, path = traced_to_file(redact=False)
    _call(client_kind, demo_server.base_url, values, stream=False)
    AgentTraceInstrumentor().uninstrument()
    provider.force_flush()
    assert len(_leaked(path, values)) == len(values)
