"""The streaming analysis of files, in chunks: the CLI's path (`analysis.analyze_reduced`).

Every plain input is split at line boundaries into chunks (compressed inputs and single
documents are one chunk each). A chunk is read and analysed on its own, in a worker process when
there is more than one core and enough input (`jobs`), trace by trace as soon as a trace is
complete in it (`_ChunkStream`), each finding reduced at once (a `RunSummary`) and its spans freed.
The chunk returns, per trace it touched, the reduced result and where (line, byte offset) its
spans were. `merge` then keeps the result of every trace seen by one chunk only, and analyses
again, from exactly the records that hold its spans, every trace that several chunks saw (a trace
split across a chunk boundary or across rotated files). So the report never depends on how the
input was cut: it is the report of one pass over everything, whatever `jobs` is (tested).

Early analysis inside a chunk: after each record (line or frame), a trace touched by it is
analysed when it has a local root, every parent its spans name is among them, and none of its
spans went to the spill file. Our exporter and the Collector export a span when it ends and a
root ends after its children, so a trace is usually complete when its root arrives. A later span
of a trace already analysed *reopens* it: at the chunk's end it is analysed again from its
records. Memory per process is bounded by the traces still open (and the spill budget).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from otel_agent_trace.analyzer.inputs import Progress, file_size, no_gc, read_error
from otel_agent_trace.analyzer.readers.otlp_json import (Record, is_document, native_reader, read_batches, read_file,
                                                         read_record, splittable)
from otel_agent_trace.analyzer.readers.sources import records
from otel_agent_trace.analyzer.readers.spill import TraceStore
from otel_agent_trace.analyzer.results import Reduced
from otel_agent_trace.analyzer.settings import AnalyzerSettings
from otel_agent_trace.analyzer.spans import InputReport, Span
from otel_agent_trace.analyzer.trace import trace_findings

MIN_CHUNK_BYTES = 32 << 20  # smaller inputs are not split (a worker costs more than it saves)

# (notes, convention, summaries) of one trace: notes are (path, bad, line, reason) to apply later
TraceResult = tuple[list, "str | None", list]


@dataclass(frozen=True)
class Chunk:
    index: int
    input: int  # which input (a file named twice is two inputs)
    path: str
    start: int = 0
    end: int | None = None  # None: to the end of the input


@dataclass
class ChunkResult:
    index: int
    report: InputReport  # what reading this chunk found (bad lines, warnings, counts, error)
    traces: dict[str, TraceResult] = field(default_factory=dict)  # in order of first appearance
    locations: dict[str, list[int]] = field(default_factory=dict)  # trace -> lines (records) holding its spans
    offsets: dict[int, int] = field(default_factory=dict)  # line -> byte offset (plain files only)


def plan(files: list[str], jobs: int, min_chunk: int = MIN_CHUNK_BYTES) -> list[Chunk]:
    """Chunks of the inputs: about two per job over the splittable bytes (whoever is done first takes
    the next: no one idles while another finishes a long chunk), none under `min_chunk`."""
    sizes = {path: file_size(path) for path in files}
    cuttable = {p for p in files if jobs > 1 and sizes[p] >= 2 * min_chunk and splittable(p)}
    target = max(min_chunk, -(-sum(sizes[p] for p in cuttable) // max(2 * jobs, 1)))
    chunks: list[Chunk] = []
    for number, path in enumerate(files):
        if path not in cuttable:
            chunks.append(Chunk(len(chunks), number, path))
            continue
        cuts = [0] + _line_starts(path, [target * k for k in range(1, -(-sizes[path] // target))]) + [sizes[path]]
        cuts = sorted(set(cuts))
        for start, end in zip(cuts, cuts[1:]):
            chunks.append(Chunk(len(chunks), number, path, start, end))
    return chunks


def _line_starts(path: str, positions: list[int]) -> list[int]:
    """The start of the first line at or after each position."""
    out = []
    with open(path, "rb") as handle:
        for position in positions:
            handle.seek(position - 1)
            handle.readline()  # the rest of the line that holds byte position-1
            out.append(handle.tell())
    return out


def analyse_chunk(chunk: Chunk, rules: list | None, reduce: Callable, budget: int, settings: AnalyzerSettings,
                  progress: Callable[[int], None] | None = None) -> ChunkResult:
    """Read and analyse one chunk (in this process; `run_chunks` puts it in a worker)."""
    report = InputReport(chunk.path)
    result = ChunkResult(chunk.index, report)
    with no_gc(), TraceStore(budget) as store:
        stream = _ChunkStream(store, rules, reduce, settings, result)
        stream.consume(report, read_batches(chunk.path, report, progress, chunk.start, chunk.end, result.offsets,
                                            settings))
        stream.finish(chunk.path)
    return result


class _ChunkStream:
    """One chunk's traces, each analysed as soon as it is complete (see the module's docstring)."""

    def __init__(self, store: TraceStore, rules: list | None, reduce: Callable, settings: AnalyzerSettings,
                 result: ChunkResult):
        self.store = store
        self.rules = rules
        self.reduce = reduce
        self.settings = settings
        self.result = result
        self.done: dict[str, TraceResult] = {}
        self.reopened: set[str] = set()
        self.rooted: set[str] = set()

    def consume(self, report: InputReport, batches: Iterator[Record]) -> None:
        store = self.store
        memory = store.memory  # (a new dict after each spill: taken again after `account`)
        done, reopened, rooted = self.done, self.reopened, self.rooted
        locations = self.result.locations
        last = 0
        step = max(1, min(store.budget // 8, 1 << 20))  # how often the budget is checked, in bytes read
        try:
            for batch in batches:  # one record's spans, grouped by trace: the work here is per trace
                if not batch:
                    continue
                line = batch.line
                touched: dict[str, list[Span]] = {}  # this record's traces kept in memory -> all their spans
                for trace_id, spans in batch.traces.items():
                    lines = locations.get(trace_id)
                    if lines is None:
                        locations[trace_id] = [line]
                    elif lines[-1] != line:
                        lines.append(line)
                    if trace_id in done or trace_id in reopened:
                        if trace_id in done:
                            del done[trace_id]
                            reopened.add(trace_id)
                        continue
                    kept = memory.get(trace_id)
                    if kept is None:
                        memory[trace_id] = touched[trace_id] = spans
                    else:
                        kept += spans
                        touched[trace_id] = kept
                rooted.update(batch.rooted)
                if touched:
                    self._ready(touched)
                if report.bytes_read - last > step:
                    store.account(report.bytes_read - last)
                    memory = store.memory
                    last = report.bytes_read
            store.account(report.bytes_read - last)
        except _AnalysisFailed as exc:
            raise exc.__cause__ from None  # type: ignore[misc]
        except Exception as exc:  # noqa: BLE001 - one bad input never stops the others
            report.error = read_error(exc)

    def _ready(self, touched: dict[str, list[Span]]) -> None:
        memory = self.store.memory
        spilled = self.store.spilled_traces
        rooted = self.rooted
        for trace_id, spans in touched.items():
            if trace_id not in rooted or trace_id in spilled:
                continue
            ids = {s.span_id for s in spans}
            ids.update(_NO_PARENT)
            if ids.issuperset([s.parent_id for s in spans]):  # every parent named is here
                del memory[trace_id]
                try:
                    self.done[trace_id] = analyse_trace(spans, self.rules, self.reduce, self.settings)
                except Exception as exc:  # an analysis bug is no unreadable input: let it out
                    raise _AnalysisFailed() from exc

    def finish(self, path: str) -> None:
        """Analyse what is left (open, spilled and reopened traces); results in order of first appearance."""
        done = self.done
        for spans in self.store.traces():
            done[spans[0].trace_id] = analyse_trace(spans, self.rules, self.reduce, self.settings)
        if self.reopened:
            wanted = {t: self.result.locations[t] for t in self.reopened}
            for spans in reread([(path, wanted, self.result.offsets)], self.settings):
                done[spans[0].trace_id] = analyse_trace(spans, self.rules, self.reduce, self.settings)
        self.result.traces = {t: done[t] for t in self.result.locations if t in done}


_NO_PARENT = (None, "")  # parent ids of roots


class _AnalysisFailed(Exception):
    """Carries an exception of the analysis out of the reading loop (which reports read errors)."""


class _Notes:
    """Stands in for an input's InputReport while a trace is checked: its notes are kept with the
    trace's result and applied to the real reports by `merge`, in a canonical order."""

    __slots__ = ("path", "sink")

    def __init__(self, path: str, sink: list):
        self.path = path
        self.sink = sink

    def bad(self, line: int, reason: str) -> None:
        self.sink.append((self.path, True, line, reason))

    def warn(self, line: int, reason: str) -> None:
        self.sink.append((self.path, False, line, reason))


