"""The processor sits before every exporter: installed on a configured provider, or by
`opentelemetry-instrument` through the `opentelemetry_post_instrument` entry point."""

import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import ProxyTracerProvider
from processor_helpers import attrs, read_spans

from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.processor import (
    REDACTION_COUNT,
    AgentTraceSpanProcessor,
    Rules,
    install,
    load_rules,
)

install_mod = importlib.import_module("otel_agent_trace.processor.install")
from otel_agent_trace.processor.redaction import FAILED, Redactor

PHONE = "+86 138 1234 5678"


def test_install_puts_redaction_before_every_exporter(trace_file):
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(trace_file)))
    tracer = provider.get_tracer("early")  # tracers made before the install are covered too
    ours = install(provider, redact_key="k")
    assert install(provider) is ours  # idempotent
    late = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(late))  # added after: also behind ours
    # another instrumentation's span (an HTTP client) with a phone in its URL
    with provider.get_tracer("opentelemetry.instrumentation.httpx").start_as_current_span("GET") as s:
        s.set_attribute("url.full", f"https://crm.example.com/customers?phone={PHONE.replace(' ', '%20')}&x=1")
        s.set_attribute("http.request.header.authorization", ["Bearer abcdefgh12345678ijkl"])
    with tracer.start_as_current_span(f"lookup {PHONE}") as s:
        s.set_attribute("gen_ai.usage.input_tokens", 1234)
    provider.shutdown()
    for exporter in (memory, late):
        spans = exporter.get_finished_spans()
        assert len(spans) == 2
        text = json.dumps([dict(s.attributes) for s in spans] + [s.name for s in spans])
        assert "1234%205678" not in text and "1234 5678" not in text and "abcdefgh" not in text
        assert spans[1].attributes["gen_ai.usage.input_tokens"] == 1234
    written = read_spans(trace_file)
    assert [s["name"] for s in written][1].startswith("lookup [PHONE:")


def test_post_instrument_hook_covers_later_providers(monkeypatch):
    monkeypatch.setenv("OTEL_AGENT_TRACE_REDACT", "on")
    # as under opentelemetry-instrument with no SDK configured yet (and no leak into other tests)
    monkeypatch.setattr(install_mod.trace, "get_tracer_provider", ProxyTracerProvider)
    try:
        install_mod.post_instrument()  # global provider is a proxy here: patches future ones
        provider = TracerProvider()
        memory = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        with provider.get_tracer("x").start_as_current_span("s") as s:
            s.set_attribute("user.email", "jane.doe@example.com")
        assert memory.get_finished_spans()[0].attributes["user.email"].startswith("[EMAIL:")
    finally:
        install_mod.unpatch_future_providers()


def test_redact_off(monkeypatch):
    monkeypatch.setenv("OTEL_AGENT_TRACE_REDACT", "off")
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(AgentTraceSpanProcessor(next=SimpleSpanProcessor(memory)))
    with provider.get_tracer("x").start_as_current_span("s") as s:
        s.set_attribute("user.email", "jane.doe@example.com")
    assert memory.get_finished_spans()[0].attributes["user.email"] == "jane.doe@example.com"


def test_fail_open_and_closed(caplog):
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    processor = AgentTraceSpanProcessor(next=SimpleSpanProcessor(memory))

    def broken(text):
        raise RuntimeError("detector bug")

    processor.redactor._scan = broken
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("otel_agent_trace")  # ours: stamped (foreign spans: see below)
    for _ in range(3):
        with tracer.start_as_current_span("s") as s:  # the host never sees an exception
            s.set_attribute("note", "call 13812345678")
            s.set_attribute("gen_ai.usage.input_tokens", 7)
    spans = memory.get_finished_spans()
    assert len(spans) == 3
    assert spans[0].attributes["note"] == FAILED and spans[0].attributes["gen_ai.usage.input_tokens"] == 7
    assert sum("redaction of one value failed" in r.message for r in caplog.records) <= 1  # logged once
    # a failure outside value redaction: the span goes on scrubbed of every string
    processor.redactor.span = lambda span: 1 / 0
    with tracer.start_as_current_span("secret name 13812345678") as s:
        s.set_attribute("note", "call 13812345678")
        s.set_attribute("n", 3)
    last = memory.get_finished_spans()[-1]
    assert last.name == "[REDACTED]" and dict(last.attributes) == {"n": 3, REDACTION_COUNT: -1}
    with provider.get_tracer("opentelemetry.instrumentation.httpx").start_as_current_span("GET 13812345678") as s:
        s.set_attribute("n", 4)
    foreign = memory.get_finished_spans()[-1]  # scrubbed alike, but no attribute of ours
    assert foreign.name == "[REDACTED]" and dict(foreign.attributes) == {"n": 4}


