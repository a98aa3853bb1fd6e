"""`agent_trace_file` retention: size rotation, bounded backups, failing traces kept apart.

Driven through the public surfaces: the exporter under a real SDK provider, the demo under
`opentelemetry-instrument` with `OTEL_AGENT_TRACE_FILE_*`, and the analyzer CLI over the set.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode

from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.rotating_file import backups_of

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _records(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.splitlines()]


def _span_attrs(record: dict) -> list[tuple[str, dict]]:
    out = []
    for rs in record["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                attrs = {a["key"]: next(iter(a["value"].values())) for a in span.get("attributes", [])}
                out.append((span["traceId"], attrs))
    return out


def _rotated_set(path: Path) -> list[str]:
    return backups_of(str(path)) + [str(path)]


def test_concurrent_reader_sees_only_whole_lines_and_the_set_holds_every_span_once_in_order(tmp_path: Path) -> None:
    path = tmp_path / "agent-traces.jsonl"
    exporter = AgentTraceFileExporter(path, max_bytes=6000, backups=0)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("rotation-test")
    total = 1200
    done = threading.Event()
    problems: list[str] = []
    reads = 0

    def write() -> None:
        try:
            for i in range(total):
                with tracer.start_as_current_span(f"step {i}") as span:
                    span.set_attribute("seq", i)
                    span.set_attribute("payload", "x" * (i % 300))
        finally:
            done.set()

    def read() -> None:
        nonlocal reads
        while not done.is_set():
            for name in _rotated_set(path):
                try:
                    data = Path(name).read_bytes()
                except FileNotFoundError:  # renamed between listing and opening: listed again next pass
                    continue
                live = name == str(path)
                if not live and data and not data.endswith(b"\n"):
                    problems.append(f"backup {name} ends inside a line")
                lines = data.split(b"\n")
                complete, tail = lines[:-1], lines[-1]
                if tail and not live:
                    problems.append(f"backup {name} has a partial last line")
                for line in complete:
                    try:
                        json.loads(line)
                    except ValueError:
                        problems.append(f"{name}: half-written line {line[:60]!r}")
            reads += 1

    reader = threading.Thread(target=read)
    reader.start()
    write()
    reader.join()
    provider.shutdown()

    assert problems == []
    assert reads > 2, "the reader should have overlapped the writer several times"
    files = _rotated_set(path)
    assert len(files) > 10, "6000-byte files should have rotated many times"
    seqs = []
    for name in files:
        data = Path(name).read_bytes()
        assert len(data) <= 6000 or data.count(b"\n") == 1, f"{name} overflowed its size"
        seqs += [attrs["seq"] for record in _records(data) for _, attrs in _span_attrs(record)]
    assert [int(s) for s in seqs] == list(range(total)), "every span once, in write order across the set"


def _trace(tracer, i: int, failing: bool) -> None:
    with tracer.start_as_current_span(f"invoke_agent run{i}") as root:
        root.set_attribute("run", i)
        root.set_attribute("payload", "y" * 2000)
        with tracer.start_as_current_span("execute_tool lookup_order") as tool:
            if failing:
                tool.set_attribute("agent_trace.lifecycle.phase", "origin")
                tool.set_status(Status(StatusCode.ERROR, "empty result"))


def test_failing_traces_outlive_healthy_ones_that_rotate_out(tmp_path: Path) -> None:
    main, failed = tmp_path / "agent-traces.jsonl", tmp_path / "failed" / "agent-failures.jsonl"
    exporter = AgentTraceFileExporter(main, max_bytes=10_000, backups=2, failed_path=failed, failed_backups=0)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("retention-test")
    failing_runs = {i for i in range(60) if i % 7 == 3}
    for i in range(60):
        _trace(tracer, i, i in failing_runs)
    provider.shutdown()

    assert len(backups_of(str(main))) == 2, "healthy traffic keeps only FILE_BACKUPS backups"

    def runs_in(files: list[str]) -> tuple[set[int], dict[str, int]]:
        runs, spans_per_trace = set(), {}
        for name in files:
            for record in _records(Path(name).read_bytes()):
                for trace_id, attrs in _span_attrs(record):
                    spans_per_trace[trace_id] = spans_per_trace.get(trace_id, 0) + 1
                    if "run" in attrs:
                        runs.add(int(attrs["run"]))
        return runs, spans_per_trace

    failed_runs, failed_spans = runs_in(_rotated_set(failed))
    kept_healthy, _ = runs_in(_rotated_set(main))
    assert failed_runs == failing_runs, "every failing trace, and only those, in the failed file"
    assert set(failed_spans.values()) == {2}, "a failing trace is kept whole (root and tool span)"
    assert len(backups_of(str(failed))) >= 1, "the failed file rotated too, keeping all its backups"
    assert kept_healthy and not kept_healthy & failing_runs
    assert len(kept_healthy) < 60 - len(failing_runs), "old healthy traces rotated out"


def _analyze(*args: str) -> dict:
    done = subprocess.run([str(BIN / "otel-agent-trace"), "analyze", "--format", "json", *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_demo_under_opentelemetry_instrument_rotates_and_the_analyzer_reads_the_set(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    env = dict(os.environ)
    env.update({
        "OTEL_SERVICE_NAME": "support-agent",
        "OTEL_TRACES_EXPORTER": "agent_trace_file",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_AGENT_TRACE_ENTRYPOINTS": "support_agent:handle_ticket",
        "OTEL_AGENT_TRACE_FILE": str(traces / "agent-traces.jsonl"),
        "OTEL_AGENT_TRACE_FILE_MAX_BYTES": "2000",
        "OTEL_AGENT_TRACE_FILE_BACKUPS": "0",
        "OTEL_AGENT_TRACE_FILE_FAILED": str(traces / "failed" / "agent-failures.jsonl"),
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "4",  # small batches, many rotations
    })
    env.pop("OPENAI_BASE_URL", None)
    run = subprocess.run([str(BIN / "opentelemetry-instrument"), sys.executable, str(ROOT / "examples" / "support_agent.py")],
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    main_set = sorted(glob.glob(str(traces / "agent-traces*.jsonl")))
    failed_set = sorted(glob.glob(str(traces / "failed" / "agent-failures*.jsonl")))
    assert len(failed_set) > 1, "the failing traces should span several rotated files"

    whole = tmp_path / "concatenated.jsonl"
    with open(whole, "wb") as out:
        for name in main_set + failed_set:
            out.write(Path(name).read_bytes())
    by_dir = _analyze(str(traces))  # a directory: read recursively, names sorted
    by_glob = _analyze(str(traces / "agent-traces*.jsonl"), str(traces / "failed" / "agent-failures*.jsonl"))
    reference = _analyze(str(whole))
    assert by_dir["runs"] == reference["runs"] == by_glob["runs"]
    assert reference["summary"]["runs"] == 4 and reference["summary"]["failed_runs"] == 2
    assert all(not i["bad_lines"] for i in by_dir["inputs"])

    # the failed file alone holds every failing run whole: its analysis is the full set's
    failed_only = {r["trace_id"]: r for r in _analyze(str(traces / "failed"))["runs"]}
    full = {r["trace_id"]: r for r in reference["runs"]}
    assert {t for t, r in full.items() if r["status"] != "ok"} <= set(failed_only)
    for trace_id, run in failed_only.items():
        assert run == full[trace_id]
        assert run["status"] != "ok" or run["errors"] or run["recovered"], "healthy runs stay in the main file"
