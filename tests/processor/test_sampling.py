"""Tail sampling through the real SDK: failing traces always kept, ratio honoured, memory capped."""

import os
import subprocess
import sys
import textwrap

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    Status,
    StatusCode,
    TraceFlags,
    set_span_in_context,
)
from processor_helpers import attrs, read_spans

from otel_agent_trace import semconv, vocabulary
from otel_agent_trace.processor import AgentTraceSpanProcessor
from otel_agent_trace.processor.sampling import ratio_keeps
from otel_agent_trace.semconv import SAMPLING_RATIO


def _pipeline(**kw):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    processor = AgentTraceSpanProcessor(next=SimpleSpanProcessor(exporter), redact=False, **kw)
    provider.add_span_processor(processor)
    return provider, provider.get_tracer(semconv.INSTRUMENTATION_SCOPE), processor, exporter


def _run(tracer, kind):
    """One agent run: root + step + tool; `kind` says how (if at all) it fails."""
    with tracer.start_as_current_span("invoke_agent a") as root:  # noqa: SIM117 - the span tree, visibly
        with tracer.start_as_current_span("agent_step 0"):
            with tracer.start_as_current_span("execute_tool q") as tool:
                if kind == "error":
                    tool.set_status(Status(StatusCode.ERROR, "boom"))
                elif kind == "origin":
                    tool.set_attribute(semconv.LIFECYCLE_PHASE, vocabulary.Phase.ORIGIN.value)
                elif kind == "critical":
                    root.set_attribute(semconv.LIFECYCLE_PHASE, vocabulary.Phase.CRITICAL.value)
                elif kind == "loop":
                    root.set_attribute(semconv.ERROR_TYPE, vocabulary.ErrorType.LOOP_DETECTED.value)
                elif kind == "budget":
                    root.add_event("stop", {semconv.ERROR_TYPE: vocabulary.ErrorType.BUDGET_EXCEEDED.value})
                elif kind == "recovered":
                    tool.set_attribute(semconv.LIFECYCLE_PHASE, vocabulary.Phase.RECOVERED.value)
    return root.get_span_context().trace_id


