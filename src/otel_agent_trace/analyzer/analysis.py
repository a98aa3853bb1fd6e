"""`analyze(paths)`: read every input, group runs, locate and classify each failure.

Reading is streaming: spans are grouped by trace in a `TraceStore` that spills to a temporary
SQLite file when the JSON read exceeds a memory budget, then traces are analysed one at a time
(`iter_findings`, a generator whose memory is bounded by the budget plus the largest trace).
Each trace is checked (duplicate span ids, parent cycles, orphans, dependency cycles: reported
with file, line and reason) and normalized from foreign conventions (see `normalize/`) before
runs are grouped. `analyze()` collects the findings into an `Analysis`, as before.

`analyze_reduced()` is the CLI's path: each finding is reduced, as it is produced, to what the
reports need (`RunSummary`: the JSON report's run entry, the run's metrics inputs and, for
`--format html`, the run's rendered section) and the finding with its spans is dropped, so memory
is bounded by the budget plus the largest trace (plus the small summaries), not by the file.
"""

from __future__ import annotations

import gc
import glob
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from otel_agent_trace.analyzer.classify import classify
from otel_agent_trace.analyzer.locate import Finding, locate
from otel_agent_trace.analyzer.normalize import normalize_trace
from otel_agent_trace.analyzer.readers.otlp_json import read_file
from otel_agent_trace.analyzer.readers.sources import UnreadableInput
from otel_agent_trace.analyzer.readers.spill import DEFAULT_BUDGET_BYTES, TraceStore
from otel_agent_trace.analyzer.runs import group_runs
from otel_agent_trace.analyzer.spans import InputReport, Span
from otel_agent_trace.model import DEPENDS_ON


class _InputsRead:
    """How reading the inputs went (what the exit code says)."""

    inputs: list[InputReport]

    @property
    def unreadable(self) -> bool:
        return any(i.error for i in self.inputs)

    @property
    def bad_lines(self) -> int:
        return sum(len(i.bad_lines) for i in self.inputs)


@dataclass
class Analysis(_InputsRead):
    inputs: list[InputReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    normalized: dict[str, int] = field(default_factory=dict)  # convention -> traces rewritten


@dataclass(slots=True)
class RunSummary:
    """One run reduced to what the reports need (see `report/json_report.summarize`)."""

    key: tuple[int, str, str]  # (run start, trace id, run span id): the report's order
    data: dict[str, Any]  # the JSON report's `runs[]` entry
    metrics: Any  # metrics.RunMetrics
    html: str | None = None  # the run's section of the HTML report, when asked for


@dataclass
class Reduced(_InputsRead):
    """`Analysis` without findings: what `analyze_reduced` keeps (inputs, normalized, summaries)."""

    inputs: list[InputReport] = field(default_factory=list)
    runs: list[RunSummary] = field(default_factory=list)
    normalized: dict[str, int] = field(default_factory=dict)



def read_error(exc: Exception) -> str:
    """Why a whole input could not be read, for `inputs[].error`."""
    if isinstance(exc, UnreadableInput):
        return f"cannot read: {exc}"
    if isinstance(exc, OSError):
        return f"cannot read: {exc.strerror or exc}"
    return f"cannot read: {type(exc).__name__}: {exc}"

@dataclass
class Remote:
    """A fetch over HTTP: `jaeger` (url, service, lookback) or `tempo` (url, traceql, lookback)."""

    kind: str
    url: str
    service: str | None = None
    traceql: str | None = None
    lookback: str | None = None
    limit: int = 100


def expand(paths: Iterable[str]) -> list[str]:
    """Files named, files of directories named (sorted, recursively), and glob patterns."""
    out: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            for folder, dirs, files in os.walk(path):
                dirs.sort()
                out.extend(os.path.join(folder, n) for n in sorted(files) if not n.startswith("."))
        elif any(c in path for c in "*?[") and not os.path.exists(path):
            out.extend(sorted(p for p in glob.glob(path, recursive=True) if os.path.isfile(p)) or [path])
        else:
            out.append(path)
    return out


class Progress:
    """A one-line progress bar on stderr, shown only on a terminal and after `delay` seconds."""

    def __init__(self, total: int, stream=None, delay: float = 2.0, enabled: bool | None = None):
        self.stream = stream or sys.stderr
        self.total = max(total, 1)
        self.done = 0
        self.base = 0
        self.start = time.monotonic()
        self.delay = delay
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.shown = False
        self.label = ""

    def file(self, label: str, base: int) -> Callable[[int], None]:
        self.label, self.base = label, base
        return self.update

    def update(self, position: int) -> None:
        self.done = self.base + position
        elapsed = time.monotonic() - self.start
        if not self.enabled or elapsed < self.delay:
            return
        self.shown = True
        share = min(self.done / self.total, 1.0)
        bar = "#" * int(share * 30)
        rate = self.done / elapsed / 1e6
        self.stream.write(f"\r[{bar:<30}] {share:6.1%} {self.done / 1e6:,.0f}/{self.total / 1e6:,.0f} MB "
                          f"{rate:,.0f} MB/s {os.path.basename(self.label)[:30]:<30}")
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * 110 + "\r")
            self.stream.flush()