class _Recorders(dict):
    """path -> its `_Notes`, made when a note for the path is first taken (`check_trace` asks
    `reports.get(path)` only for a span's own path, and only to note something)."""

    __slots__ = ("notes",)

    def __init__(self, notes: list):
        super().__init__()
        self.notes = notes

    def get(self, path: str, default: Any = None) -> _Notes:
        recorder = dict.get(self, path)
        if recorder is None:
            recorder = self[path] = _Notes(path, self.notes)
        return recorder


def analyse_trace(spans: list[Span], rules: list | None, reduce: Callable, settings: AnalyzerSettings) -> TraceResult:
    notes: list[tuple[str, bool, int, str]] = []
    recorders = _Recorders(notes)
    counted: dict[str, int] = {}
    summaries = [reduce(f) for f in trace_findings(spans, recorders, counted, rules, settings)]
    return notes, next(iter(counted), None), summaries


def reread(wanted: Iterable[tuple[str, dict[str, list[int]], dict[int, int]]],
           settings: AnalyzerSettings) -> Iterator[list[Span]]:
    """The spans of the wanted traces, read again from exactly the records that hold them.

    `wanted`: (path, {trace: [line]}, {line: byte offset}) per chunk in input order; yields each
    trace's spans in input order, after all are read (they are few: traces split across chunks)."""
    spans: dict[str, list[Span]] = {}
    native = native_reader(settings.native)
    for path, traces, offsets in wanted:
        if not traces:
            continue
        if is_document(path):  # one record read whole: read it whole again
            for span in read_file(path, InputReport(path), settings=settings):
                if span.trace_id in traces:
                    spans.setdefault(span.trace_id, []).append(span)
            continue
        lines: dict[int, int] = {}
        for numbers in traces.values():
            for line in numbers:
                lines[line] = offsets.get(line, -1)
        for line, raw in _records_at(path, lines):
            for span in read_record(raw, line, path, InputReport(path), native):
                if span.trace_id in traces:
                    spans.setdefault(span.trace_id, []).append(span)
    yield from spans.values()