def test_user_rules_from_json_file(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"rules": [{"name": "order", "regex": r"ORD-\d{6,}"},
                                          {"name": "address", "keys": ["*.address", "shipping_*"]}]}))
    r = Redactor(key="k", rules=load_rules(str(path)))
    assert r.value("note", "order ORD-1234567 shipped")[0].startswith("order [ORDER:")
    assert r.value("customer.address", "1 Main St")[0].startswith("[ADDRESS:")
    out, n = r.value("gen_ai.tool.call.arguments", '{"shipping_street": "1 Main St", "qty": 2}')
    assert n == 1 and json.loads(out)["qty"] == 2 and json.loads(out)["shipping_street"].startswith("[ADDRESS:")
    assert r.value("gen_ai.usage.input_tokens", 10) == (10, 0)
    assert r.value("my.token_count", "123") == ("123", 0)  # no `.*token.*` key masking


def test_yaml_rules_when_pyyaml_is_present(tmp_path):
    pytest.importorskip("yaml")
    path = tmp_path / "rules.yaml"
    path.write_text("rules:\n  - name: order\n    regex: 'ORD-\\d+'\n")
    assert load_rules(str(path)).values[0].name == "ORDER"


def test_code_rules_and_pseudonym_key():
    rules = Rules()
    rules.add_regex("member", r"M\d{8}")
    a = Redactor(key="same", rules=rules)
    b = Redactor(key="same", rules=rules)
    c = Redactor(key="other", rules=rules)
    assert a.text("id M12345678")[0] == b.text("id M12345678")[0] != c.text("id M12345678")[0]
    assert Redactor().text("13812345678") != Redactor().text("13812345678")  # random key per process


AGENT = textwrap.dedent('''
    from opentelemetry import trace
    tracer = trace.get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent support") as s:
        s.set_attribute("gen_ai.input.messages", '[{"role":"user","content":"I am jane@example.com, 13812345678"}]')
        s.set_attribute("gen_ai.usage.input_tokens", 42)
''')


@pytest.mark.entry_point
def test_under_opentelemetry_instrument(tmp_path):
    """The real `opentelemetry-instrument` with the distro's configurator and two exporters.

    Uses the entry point `[project.entry-points.opentelemetry_post_instrument] agent_trace =
    "otel_agent_trace.processor.install:post_instrument"` when pyproject.toml has it (reinstall
    after adding it), else registers the same entry point through a dist-info on PYTHONPATH."""
    extra_path = []
    if not any(ep.name == "agent_trace" for ep in entry_points(group="opentelemetry_post_instrument")):
        # not in pyproject yet: register it the way an installed wheel would, on PYTHONPATH
        dist = tmp_path / "site" / "agent_trace_hook-0.0.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: agent-trace-hook\nVersion: 0.0\n")
        (dist / "entry_points.txt").write_text(
            "[opentelemetry_post_instrument]\nagent_trace = otel_agent_trace.processor.install:post_instrument\n")
        extra_path.append(str(tmp_path / "site"))
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    out = tmp_path / "out.jsonl"
    exe = shutil.which("opentelemetry-instrument", path=os.path.dirname(sys.executable))
    env = {**os.environ, "OTEL_TRACES_EXPORTER": "agent_trace_file,console", "OTEL_METRICS_EXPORTER": "none",
           "OTEL_LOGS_EXPORTER": "none", "OTEL_AGENT_TRACE_FILE": str(out),
           "PYTHONPATH": os.pathsep.join(extra_path + [os.environ.get("PYTHONPATH", "")]).strip(os.pathsep)}
    proc = subprocess.run([exe, sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "jane@example.com" not in proc.stdout and "13812345678" not in proc.stdout  # console exporter too
    spans = read_spans(out)
    a = attrs(spans[0]["attributes"])
    assert "[EMAIL:" in a["gen_ai.input.messages"] and a["gen_ai.usage.input_tokens"] == 42


def test_sdk_internals_install_relies_on():
    """The SDK offers no public way to put a processor in front of those already added
    (processor/install.py says why); `install` relies on exactly these internals, and this test
    fails when the SDK changes them."""
    from opentelemetry.sdk.trace import SynchronousMultiSpanProcessor

    provider = TracerProvider()
    multi = provider._active_span_processor
    assert isinstance(multi, SynchronousMultiSpanProcessor)
    assert isinstance(multi._span_processors, tuple)
    with multi._lock:  # a lock we can hold while swapping the tuple
        pass
    added = []
    multi.add_span_processor = added.append  # the provider looks the method up on the object, per call
    sentinel = SimpleSpanProcessor(InMemorySpanExporter())
    provider.add_span_processor(sentinel)
    assert added == [sentinel]
    # tracers hold the provider's multi-processor object itself: swapping its tuple reaches them
    other = TracerProvider()
    assert other.get_tracer("t").span_processor is other._active_span_processor