def read_into(store: TraceStore, inputs: list[InputReport], paths: Iterable[str], remotes: Iterable[Remote] = (),
              progress: Progress | None = None, consume: Callable | None = None) -> None:
    """Read every input into `store`, one InputReport per input appended to `inputs`.

    `consume(store, report, spans)`: how spans reach the store (default `_consume`: all of them)."""
    consume = _consume if consume is None else consume
    files = expand(paths)
    if progress is None:
        progress = Progress(sum(_size(p) for p in files))
    base = 0
    enabled = gc.isenabled()
    gc.disable()  # spans hold no cycles; the collector only slows allocation-heavy reading
    try:
        for path in files:
            report = InputReport(path)
            inputs.append(report)
            consume(store, report, lambda: read_file(path, report, progress.file(path, base)))
            base += _size(path)
        for remote in remotes:
            report = InputReport(remote.url)
            inputs.append(report)
            consume(store, report, lambda: _fetch(remote, report))
    finally:
        progress.close()
        if enabled:
            gc.enable()


def _fetch(remote: Remote, report: InputReport) -> Iterator[Span]:
    from otel_agent_trace.analyzer.readers.remote import fetch_jaeger, fetch_tempo

    if remote.kind == "jaeger":
        return fetch_jaeger(remote.url, remote.service or "", remote.lookback or "1h", remote.limit, report)
    return fetch_tempo(remote.url, remote.traceql or "{}", remote.limit, remote.lookback, report)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _consume(store: TraceStore, report: InputReport, spans: Callable[[], Iterator[Span]]) -> None:
    add = store.add
    last = 0
    step = max(1, min(store.budget // 8, 1 << 20))  # how often the budget is checked, in bytes read
    try:
        for span in spans():
            add(span)
            if report.bytes_read - last > step:
                store.account(report.bytes_read - last)
                last = report.bytes_read
        store.account(report.bytes_read - last)
    except Exception as exc:  # noqa: BLE001 - one bad input never stops the others
        report.error = read_error(exc)


def check_trace(spans: list[Span], reports: dict[str, InputReport]) -> list[Span]:
    """Drop duplicate span ids and break parent cycles; report those, orphans and dependency cycles."""
    def note(span: Span, reason: str, bad: bool) -> None:
        path, line = span.source or ("", 0)
        report = reports.get(path)
        if report is not None:
            (report.bad if bad else report.warn)(line, reason)

    by_id: dict[str, Span] = {}
    for span in spans:
        first = by_id.get(span.span_id)
        if first is None:
            by_id[span.span_id] = span
        elif first is not span:
            where = f"{first.source[0]}:{first.source[1]}" if first.source else "?"
            note(span, f"duplicate span id {span.span_id} in trace {span.trace_id} (first at {where}); dropped", True)
    for span in by_id.values():
        if span.parent_id == span.span_id:
            note(span, f"span {span.span_id} is its own parent; read as a root", False)
            span.parent_id = None
        elif span.parent_id and span.parent_id not in by_id:
            note(span, f"orphan span {span.span_id}: parent {span.parent_id} not in trace {span.trace_id}", False)
    rooted: set[str] = set()  # spans whose ancestors are known to end at a root (walked already)
    for span in by_id.values():  # parent cycles: walk up, break at the span that closes the loop
        if span.span_id in rooted:
            continue
        seen = {span.span_id}
        node = span
        while node.parent_id and node.parent_id in by_id and node.parent_id not in rooted:
            if node.parent_id in seen:
                note(node, f"parent cycle through span {node.span_id} in trace {node.trace_id}; read as a root", False)
                node.parent_id = None
                break
            seen.add(node.parent_id)
            node = by_id[node.parent_id]
        rooted |= seen
    _dependency_cycles(by_id, note)
    return list(by_id.values())


def _dependency_cycles(by_id: dict[str, Span], note: Callable[[Span, str, bool], None]) -> None:
    edges = {}
    backwards = True  # every edge goes to a span that started earlier: no cycle, no search needed
    for span in by_id.values():
        targets = span.attributes.get(DEPENDS_ON)
        if isinstance(targets, list):
            out = edges[span.span_id] = [t for t in targets if isinstance(t, str) and t in by_id]
        elif span.links:
            out = edges[span.span_id] = [k.span_id for k in span.links if k.span_id in by_id]
        else:
            continue
        if backwards:
            start = span.start_ns
            for target in out:
                other = by_id[target].start_ns
                if other > start or (other == start and target >= span.span_id):
                    backwards = False
                    break
    if not edges or backwards:
        return
    state: dict[str, int] = {}
    for start in edges:
        if start in state:
            continue
        stack = [(start, iter(edges.get(start, ())))]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            for child in children:
                if state.get(child) == 1:
                    note(by_id[node], f"dependency cycle: span {node} depends on {child}, which depends back on it", False)
                elif child not in state:
                    state[child] = 1
                    stack.append((child, iter(edges.get(child, ()))))
                    break
            else:
                state[node] = 2
                stack.pop()


def trace_findings(spans: list[Span], reports: dict[str, Any], normalized: dict[str, int] | None,
                   rules: list | None) -> Iterator[Finding]:
    """One trace's findings: checked (notes to `reports`), normalized (counted), runs located."""
    spans = check_trace(spans, reports)
    convention = normalize_trace(spans)
    if convention and normalized is not None:
        normalized[convention] = normalized.get(convention, 0) + 1
    for run in group_runs(spans):
        finding = locate(run, rules)
        classify(finding)
        yield finding


def iter_findings(paths: Iterable[str] = (), remotes: Iterable[Remote] = (), inputs: list[InputReport] | None = None,
                  budget_bytes: int = DEFAULT_BUDGET_BYTES, normalized: dict[str, int] | None = None,
                  progress: Progress | None = None, rules: list | None = None) -> Iterator[Finding]:
    """Findings trace by trace (memory: the budget plus the largest trace); fills `inputs`.

    `rules`: critical-failure rules (None: the built-ins)."""
    inputs = [] if inputs is None else inputs
    with TraceStore(budget_bytes) as store:
        read_into(store, inputs, paths, remotes, progress)
        reports = {r.path: r for r in inputs}
        enabled = gc.isenabled()
        gc.disable()  # runs hold no cycles; collections would rescan every span still held
        try:
            for spans in store.traces():
                yield from trace_findings(spans, reports, normalized, rules)
        finally:
            if enabled:
                gc.enable()


def analyze(paths: list[str], remotes: Iterable[Remote] = (), budget_bytes: int = DEFAULT_BUDGET_BYTES,
            progress: Progress | None = None) -> Analysis:
    analysis = Analysis()
    findings = list(iter_findings(paths, remotes, analysis.inputs, budget_bytes, analysis.normalized, progress))
    findings.sort(key=lambda f: (f.run.root.start_ns, f.run.trace_id, f.run.root.span_id))
    analysis.findings = findings
    return analysis


def analyze_reduced(paths: list[str], remotes: Iterable[Remote] = (), budget_bytes: int = DEFAULT_BUDGET_BYTES,
                    progress: Progress | None = None, rules: list | None = None, html: bool = False) -> Reduced:
    """The streaming analysis: every finding reduced as it comes (`report.json_report.summarize`).

    A trace is analysed as soon as it is complete in the input (see `_Streaming`), so memory is
    bounded by the open traces (with the budget's spills) rather than by the budget; the result is
    the same as analysing every trace after reading, which is what happens when an input cannot
    be read twice (remote sources, pipes)."""
    from otel_agent_trace.analyzer.report.json_report import summarize

    out = Reduced()
    files = expand(paths)
    remotes = list(remotes)
    enabled = gc.isenabled()
    with TraceStore(budget_bytes) as store:
        stream = _Streaming(store, rules, lambda f: summarize(f, html),
                            early=not remotes and all(os.path.isfile(p) or not os.path.exists(p) for p in files))
        read_into(store, out.inputs, files, remotes, progress, stream.consume)
        gc.disable()  # runs hold no cycles; collections would rescan every span still held
        try:
            stream.finish(files, out)
            out.runs.sort(key=lambda r: r.key)  # before the collector is back (it would scan every summary)
        finally:
            if enabled:
                gc.enable()
    return out


class _AnalysisFailed(Exception):
    """Carries an exception of the analysis out of the reading loop (which reports read errors)."""


class _Notes:
    """Stands in for an input's InputReport while a trace is checked: its notes are kept with the
    trace and applied to the real reports at the end, in the order the batch analysis would."""

    __slots__ = ("path", "sink")

    def __init__(self, path: str):
        self.path = path
        self.sink: list[tuple[str, bool, int, str]] = []

    def bad(self, line: int, reason: str) -> None:
        self.sink.append((self.path, True, line, reason))

    def warn(self, line: int, reason: str) -> None:
        self.sink.append((self.path, False, line, reason))


class _Streaming:
    """Analyse each trace as soon as it is complete in the input; the same result as batch.

    Rule: after each input record (line or frame), a trace touched by it is analysed when it has a
    local root (a span without parent), every parent its spans name is among them, and none of its
    spans went to the spill file. Our exporter and the Collector export a span when it ends, and
    a root ends after its children, so a trace is usually complete when its root arrives.
    Late spans are never lost: a span of a trace already analysed *reopens* it: its early result
    is discarded, its later spans are not kept, and after reading every file is read once more
    for the reopened traces only, which are then analysed whole. So the result never depends on
    the order of the input (at worst one more pass over the files). Only plain files are read
    early (`early=False`: remote sources or pipes, which cannot be read twice, are analysed after
    reading, as before). Reports are byte-for-byte the batch ones: notes and normalization counts
    are applied at the end in the batch order (traces in order of first appearance, then spilled
    traces by id), and runs are sorted as before.
    """

    def __init__(self, store: TraceStore, rules: list | None, reduce: Callable[[Finding], Any], early: bool):
        self.store = store
        self.rules = rules
        self.reduce = reduce
        self.early = early
        self.first_seen: dict[str, int] = {}  # trace id -> ordinal of first appearance
        self.window: set[str] = set()  # traces with spans read since the last spill
        self.spilled_like: set[str] = set()  # traces a batch analysis would have taken from the spill file
        self.done: dict[str, tuple[list, str | None, list]] = {}  # early traces: (notes, convention, summaries)
        self.reopened: set[str] = set()
        self.rooted: set[str] = set()
        self.recorders: dict[str, _Notes] = {}
        self.pending = 0  # JSON bytes read since the last spill

    def consume(self, store: TraceStore, report: InputReport, spans: Callable[[], Iterator[Span]]) -> None:
        add = store.add
        done, reopened, rooted, window = self.done, self.reopened, self.rooted, self.window
        first_seen = self.first_seen
        last = 0
        step = max(1, min(store.budget // 8, 1 << 20))
        source: Any = None
        touched: set[str] = set()
        try:
            for span in spans():
                trace_id = span.trace_id
                if span.source != source:
                    if touched:
                        self._ready(touched)
                        touched = set()
                    source = span.source
                if trace_id not in first_seen:
                    first_seen[trace_id] = len(first_seen)
                window.add(trace_id)
                if trace_id in done or trace_id in reopened:
                    if trace_id in done:
                        del done[trace_id]
                        reopened.add(trace_id)
                else:
                    add(span)
                    if not span.parent_id:
                        rooted.add(trace_id)
                    touched.add(trace_id)
                if report.bytes_read - last > step:
                    self._account(report.bytes_read - last)
                    last = report.bytes_read
            if touched:
                self._ready(touched)
            self._account(report.bytes_read - last)
        except _AnalysisFailed as exc:
            raise exc.__cause__ from None  # type: ignore[misc]
        except Exception as exc:  # noqa: BLE001 - one bad input never stops the others
            report.error = read_error(exc)

    def _account(self, nbytes: int) -> None:
        """`TraceStore.account`, as the batch analysis would spill: the JSON read since the last
        spill is over the budget and some trace was read meanwhile (whether still open or not)."""
        self.pending += nbytes
        if self.pending > self.store.budget and self.window:
            if self.store.memory:
                self.store.spill()  # only the open traces: the others are analysed already
            self.pending = 0
            self.spilled_like |= self.window
            self.window.clear()  # (the same set object: `consume` holds it)

    def _ready(self, touched: set[str]) -> None:
        if not self.early:
            return
        memory = self.store.memory
        spilled = self.store.spilled_traces
        for trace_id in touched:
            if trace_id not in self.rooted or trace_id in spilled:
                continue
            spans = memory[trace_id]
            ids = {s.span_id for s in spans}
            if all(not s.parent_id or s.parent_id in ids for s in spans):
                del memory[trace_id]
                try:
                    self.done[trace_id] = self._analyse(spans)
                except Exception as exc:  # an analysis bug is no unreadable input: let it out
                    raise _AnalysisFailed() from exc

    def _analyse(self, spans: list[Span]) -> tuple[list, str | None, list]:
        notes: list[tuple[str, bool, int, str]] = []
        recorders = self.recorders
        for span in spans:
            path = span.source[0] if span.source else ""
            if path not in recorders:
                recorders[path] = _Notes(path)
        for recorder in recorders.values():
            recorder.sink = notes
        counted: dict[str, int] = {}
        summaries = [self.reduce(f) for f in trace_findings(spans, recorders, counted, self.rules)]
        return notes, next(iter(counted), None), summaries

    def finish(self, files: list[str], out: Reduced) -> None:
        """Analyse what is left (open, spilled and reopened traces) and apply everything in order."""
        results = self.done
        for spans in self.store.traces():
            results[spans[0].trace_id] = self._analyse(spans)
        if self.reopened:
            again: dict[str, list[Span]] = {}
            for path in files:
                for span in read_file(path, InputReport(path)):
                    if span.trace_id in self.reopened:
                        again.setdefault(span.trace_id, []).append(span)
            for trace_id, spans in again.items():
                results[trace_id] = self._analyse(spans)
        spilled, first_seen = self.spilled_like, self.first_seen
        order = sorted(results, key=lambda t: (1, t, 0) if t in spilled else (0, "", first_seen[t]))
        reports = {r.path: r for r in out.inputs}
        for trace_id in order:
            notes, convention, summaries = results.pop(trace_id)
            for path, bad, line, reason in notes:
                report = reports.get(path)
                if report is not None:
                    (report.bad if bad else report.warn)(line, reason)
            if convention:
                out.normalized[convention] = out.normalized.get(convention, 0) + 1
            out.runs.extend(summaries)
