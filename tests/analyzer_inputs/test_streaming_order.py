"""The streaming path analyses a trace as soon as it is complete; late spans must never be lost.

Whatever the order of the input (roots first, a span repeated in a later line, the same file twice,
spills to disk), `analyze_reduced` gives the report `analyze` (everything read first) gives.
"""

from __future__ import annotations

import random

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inputs_support import failing_run, line, span

from otel_agent_trace.analyzer import analysis, chunks, trace
from otel_agent_trace.analyzer.analysis import analyze
from otel_agent_trace.analyzer.report.reduce import analyze_reduced
from otel_agent_trace.analyzer.report.json_report import to_dict
from otel_agent_trace.analyzer.settings import AnalyzerSettings


def _spans() -> list[dict]:
    out: list[dict] = []
    for n in range(6):
        run = failing_run(n)
        if n % 2:
            run = [dict(s, status={}) if s["name"].startswith("invoke_agent") else s for s in run]
        out.extend(run)
    out.append(span(f"{1:032x}", "00000001000000ff", "00000001deadbeef", "orphan", 9))
    return out


def _write(tmp_path, name: str, lines: list[list[dict]]) -> str:
    path = tmp_path / name
    path.write_text("".join(line(spans) for spans in lines))
    return str(path)


def _same(paths: list[str], budget: int = 256 << 20) -> None:
    full = to_dict(analyze(paths, budget_bytes=budget))
    assert to_dict(analyze_reduced(paths, budget_bytes=budget)) == full


@pytest.mark.parametrize("order", ["as_exported", "roots_first", "shuffled", "one_span_per_line"])
@pytest.mark.parametrize("budget", [256 << 20, 1500])
def test_any_order_gives_the_batch_report(tmp_path, order, budget):
    spans = _spans()
    if order == "roots_first":
        spans = sorted(spans, key=lambda s: "parentSpanId" in s)
    elif order == "shuffled":
        random.Random(5).shuffle(spans)
    size = 1 if order == "one_span_per_line" else 5
    path = _write(tmp_path, "t.jsonl", [spans[i:i + size] for i in range(0, len(spans), size)])
    _same([path], budget)


def test_late_spans_reopen_a_trace(tmp_path, monkeypatch):
    run = failing_run(0)
    root, children = run[-1], run[:-1]
    # the root (with no child to wait for) arrives first: the trace looks complete and is analysed,
    # then its children arrive and a duplicate of a child comes last
    path = _write(tmp_path, "late.jsonl", [[root], children[:1], children[1:], [children[0]]])
    rereads: list[tuple[str, list[int]]] = []
    real = chunks._records_at
    monkeypatch.setattr(chunks, "_records_at", lambda p, lines: (rereads.append((p, sorted(lines))), real(p, lines))[1])
    _same([path])
    reduced = to_dict(analyze_reduced([path]))
    assert reduced["runs"][0]["status"] == "failed" and reduced["runs"][0]["steps"] == 2
    assert any("duplicate span id" in b["reason"] for b in reduced["inputs"][0]["bad_lines"])
    assert rereads[-1] == (path, [1, 2, 3, 4])  # the reopened trace read again from its records only


def test_a_file_given_twice_and_several_files(tmp_path):
    spans = _spans()
    a = _write(tmp_path, "a.jsonl", [spans[:9]])
    b = _write(tmp_path, "b.jsonl", [spans[9:]])
    _same([a, b, a])
    _same([b, a], budget=1000)


def test_an_analysis_error_is_not_reported_as_an_unreadable_input(tmp_path, monkeypatch):
    path = _write(tmp_path, "t.jsonl", [failing_run(0)])

    def broken(*args, **kwargs):
        raise RuntimeError("analysis bug")

    monkeypatch.setattr(trace, "locate", broken)
    with pytest.raises(RuntimeError, match="analysis bug"):
        analyze_reduced([path])


