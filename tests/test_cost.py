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


@pytest.mark.parametrize("how", ["keyword", "environment"])
def test_cost_off_records_tokens_and_no_cost(instrument, client, monkeypatch, how):
    if how == "environment":
        monkeypatch.setenv("OTEL_AGENT_TRACE_COST", "false")
        traced = instrument(max_steps=0)  # any keyword: the configuration is read again, the environment too
    else:
        traced = instrument(cost=False)
    support_agent.handle_ticket(client, HEALTHY)
    chats = traced.named("chat")
    assert len(chats) == 3 and all(attrs(c)["gen_ai.usage.input_tokens"] > 0 for c in chats)
    assert not any(COST in attrs(c) for c in chats)


_WITHOUT_LIBRARY = """
import sys
sys.modules["genai_prices"] = None  # as if the `cost` extra were not installed
sys.path.insert(0, {examples!r})
import openai, support_agent
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_agent_trace.instrumentor import AgentTraceInstrumentor
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer
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


# --- cached and reasoning tokens ------------------------------------------------------------------
CACHED = {"*": [{"content": "Done.", "usage": {"cached_tokens": 40, "reasoning_tokens": 3}}]}
CACHED_ANTHROPIC = {"*": [{"content": "Done.", "usage": {"cached_tokens": 30, "cache_write_tokens": 20}}]}
LONG = "refund order A1001 please " * 20  # ~130 prompt tokens on the scripted server


def _priced(a, model, provider_id, **usage):
    price = genai_prices.calc_price(genai_prices.Usage(**usage), model, provider_id=provider_id)
    assert a[COST] == pytest.approx(float(price.total_price))
    return float(price.total_price)


def test_openai_cached_and_reasoning_tokens_recorded_and_priced_apart(instrument):
    import openai

    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    with ScriptedOpenAIServer(CACHED) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)
        traced = instrument()
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": LONG}])
        stream = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": LONG}],
                                                stream=True, stream_options={"include_usage": True})
        for _ in stream:
            pass
        client.responses.create(model="gpt-4o-mini", input=LONG)
    chats = traced.named("chat")
    assert len(chats) == 3
    for chat in chats:
        a = attrs(chat)
        assert a["gen_ai.usage.cache_read.input_tokens"] == 40 and a["gen_ai.usage.reasoning.output_tokens"] == 3
        assert a["gen_ai.usage.input_tokens"] > 40  # the total, cached tokens included
        full = _priced(a, "gpt-4o-mini", "openai", input_tokens=a["gen_ai.usage.input_tokens"],
                       output_tokens=a["gen_ai.usage.output_tokens"], cache_read_tokens=40, output_reasoning_tokens=3)
        uncached = genai_prices.calc_price(genai_prices.Usage(input_tokens=a["gen_ai.usage.input_tokens"],
                                                              output_tokens=a["gen_ai.usage.output_tokens"]),
                                           "gpt-4o-mini", provider_id="openai")
        assert full < float(uncached.total_price)  # cached input is cheaper: the discount is applied


def test_anthropic_cache_reads_and_writes_priced_apart(instrument):
    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    with ScriptedOpenAIServer(CACHED_ANTHROPIC) as server:
        claude = anthropic.Anthropic(base_url=server.base_url.removesuffix("/v1"), api_key="t", max_retries=0)
        traced = instrument()
        ask = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": LONG}]}
        message = claude.messages.create(**ask)
        with claude.messages.stream(**ask) as stream:
            stream.until_done()
    assert message.usage.cache_read_input_tokens == 30 and message.usage.cache_creation_input_tokens == 20
    for chat in traced.named("chat"):
        a = attrs(chat)
        assert a["gen_ai.usage.cache_read.input_tokens"] == 30 and a["gen_ai.usage.cache_creation.input_tokens"] == 20
        # input_tokens is the whole input (anthropic reports the cached parts apart from it)
        assert a["gen_ai.usage.input_tokens"] == message.usage.input_tokens + 50
        _priced(a, "claude-sonnet-4-5", "anthropic", input_tokens=a["gen_ai.usage.input_tokens"],
                output_tokens=a["gen_ai.usage.output_tokens"], cache_read_tokens=30, cache_write_tokens=20)
    assert len(traced.named("chat")) == 2


def test_genai_cached_and_thought_tokens_recorded_and_priced_apart(instrument):
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    with ScriptedOpenAIServer(CACHED) as server:
        gemini = genai.Client(api_key="t", http_options=types.HttpOptions(base_url=server.base_url.removesuffix("/v1")))
        traced = instrument()
        gemini.models.generate_content(model="gemini-2.5-flash", contents=LONG)
    a = attrs(traced.named("chat")[0])
    assert a["gen_ai.usage.cache_read.input_tokens"] == 40 and a["gen_ai.usage.reasoning.output_tokens"] == 3
    _priced(a, "gemini-2.5-flash", "google", input_tokens=a["gen_ai.usage.input_tokens"],
            output_tokens=a["gen_ai.usage.output_tokens"], cache_read_tokens=40, output_reasoning_tokens=3)


# --- a user price file --------------------------------------------------------------------------
def test_a_user_price_file_overrides_the_library(instrument, client, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o-mini": {"input": 1000, "output": 2000, "cache_read": 100},
                                  "scripted-model-x": {"input": 1, "output": 2}}))
    traced = instrument(prices=str(prices))
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": HEALTHY}])
    client.chat.completions.create(model="scripted-model-x", messages=[{"role": "user", "content": HEALTHY}])
    client.chat.completions.create(model="scripted-model-y", messages=[{"role": "user", "content": HEALTHY}])
    mini, x, y = (attrs(c) for c in traced.named("chat"))
    assert mini[COST] == pytest.approx((mini["gen_ai.usage.input_tokens"] * 1000
                                        + mini["gen_ai.usage.output_tokens"] * 2000) / 1e6)
    assert x[COST] == pytest.approx((x["gen_ai.usage.input_tokens"] + 2 * x["gen_ai.usage.output_tokens"]) / 1e6)
    assert COST not in y  # in neither the file nor the library: no cost


def test_a_user_price_file_prices_cached_tokens_at_its_rate(instrument, tmp_path):
    import openai

    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    pytest.importorskip("yaml")
    prices = tmp_path / "prices.yaml"
    prices.write_text("my-model:\n  input: 10\n  output: 20\n  cache_read: 1\n")
    with ScriptedOpenAIServer(CACHED) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)
        traced = instrument(prices=str(prices))
        client.chat.completions.create(model="my-model-2026-01-01", messages=[{"role": "user", "content": LONG}])
    a = attrs(traced.named("chat")[0])
    tin, tout = a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]
    assert a[COST] == pytest.approx(((tin - 40) * 10 + 40 * 1 + tout * 20) / 1e6)  # dated id: under its base name


def test_a_broken_price_file_gives_no_cost_and_says_why(tmp_path):
    """Env var form, in a process of its own: a price file with a bad entry is reported (file,
    model, reason) and no cost is recorded at all, rather than the library's for a model the user
    meant to override."""
    from client_helpers import ROOT

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o-mini": {"input": "cheap", "output": 1}}))
    script = tmp_path / "broken_prices.py"
    script.write_text("import json\n" + _WITHOUT_LIBRARY.replace('sys.modules["genai_prices"] = None', "")
                      .format(examples=str(ROOT / "examples"), cost=COST))
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("OTEL_")}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                         env={**env, "OTEL_AGENT_TRACE_PRICES": str(prices)})
    assert run.returncode == 0, run.stderr
    recorded = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(recorded) == 3 and all(tokens > 0 and cost is None for tokens, cost in recorded)
    assert f"{prices}: gpt-4o-mini: 'input' must be a number >= 0, got 'cheap'" in run.stderr
    assert run.stderr.count("price file not used") == 1


def test_the_analyzer_reads_the_same_price_format(tmp_path, instrument, client):
    """One loader: the `prices` of `--rules` take the recorder's format (and the older
    `input_per_mtok`), a bad entry exits 2 with the file and the reason."""
    from otel_agent_trace import cli
    from otel_agent_trace.exporter import AgentTraceFileExporter

    traced = instrument()
    support_agent.handle_ticket(client, HEALTHY)
    trace_file = tmp_path / "t.jsonl"
    exporter = AgentTraceFileExporter(str(trace_file))
    exporter.export(traced.spans)
    exporter.shutdown()
    chats = [attrs(c) for c in traced.named("chat")]
    tin = sum(a["gen_ai.usage.input_tokens"] for a in chats)
    tout = sum(a["gen_ai.usage.output_tokens"] for a in chats)
    rules, out = tmp_path / "rules.json", tmp_path / "report.json"
    for entry in ({"input": 100, "output": 300}, {"input_per_mtok": 100, "output_per_mtok": 300}):
        rules.write_text(json.dumps({"prices": {"gpt-4o-mini": entry}}))
        assert cli.main(["analyze", str(trace_file), "--rules", str(rules), "--format", "json", "-o", str(out)]) == 0
        report = json.loads(out.read_text())
        assert report["summary"]["metrics"]["cost_per_run"] == pytest.approx((tin * 100 + tout * 300) / 1e6)
    rules.write_text(json.dumps({"prices": {"gpt-4o-mini": {"input": 1}}}))
    assert cli.main(["analyze", str(trace_file), "--rules", str(rules)]) == 2


# --- the per-model rates cache (issue 30: the library's lookup costs ~130 us or more per call) ------
def _library_models():
    from genai_prices import data_snapshot

    for provider in data_snapshot.get_snapshot().providers:
        for model in provider.models:
            yield provider.id, model.id


def test_cached_rates_price_every_model_as_the_library_does():
    """Over the library's whole snapshot, random usage (cache reads and writes, reasoning): a model
    whose rates are kept is priced from them exactly as the library prices it."""
    import random

    from otel_agent_trace import cost

    rnd = random.Random(30)
    checked = kept = 0
    for provider_id, model in _library_models():
        inp, out = rnd.randint(0, 300_000), rnd.randint(0, 5_000)
        read = rnd.choice([0, rnd.randint(0, inp)])
        write = rnd.choice([0, rnd.randint(0, inp - read)])
        reasoning = rnd.choice([0, rnd.randint(0, out)])
        usage = genai_prices.Usage(input_tokens=inp, output_tokens=out, cache_read_tokens=read or None,
                                   cache_write_tokens=write or None, output_reasoning_tokens=reasoning or None)
        try:
            price = genai_prices.calc_price(usage, model, provider_id=provider_id)
        except LookupError:
            continue
        checked += 1
        rates = cost._kept_rates(price.model_price)
        if rates is None:
            continue
        kept += 1
        assert rates.cost(inp, out, read, write) == pytest.approx(float(price.total_price), rel=1e-9, abs=1e-12), \
            (provider_id, model, vars(price.model_price))
    assert checked > 1000 and kept > checked * 0.8  # most models: the kept rates serve them


def test_a_model_is_looked_up_in_the_library_once(monkeypatch):
    """The second call of a model is priced from the kept rates: the library is not asked."""
    from otel_agent_trace import cost

    cost.preload()
    assert cost._loaded.wait(30)
    calls = []
    real = genai_prices.calc_price
    monkeypatch.setattr(genai_prices, "calc_price", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    monkeypatch.setattr(cost, "_rates", {})
    first = cost.cost_usd("gpt-4o-mini", "openai", 1200, 300)
    second = cost.cost_usd("gpt-4o-mini", "openai", 5000, 100, cache_read_tokens=1000)
    assert calls == ["gpt-4o-mini"]
    expected = real(genai_prices.Usage(input_tokens=5000, output_tokens=100, cache_read_tokens=1000), "gpt-4o-mini",
                    provider_id="openai")
    assert first > 0 and second == pytest.approx(float(expected.total_price))


def test_prices_that_change_with_the_time_of_day_are_never_cached():
    from genai_prices import data_snapshot, types

    from otel_agent_trace import cost

    timed = [m for p in data_snapshot.get_snapshot().providers for m in p.models if isinstance(m.prices, list)
             and any(type(c.constraint).__name__ == "TimeOfDateConstraint" for c in m.prices)]
    assert timed, "the snapshot has time-of-day prices (DeepSeek's off-peak): the check below must run"
    import time

    for model in timed:
        assert cost._valid_until(model.prices) <= time.time()
    dated = [m for p in data_snapshot.get_snapshot().providers for m in p.models if isinstance(m.prices, list)
             and all(c.constraint is None or isinstance(c.constraint, types.StartDateConstraint) for c in m.prices)]
    assert dated and all(cost._valid_until(m.prices) > time.time() for m in dated)
