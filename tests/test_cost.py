"""`agent_trace.usage.cost_usd` on chat spans from the optional `genai-prices` (the `cost`
extra): priced per provider from the recorded tokens, absent for an unknown model, and absent
(no error, no warning) when the library is not installed."""

from __future__ import annotations

import json
import subprocess
import sys

import anthropic
import pytest
import support_agent
from span_helpers import attrs

genai_prices = pytest.importorskip("genai_prices")  # the `cost` extra (Python 3.11+)

COST = "agent_trace.usage.cost_usd"
HEALTHY = support_agent.TICKETS[0]


def _expected(chat, provider_id):
    a = attrs(chat)
    usage = genai_prices.Usage(input_tokens=a["gen_ai.usage.input_tokens"], output_tokens=a["gen_ai.usage.output_tokens"])
    return float(genai_prices.calc_price(usage, a["gen_ai.response.model"], provider_id=provider_id).total_price)


def test_openai_and_anthropic_calls_are_priced(instrument, client, demo_server):
    traced = instrument()
    support_agent.handle_ticket(client, HEALTHY)  # model gpt-4o-mini
    chats = traced.named("chat")
    assert len(chats) == 3
    for chat in chats:
        assert attrs(chat)[COST] == pytest.approx(_expected(chat, "openai")) and attrs(chat)[COST] > 0
    traced = instrument()
    claude = anthropic.Anthropic(base_url=demo_server.base_url.removesuffix("/v1"), api_key="t", max_retries=0)
    claude.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": HEALTHY}])
    [chat] = traced.named("chat")
    assert attrs(chat)[COST] == pytest.approx(_expected(chat, "anthropic"))
    # the same tokens cost more on claude-sonnet-4-5 than on gpt-4o-mini: a real per-model price
    assert attrs(chat)[COST] > attrs(chats[0])[COST]


def test_an_unknown_model_has_no_cost(instrument, client):
    traced = instrument()
    client.chat.completions.create(model="scripted-model-x", messages=[{"role": "user", "content": HEALTHY}])
    [chat] = traced.named("chat")
    assert attrs(chat)["gen_ai.usage.input_tokens"] > 0
    assert COST not in attrs(chat)


_WITHOUT_LIBRARY = """
import sys
sys.modules["genai_prices"] = None  # as if the `cost` extra were not installed
sys.path.insert(0, {examples!r})
import openai, support_agent
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_agent_trace.instrumentor import AgentTraceInstrumentor
from otel_agent_trace.testing.scripted_openai import ScriptedOpenAIServer
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
AgentTraceInstrumentor().instrument(tracer_provider=provider)
with ScriptedOpenAIServer(support_agent.SCRIPTS) as server:
    client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)
    print(support_agent.handle_ticket(client, support_agent.TICKETS[0]))
chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
print(json.dumps([[s.attributes.get("gen_ai.usage.input_tokens"), s.attributes.get({cost!r})] for s in chats]))
"""


def test_without_the_library_no_cost_and_no_error(tmp_path):
    from client_helpers import ROOT

    script = tmp_path / "no_prices.py"
    script.write_text("import json\n" + _WITHOUT_LIBRARY.format(examples=str(ROOT / "examples"), cost=COST))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    answer, recorded = run.stdout.strip().splitlines()[-2:]
    assert answer.startswith("Your refund for order A1001 is $25.00")
    assert len(json.loads(recorded)) == 3
    assert all(tokens > 0 and cost is None for tokens, cost in json.loads(recorded))
    assert "genai" not in run.stderr and "Traceback" not in run.stderr