def test_ten_thousand_traces_one_percent_failing():
    provider, tracer, processor, exporter = _pipeline(sample_ratio=0.01, sampler_max_spans=1000)
    kinds = ["error", "origin", "critical", "loop", "budget"]
    failing, normal = set(), set()
    for i in range(10_000):
        kind = kinds[i // 100 % 5] if i % 100 == 0 else ("recovered" if i % 7 == 0 else "ok")
        (failing if kind in kinds else normal).add(_run(tracer, kind))
    provider.force_flush()
    spans = exporter.get_finished_spans()
    kept = {s.context.trace_id for s in spans}
    assert failing <= kept, "a failing trace was dropped"
    kept_normal = kept & normal
    expected = sum(ratio_keeps(t, 0.01) for t in normal)
    assert kept_normal == {t for t in normal if ratio_keeps(t, 0.01)}
    assert 40 <= len(kept_normal) <= 180 and expected == len(kept_normal)  # about 1% of 9900
    for s in spans:  # whole traces, marked for re-weighting
        assert s.attributes[SAMPLING_RATIO] == (1.0 if s.context.trace_id in failing else 0.01)
    assert len(spans) == 3 * len(kept)
    stats = processor.stats
    assert stats["traces_kept"] == len(kept) and stats["traces_dropped"] == 10_000 - len(kept)
    assert stats["max_buffered_spans"] <= 1000 and stats["forced_flushes"] == 0
    provider.shutdown()


def test_decision_matches_the_sdk_ratio_sampler():
    sdk = TraceIdRatioBased(0.25)
    for tid in range(1, 1 << 64, (1 << 64) // 997):
        tid = tid * 0x9E3779B97F4A7C15 % (1 << 128)
        assert ratio_keeps(tid, 0.25) == sdk.should_sample(None, tid, "x").decision.is_sampled()


def test_overflow_flushes_oldest_and_never_drops_a_failing_trace():
    provider, tracer, processor, exporter = _pipeline(sample_ratio=0.0, sampler_max_spans=50)
    roots = []
    failing = set()
    # 40 runs left open (their roots have not ended): children pile up in the buffer
    for i in range(40):
        root = tracer.start_span("invoke_agent open")
        ctx = set_span_in_context(root)
        for j in range(3):
            with tracer.start_as_current_span("agent_step", context=ctx) as step:
                if i % 4 == 0 and j == 1:
                    step.set_status(Status(StatusCode.ERROR))
                    failing.add(root.get_span_context().trace_id)
        roots.append(root)
        assert sum(processor.sampler.buffered[:1]) <= 50
    assert processor.stats["forced_flushes"] > 0
    kept = {s.context.trace_id for s in exporter.get_finished_spans()}
    flushed_failing = {t for t in failing if t in kept}
    assert flushed_failing, "evicted failing traces are exported"
    for root in roots:  # late roots follow their trace's decision; failing ones are kept
        root.end()
    provider.force_flush()
    kept = {s.context.trace_id for s in exporter.get_finished_spans()}
    assert failing <= kept
    assert kept == failing  # ratio 0: nothing else
    assert processor.stats["max_buffered_spans"] <= 50
    provider.shutdown()


def test_byte_cap():
    provider, tracer, processor, _exporter = _pipeline(sample_ratio=0.5, sampler_max_bytes=20_000)
    root = tracer.start_span("invoke_agent big")
    ctx = set_span_in_context(root)
    for _ in range(50):
        with tracer.start_as_current_span("agent_step", context=ctx) as s:
            s.set_attribute("gen_ai.input.messages", "x" * 2000)
        assert processor.sampler.buffered[1] <= 20_000
    assert processor.stats["forced_flushes"] > 0
    root.end()
    provider.shutdown()


def test_late_span_follows_decision_and_remote_parent_is_a_local_root():
    provider, tracer, processor, exporter = _pipeline(sample_ratio=0.5)
    remote = SpanContext(trace_id=0x1234 << 64 | 0x10, span_id=0xABC, is_remote=True,
                         trace_flags=TraceFlags(TraceFlags.SAMPLED))
    ctx = set_span_in_context(NonRecordingSpan(remote))
    with tracer.start_as_current_span("server", context=ctx):
        child = tracer.start_span("background")
    late_ok = ratio_keeps(remote.trace_id, 0.5)
    assert len(exporter.get_finished_spans()) == (1 if late_ok else 0)
    child.set_status(Status(StatusCode.ERROR))
    child.end()  # ends after its local root: follows the decision, or kept because failing
    assert len(exporter.get_finished_spans()) == (2 if late_ok else 1)
    assert processor.stats["late_spans"] == 1
    provider.shutdown()


def test_decision_timeout():
    provider, tracer, processor, exporter = _pipeline(sample_ratio=0.0, sampler_decision_seconds=0.05)
    root = tracer.start_span("invoke_agent slow")
    with tracer.start_as_current_span("agent_step", context=set_span_in_context(root)) as s:
        s.set_attribute(semconv.LIFECYCLE_PHASE, "critical")
    import time
    deadline = time.time() + 5
    while not exporter.get_finished_spans() and time.time() < deadline:
        time.sleep(0.02)
    assert len(exporter.get_finished_spans()) == 1 and processor.stats["timeouts"] == 1
    root.end()
    provider.shutdown()


def test_foreign_spans_follow_their_trace_but_are_never_stamped():
    """Another instrumentation's span in a kept trace is exported with it, without our attribute."""
    provider, tracer, _processor, exporter = _pipeline(sample_ratio=0.01)
    foreign = provider.get_tracer("com.anthropic.sdk.python")
    with tracer.start_as_current_span("invoke_agent a") as root:
        with foreign.start_as_current_span("anthropic.messages.create"):
            pass
        root.set_status(Status(StatusCode.ERROR, "boom"))  # failing: kept whatever the ratio
    provider.force_flush()
    by_name = {s.name: s for s in exporter.get_finished_spans()}
    assert set(by_name) == {"invoke_agent a", "anthropic.messages.create"}
    assert by_name["invoke_agent a"].attributes[SAMPLING_RATIO] == 1.0
    assert not any(k.startswith("agent_trace.") for k in by_name["anthropic.messages.create"].attributes)


def test_ratio_one_is_a_pass_through():
    _provider, tracer, processor, exporter = _pipeline()
    _run(tracer, "ok")
    assert processor.sampler is None and len(exporter.get_finished_spans()) == 3
    assert SAMPLING_RATIO not in exporter.get_finished_spans()[0].attributes


EXIT_SCRIPT = textwrap.dedent('''
    import sys
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from otel_agent_trace.exporter import AgentTraceFileExporter
    from otel_agent_trace.processor import AgentTraceSpanProcessor
    provider = TracerProvider()
    provider.add_span_processor(AgentTraceSpanProcessor(
        next=BatchSpanProcessor(AgentTraceFileExporter(sys.argv[1]), schedule_delay_millis=60000),
        sample_ratio=0.5, sampler_decision_seconds=3600))
    tracer = provider.get_tracer("otel_agent_trace")
    ids = []
    for i in range(200):
        with tracer.start_as_current_span("invoke_agent run") as root:
            root.set_attribute("run.i", i)
            with tracer.start_as_current_span("agent_step 0"):
                pass
        ids.append(format(root.get_span_context().trace_id, "032x"))
    print(" ".join(ids))
    # a trace whose root never ends: decided at exit
    open_root = tracer.start_span("invoke_agent never_ended")
    with tracer.start_as_current_span("agent_step", context=__import__("opentelemetry").trace.set_span_in_context(open_root)) as s:
        s.set_attribute("agent_trace.lifecycle.phase", "critical")
    # no shutdown, no flush: the process just ends here
''')


def test_nothing_lost_at_exit(tmp_path):
    path = tmp_path / "exit.jsonl"
    script = tmp_path / "agent.py"
    script.write_text(EXIT_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(path)], check=False, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "OTEL_AGENT_TRACE_REDACT": "on"})
    assert proc.returncode == 0, proc.stderr
    spans = read_spans(path)
    traces: dict[str, list] = {}
    for s in spans:
        traces.setdefault(s["traceId"], []).append(s)
    runs = {t: ss for t, ss in traces.items() if any(s["name"] == "invoke_agent run" for s in ss)}
    expected = {t for t in proc.stdout.split() if ratio_keeps(int(t, 16), 0.5)}
    assert set(runs) == expected and 60 <= len(expected) <= 140
    for ss in runs.values():
        assert len(ss) == 2 and all(attrs(s["attributes"])[SAMPLING_RATIO] == 0.5 for s in ss)
    critical = [s for s in spans if s["name"] == "agent_step"]
    assert len(critical) == 1 and attrs(critical[0]["attributes"])[SAMPLING_RATIO] == 1.0