def _records_at(path: str, lines: dict[int, int]) -> Iterator[tuple[int, bytes]]:
    """The records with these numbers (line -> byte offset; -1: not seekable, read through)."""
    if lines and all(offset >= 0 for offset in lines.values()):
        with open(path, "rb") as handle:
            for line in sorted(lines):
                handle.seek(lines[line])
                yield line, handle.readline()
        return
    for number, raw in records(path):
        if number in lines:
            yield number, raw


def run_chunks(chunks: list[Chunk], jobs: int, rules: list | None, reduce: Callable, budget: int,
               progress: Progress, settings: AnalyzerSettings) -> list[ChunkResult]:
    """Every chunk's result, in chunk order: in this process, or in `jobs` worker processes."""
    if jobs <= 1 or len(chunks) <= 1 or not _can_fork():
        out = []
        base = 0
        try:
            for chunk in chunks:
                out.append(analyse_chunk(chunk, rules, reduce, budget, settings,
                                         progress.file(chunk.path, base - chunk.start)))
                base += (chunk.end if chunk.end is not None else file_size(chunk.path)) - chunk.start
        finally:
            progress.close()
        return out
    return _run_parallel(chunks, jobs, rules, reduce, max(budget // jobs, 1 << 20), progress, settings)


def _run_parallel(chunks: list[Chunk], jobs: int, rules: list | None, reduce: Callable, budget: int,
                  progress: Progress, settings: AnalyzerSettings) -> list[ChunkResult]:
    """`jobs - 1` forked workers and this process take chunks in order until none is left.

    Forked, so the rules, the reducer, the settings and anything patched are the parent's, and
    only results (small summaries) are pickled. A worker that dies is an error, never a silently missing chunk."""
    import multiprocessing
    import queue

    context = multiprocessing.get_context("fork")
    taken = context.Value("i", 0)  # the next chunk to take
    read = context.Value("q", 0, lock=False)  # bytes read by everyone, for the progress bar
    results = context.Queue()

    def take() -> int:
        with taken.get_lock():
            index = taken.value
            taken.value += 1
        return index

    def analyse(index: int, shown: bool = False) -> ChunkResult:
        chunk = chunks[index]
        seen = [chunk.start]
        if shown:
            progress.file(chunk.path, 0)  # the label: the input this process is reading

        def advance(position: int) -> None:
            read.value += position - seen[0]
            seen[0] = position
            if shown:  # this process draws the bar for everyone
                progress.update(read.value)

        return analyse_chunk(chunk, rules, reduce, budget, settings, advance)

    def work() -> None:
        index = take()
        while index < len(chunks):
            try:
                results.put((index, analyse(index), None))
            except BaseException as exc:  # noqa: BLE001 - the parent raises it
                results.put((index, None, _portable(exc)))
                return
            index = take()

    workers = [context.Process(target=work, daemon=True) for _ in range(min(jobs, len(chunks)) - 1)]
    for worker in workers:
        worker.start()
    out: dict[int, ChunkResult] = {}
    try:
        index = take()
        while index < len(chunks):
            out[index] = analyse(index, shown=True)
            index = take()
        while len(out) < len(chunks):
            try:
                index, result, error = results.get(timeout=0.25)
            except queue.Empty:
                progress.update(read.value)
                if any(w.exitcode not in (None, 0) for w in workers):
                    raise RuntimeError("an analysis worker process died") from None
                continue
            if error is not None:
                raise error
            out[index] = result
        progress.update(read.value)
    except BaseException:
        for worker in workers:  # (one may be blocked writing a result nobody will read)
            worker.terminate()
        raise
    finally:
        progress.close()
        for worker in workers:
            worker.join(timeout=5)
            if worker.is_alive():
                worker.terminate()
    return [out[i] for i in range(len(chunks))]


def _can_fork() -> bool:
    """Workers are forked (they inherit the rules, the reducer and the reader); where a process
    cannot fork (Windows), the chunks are analysed in this process, with the same result."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def _portable(exc: BaseException) -> BaseException:
    """The exception itself when it survives pickling, else a RuntimeError that says what it was."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def merge(chunks: list[Chunk], results: list[ChunkResult], files: list[str], rules: list | None,
          reduce: Callable, out: Reduced, settings: AnalyzerSettings) -> None:
    """Chunk results into `out`: one report per input, every trace analysed whole exactly once."""
    inputs = [InputReport(path) for path in files]
    out.inputs.extend(inputs)
    reports = {r.path: r for r in inputs}  # notes of the analysis go to the last input of that name
    seen_in: dict[str, int] = {}  # trace -> chunks that saw it
    for result, chunk in zip(results, chunks):
        _add_report(inputs[chunk.input], result.report)
        for trace_id in result.locations:
            seen_in[trace_id] = seen_in.get(trace_id, 0) + 1
    split = {t for t, n in seen_in.items() if n > 1}
    final: dict[str, TraceResult] = {}
    if split:
        wanted = [(r.report.path, {t: r.locations[t] for t in split.intersection(r.locations)}, r.offsets)
                  for r in results]
        for spans in reread(wanted, settings):
            final[spans[0].trace_id] = analyse_trace(spans, rules, reduce, settings)
    applied: set[str] = set()
    for result in results:  # traces in order of first appearance in the input
        for trace_id in result.locations:
            if trace_id in applied:
                continue
            applied.add(trace_id)
            outcome = final.pop(trace_id, None) if trace_id in split else result.traces.get(trace_id)
            if outcome is not None:
                add_trace_outcome(outcome, reports, out)


def add_trace_outcome(outcome: Any, reports: dict[str, InputReport], out: Reduced) -> None:
    """One analysed trace into the reduced report: its notes to the input they name (by path), its
    convention counted, its runs appended. The local and the Dask engines merge alike."""
    notes, convention, summaries = outcome
    for path, bad, line, reason in notes:
        report = reports.get(path)
        if report is not None:
            (report.bad if bad else report.warn)(line, reason)
    if convention:
        out.normalized[convention] = out.normalized.get(convention, 0) + 1
    out.runs.extend(summaries)


def _add_report(into: InputReport, part: InputReport) -> None:
    into.spans += part.spans
    into.bytes_read += part.bytes_read
    into.bad_lines.extend(part.bad_lines)
    into.warnings.extend(part.warnings)
    if part.error and not into.error:
        into.error = part.error