@pytest.mark.parametrize("jobs", [1, 2, 3])
@pytest.mark.parametrize("order", ["as_exported", "shuffled"])
def test_any_cut_of_the_input_gives_the_batch_report(tmp_path, order, jobs):
    """Files cut into chunks (analysed in worker processes when jobs > 1): traces split across
    chunks and files are read again whole; the report is the one-pass report."""
    import gzip

    spans = _spans()
    if order == "shuffled":
        random.Random(7).shuffle(spans)
    plain = _write(tmp_path, "t.jsonl", [spans[i:i + 2] for i in range(0, 30, 2)])
    packed = tmp_path / "t2.jsonl.gz"
    packed.write_bytes(gzip.compress("".join(line(spans[i:i + 3]) for i in range(30, len(spans), 3)).encode()))
    paths = [plain, str(packed), plain]
    cut = chunks.plan(paths, jobs, min_chunk=1500)
    assert (len(cut) > len(paths)) == (jobs > 1)  # the plain inputs are cut only when there are jobs
    full = to_dict(analyze(paths))
    assert to_dict(analyze_reduced(paths, jobs=jobs, min_chunk_bytes=1500)) == full
    assert to_dict(analyze_reduced(paths, jobs=jobs, min_chunk_bytes=1500, budget_bytes=1000)) == full
    # the entries encoded in the worker processes (`--format json`): the same report's bytes
    encoded = to_dict(analyze_reduced(paths, jobs=jobs, min_chunk_bytes=1500, encoded=True))
    assert orjson.dumps(encoded, option=orjson.OPT_INDENT_2) == orjson.dumps(full, option=orjson.OPT_INDENT_2)


def _broken_in_workers(real, fault):
    """`real`, except that in a worker process it runs `fault()` instead; the parent is slowed
    down so that a worker surely takes a chunk."""
    import os
    import time

    parent = os.getpid()

    def patched(*args, **kwargs):
        if os.getpid() != parent:
            return fault()
        time.sleep(0.3)
        return real(*args, **kwargs)

    return patched


def test_an_analysis_error_in_a_worker_reaches_the_caller(tmp_path, monkeypatch):
    path = _write(tmp_path, "t.jsonl", [failing_run(n) for n in range(8)])

    def bug():
        raise RuntimeError("analysis bug")

    monkeypatch.setattr(trace, "locate", _broken_in_workers(trace.locate, bug))
    with pytest.raises(RuntimeError, match="analysis bug"):
        analyze_reduced([path], jobs=2, min_chunk_bytes=500)


def test_a_worker_that_dies_is_an_error_not_a_missing_chunk(tmp_path, monkeypatch):
    import os

    path = _write(tmp_path, "t.jsonl", [failing_run(n) for n in range(8)])
    # killed: no exception, no result
    monkeypatch.setattr(chunks, "analyse_chunk", _broken_in_workers(chunks.analyse_chunk, lambda: os._exit(3)))
    with pytest.raises(RuntimeError, match="worker process died"):
        analyze_reduced([path], jobs=2, min_chunk_bytes=500)


def _cut_in_process(paths: list[str], pieces: int, min_chunk: int) -> dict:
    """The merge of `pieces`-way cut chunks, all analysed in this process (what workers would do)."""
    from otel_agent_trace.analyzer.report.reduce import summarize

    def reduce(finding):
        return summarize(finding, False)

    plan = chunks.plan(paths, pieces, min_chunk)
    settings = AnalyzerSettings.from_env()
    results = chunks.run_chunks(plan, 1, None, reduce, 256 << 20, analysis.Progress(1, enabled=False), settings)
    out = analysis.Reduced()
    chunks.merge(plan, results, paths, None, reduce, out, settings)
    out.runs.sort(key=lambda r: r.key)
    analysis.canonical_notes(out.inputs)
    return to_dict(out)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), per_line=st.integers(1, 7), pieces=st.integers(2, 9),
       min_chunk=st.integers(200, 3000), junk=st.booleans())
def test_any_cut_anywhere_gives_the_batch_report(tmp_path_factory, seed, per_line, pieces, min_chunk, junk):
    rng = random.Random(seed)
    spans = _spans()
    rng.shuffle(spans)
    lines = [line(spans[i:i + per_line]) for i in range(0, len(spans), per_line)]
    if junk:  # bad lines and a duplicate span land in some chunk: reported once, at their line
        lines.insert(rng.randrange(len(lines)), '{"resourceSpans": [tru\n')
        lines.insert(rng.randrange(len(lines)), line([spans[0]]))
    path = tmp_path_factory.mktemp("cut") / "t.jsonl"
    path.write_text("".join(lines))
    assert _cut_in_process([str(path)], pieces, min_chunk) == to_dict(analyze([str(path)]))


def test_a_trace_split_across_pretty_printed_documents(tmp_path):
    """Single documents (pretty-printed, read whole) are read again whole when they hold a part
    of a trace another input also holds."""
    import json

    from inputs_support import doc

    spans = _spans()
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(doc(spans[:7]), indent=2))
    b.write_text(json.dumps(doc(spans[7:]), indent=2))
    paths = [str(a), str(b)]
    full = to_dict(analyze(paths))
    assert sum(r["steps"] for r in full["runs"]) > 0
    assert to_dict(analyze_reduced(paths)) == full
    assert to_dict(analyze_reduced(paths, jobs=2, min_chunk_bytes=100)) == full