def test_forked_child_starts_empty():
    if not hasattr(os, "fork"):
        return
    provider, tracer, processor, exporter = _pipeline(sample_ratio=0.5)
    root = tracer.start_span("invoke_agent parent")
    with tracer.start_as_current_span("agent_step", context=set_span_in_context(root)):
        pass
    assert processor.sampler.buffered[0] == 1
    pid = os.fork()
    if pid == 0:  # child: nothing of the parent's buffer, sampler still works
        ok = processor.sampler.buffered == (0, 0)
        _run(tracer, "error")
        ok = ok and len(exporter.get_finished_spans()) == 3
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    root.end()
    provider.shutdown()


def test_kept_spans_are_redacted_on_their_way_out_and_dropped_traces_never():
    """The sampler decides first; only the spans of kept traces are redacted, and every one that
    reaches the exporter is: redacted, or scrubbed when redaction fails, never as it was."""
    from otel_agent_trace.semconv import REDACTION_COUNT

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    processor = AgentTraceSpanProcessor(next=SimpleSpanProcessor(exporter), redact=True, redact_key="k",
                                        sample_ratio=0.5)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer(semconv.INSTRUMENTATION_SCOPE)
    redactor = processor.redactor
    real_span = redactor.span
    seen: list = []
    redactor.span = lambda span: (seen.append(span.context.trace_id), real_span(span))[1]
    secret = "call me at 13812345678"
    traces = []
    for i in range(200):
        with tracer.start_as_current_span("invoke_agent a") as root:
            with tracer.start_as_current_span("agent_step 0") as step:
                step.set_attribute("agent_trace.note", secret)
                if i % 20 == 0:
                    step.set_status(Status(StatusCode.ERROR, secret))
        traces.append((root.get_span_context().trace_id, i % 20 == 0))
    provider.force_flush()
    spans = exporter.get_finished_spans()
    kept = {t for t, failing in traces if failing or ratio_keeps(t, 0.5)}
    assert {s.context.trace_id for s in spans} == kept and 0 < len(kept) < 200
    assert sorted(seen) == sorted(s.context.trace_id for s in spans)  # each kept span once, no dropped one
    for s in spans:
        assert "13812345678" not in str(dict(s.attributes)) and "13812345678" not in (s.status.description or "")
    notes = [s for s in spans if s.name == "agent_step 0"]
    assert all(s.attributes["agent_trace.note"].startswith("call me at [") for s in notes)
    assert all(s.attributes[REDACTION_COUNT] >= 1 and SAMPLING_RATIO in s.attributes for s in notes)
    # redaction failing on the way out: the kept span goes on scrubbed of every string
    redactor.span = lambda span: 1 / 0
    with tracer.start_as_current_span("invoke_agent b") as root:
        root.set_attribute("agent_trace.note", secret)
        root.set_status(Status(StatusCode.ERROR, "failing, so kept"))
    last = exporter.get_finished_spans()[-1]
    assert last.name == "[REDACTED]" and last.attributes[REDACTION_COUNT] == -1
    assert "agent_trace.note" not in last.attributes and last.attributes[SAMPLING_RATIO] == 1.0
