"""`analyze --engine dask [--scheduler ADDRESS]`: the streaming analysis on a Dask cluster
(a `LocalCluster` when no address is given), for inputs one machine should not read alone.

The graph (dask.bag): the inputs are cut into line-aligned partitions (`chunks.plan`, as the
local engine cuts them); each partition is read into its spans, grouped by trace; Dask's task
shuffle (`Bag.groupby(..., shuffle="tasks")`) brings every trace's pieces together, whichever
files and lines they came from, so a trace split across the Collector's rotated files is
analysed whole; the per-trace analysis is the task (`chunks.analyse_trace`, the function the
local engine runs on each trace, with the reports' reducer), and what comes back is what the
report is reduced from: per partition its reading report, per trace its notes, convention and run
summaries (`RunSummary`: mergeable, the fleet metrics are combined from them as locally). The
client then merges them exactly as `chunks.merge` does, so the report is byte-identical to the
local engine's (tests/analyzer_inputs/test_engine_dask.py).

Needs the optional extra `otel-agent-trace[dask]` (dask, distributed). Workers must be able to
read the input paths (a shared file system), as with any Dask file input.
"""

from __future__ import annotations

from typing import Any, Callable

import msgspec

from otel_agent_trace.analyzer import analysis, chunks, inputs as inputs_
from otel_agent_trace.analyzer.results import Reduced
from otel_agent_trace.analyzer.critical_rules import load_rules
from otel_agent_trace.analyzer.settings import AnalyzerSettings
from otel_agent_trace.analyzer.readers.otlp_json import read_batches
from otel_agent_trace.analyzer.spans import InputReport, Span

# a trace's pieces cross the shuffle as msgpack bytes: one C call each way, against pickling every
# span, event and link object (Span's __reduce__) on one worker and building them again on another
_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(list[Span]).decode

PARTITION_BYTES = 64 << 20  # input bytes per partition (a task's reading)


class DaskMissing(RuntimeError):
    """The optional extra is not installed."""


def analyze_reduced(paths: list[str], rules: list | None, reduce: Callable, scheduler: str | None = None,
                    workers: int | None = None, partition_bytes: int = PARTITION_BYTES,
                    settings: AnalyzerSettings | None = None) -> Reduced:
    """The same `Reduced` as `analysis.analyze_reduced` over `paths`, computed on Dask (`settings`:
    None, the environment's, read here once and sent with the tasks)."""
    settings = AnalyzerSettings.from_env() if settings is None else settings
    rules = load_rules(None) if rules is None else rules
    try:
        import dask.bag as db
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise DaskMissing("--engine dask needs the optional extra: pip install 'otel-agent-trace[dask]'") from exc
    files = inputs_.expand(paths)
    out = Reduced()
    plan = chunks.plan(files, max(2, (workers or 1) * 2), partition_bytes) if files else []
    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=workers or 1, threads_per_worker=1, processes=True,
                               dashboard_address=None)
    try:
        with Client(scheduler or cluster) as client:
            read = db.from_sequence(plan, npartitions=max(len(plan), 1)).map(_read_partition, settings)
            reports = read.pluck(0)
            pieces = read.pluck(1).flatten()
            groups = pieces.groupby(_trace_of, shuffle="tasks", npartitions=max(len(plan), 1))
            analysed = groups.map(_analyse_group, rules, reduce, settings)
            got_reports, got_traces = client.compute([reports, analysed], sync=True)
    finally:
        if cluster is not None:
            cluster.close()
    _merge(plan, files, got_reports, got_traces, out)
    out.runs.sort(key=lambda r: r.key)
    analysis.canonical_notes(out.inputs)
    return out


def _trace_of(piece: tuple) -> str:
    return piece[0]


def _read_partition(chunk: chunks.Chunk, settings: AnalyzerSettings) -> tuple[tuple[int, InputReport], list[tuple[str, int, list]]]:
    """(chunk index, its reading report), and one piece per trace it holds: (trace id, chunk index,
    the trace's spans in this chunk, in input order, msgpack-encoded)."""
    report = InputReport(chunk.path)
    traces: dict[str, list] = {}
    with inputs_.no_gc():
        try:
            for batch in read_batches(chunk.path, report, None, chunk.start, chunk.end, {}, settings):
                if not batch:
                    continue
                for trace_id, spans in batch.traces.items():
                    kept = traces.get(trace_id)
                    if kept is None:
                        traces[trace_id] = list(spans)
                    else:
                        kept += spans
        except Exception as exc:  # noqa: BLE001 - one bad input never stops the others
            report.error = inputs_.read_error(exc)
    return (chunk.index, report), [(trace_id, chunk.index, _encode(spans)) for trace_id, spans in traces.items()]


def _analyse_group(group: tuple[str, list[tuple[str, int, list]]], rules: list | None,
                   reduce: Callable, settings: AnalyzerSettings) -> tuple[str, int, Any]:
    """One trace, whole: its pieces in input order, analysed as the local engine does."""
    trace_id, pieces = group
    pieces = sorted(pieces, key=lambda p: p[1])
    spans = [span for piece in pieces for span in _decode(piece[2])]
    with inputs_.no_gc():
        return trace_id, pieces[0][1], chunks.analyse_trace(spans, rules, reduce, settings)


def _merge(plan: list[chunks.Chunk], files: list[str], reports: list[tuple[int, InputReport]],
           traces: list[tuple[str, int, Any]], out: Reduced) -> None:
    """As `chunks.merge`: one report per input (its chunks' in order), then every trace's notes,
    convention and runs, traces in order of first appearance."""
    inputs = [InputReport(path) for path in files]
    out.inputs.extend(inputs)
    by_index = dict(reports)
    for chunk in plan:
        chunks._add_report(inputs[chunk.input], by_index[chunk.index])
    named = {r.path: r for r in inputs}  # notes of the analysis go to the last input of that name
    for _, _, outcome in sorted(traces, key=lambda t: t[1]):
        chunks.add_trace_outcome(outcome, named, out)


