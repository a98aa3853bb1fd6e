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

import functools
import gc
import glob
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Callable, Iterable, Iterator

from otel_agent_trace.analyzer import delegation, lifecycle, runs
from otel_agent_trace.analyzer.classify import classify
from otel_agent_trace.analyzer.locate import Finding, locate
from otel_agent_trace.analyzer.normalize import normalize_trace
from otel_agent_trace.analyzer.readers.otlp_json import read_file
from otel_agent_trace.analyzer.readers.sources import UnreadableInput
from otel_agent_trace.analyzer.readers.spill import DEFAULT_BUDGET_BYTES, TraceStore
from otel_agent_trace.analyzer.runs import NAMED_RUN, Run, trace_runs
from otel_agent_trace.analyzer.spans import InputReport, Span
from otel_agent_trace.model import DEPENDS_ON, GEN_AI_OPERATION_NAME, OP_INVOKE_AGENT


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
    """One run reduced to what the reports need (see `report/reduce.summarize`)."""

    key: tuple[int, str, str]  # (run start, trace id, run span id): the report's order
    data: dict[str, Any] | None  # the JSON report's `runs[]` entry (None when `entry` holds it)
    metrics: Any  # metrics.RunMetrics
    html: str | None = None  # the run's section of the HTML report, when asked for
    # `data` already encoded as the JSON report writes it, when that report is all that is asked
    # for (`report/json_report.encode_entry`): encoded in the process that found the run, so the
    # parent neither unpickles the entry nor encodes it again
    entry: bytes | None = None

    def __reduce__(self) -> tuple:
        """Pickled as its fields (worker processes send every summary to the parent): a third
        less time than the default of a slots class, which pickles a dict of its slots."""
        return RunSummary, (self.key, self.data, self.metrics, self.html, self.entry)


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
        progress = Progress(sum(file_size(p) for p in files))
    base = 0
    try:
        with no_gc():
            for path in files:
                report = InputReport(path)
                inputs.append(report)
                consume(store, report, lambda: read_file(path, report, progress.file(path, base)))
                base += file_size(path)
            for remote in remotes:
                report = InputReport(remote.url)
                inputs.append(report)
                consume(store, report, lambda: _fetch(remote, report))
    finally:
        progress.close()


@contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic collector off while spans and runs are built: they hold no cycles, and each
    collection would rescan every object still held (a full one, ~0.1 s, whenever it is turned
    back on between chunks). Nested uses keep it off; the state before is restored."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _fetch(remote: Remote, report: InputReport) -> Iterator[Span]:
    from otel_agent_trace.analyzer.readers.remote import fetch_jaeger, fetch_tempo

    if remote.kind == "jaeger":
        return fetch_jaeger(remote.url, remote.service or "", remote.lookback or "1h", remote.limit, report)
    return fetch_tempo(remote.url, remote.traceql or "{}", remote.limit, remote.lookback, report)


def file_size(path: str) -> int:
    """Bytes of a file, 0 when it cannot be read (the reading reports why)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _consume(store: TraceStore, report: InputReport, spans: Callable[[], Iterator[Span]],
             trace_prefix: str | None = None) -> None:
    """Every span into `store` (only those of traces whose id starts with `trace_prefix`, if given)."""
    add = store.add
    last = 0
    step = max(1, min(store.budget // 8, 1 << 20))  # how often the budget is checked, in bytes read
    try:
        for span in spans():
            if trace_prefix is None or span.trace_id.startswith(trace_prefix):
                add(span)
            if report.bytes_read - last > step:
                store.account(report.bytes_read - last)
                last = report.bytes_read
        store.account(report.bytes_read - last)
    except Exception as exc:  # noqa: BLE001 - one bad input never stops the others
        report.error = read_error(exc)


def check_trace(spans: list[Span], reports: dict[str, InputReport]) -> list[Span]:
    """Drop duplicate span ids and break parent cycles; report those, orphans and dependency cycles."""
    return list(checked_trace(spans, reports)[0].values())


def checked_trace(spans: list[Span],
                  reports: dict[str, InputReport]) -> tuple[dict[str, Span], dict[str, list[Span]]]:
    """`check_trace`, returning (span id -> span, in order; parent id -> children, in order) of
    the spans kept (what `runs.trace_runs` groups)."""
    by_id, children, _ = _checked(spans, reports)
    return by_id, children


def _checked(spans: list[Span], reports: dict[str, InputReport]) -> tuple[dict[str, Span], dict[str, list[Span]],
                                                                          list[Span]]:
    """`checked_trace`, plus the run spans (`runs.is_run_span`, in order) found in the same walk:
    each span is looked at once for the check and for grouping (`trace_findings`)."""
    def note(span: Span, reason: str, bad: bool) -> None:
        path, line = span.source or ("", 0)
        report = reports.get(path)
        if report is not None:
            (report.bad if bad else report.warn)(line, reason)

    by_id: dict[str, Span] = {s.span_id: s for s in spans}
    if len(by_id) != len(spans):  # duplicates: the first of each id is kept
        by_id = {}
        first_of = by_id.setdefault
        for span in spans:
            first = first_of(span.span_id, span)
            if first is not span:
                where = f"{first.source[0]}:{first.source[1]}" if first.source else "?"
                note(span, f"duplicate span id {span.span_id} in trace {span.trace_id} (first at {where}); dropped",
                     True)
    children: dict[str, list[Span]] = {}
    tops: list[Span] = []  # spans without a parent in the trace
    # no parent cycle when every span started after its parent, or its parent has none: a loop of
    # parents holds no span without a parent, so it needs a span that started no later than its parent
    # (then no walk is needed to find one)
    later = True
    # no dependency cycle when every dependency (or link) points to a span that started earlier
    # (a recorder's always do): checked in this walk, the edges searched only otherwise
    ordered = True
    get = by_id.get
    roots: list[Span] = []  # run spans (`runs.is_run_span`, inline)
    known = runs.NAME_ROLES.get
    for span in by_id.values():
        attributes = span.attributes
        if attributes.get(GEN_AI_OPERATION_NAME) == OP_INVOKE_AGENT:
            roots.append(span)
        else:
            roles = known(span.name)
            if (runs.name_roles(span.name) if roles is None else roles) & NAMED_RUN:
                roots.append(span)
        if ordered:
            targets = attributes.get(DEPENDS_ON)
            if isinstance(targets, list):
                if targets:
                    ordered = _points_back(span, targets, get)
            elif span.links:
                ordered = _points_back(span, map(_SPAN_ID, span.links), get)
        parent = span.parent_id
        if parent == span.span_id:
            note(span, f"span {span.span_id} is its own parent; read as a root", False)
            span.parent_id = None
            tops.append(span)
        elif not parent:
            tops.append(span)
        else:
            above = get(parent)
            if above is None:
                note(span, f"orphan span {span.span_id}: parent {parent} not in trace {span.trace_id}", False)
                tops.append(span)
                continue
            if later and above.start_ns >= span.start_ns and above.parent_id:
                later = False
            below = children.get(parent)
            if below is None:
                children[parent] = [span]
            else:
                below.append(span)
    if not later and not _all_reached(tops, children, len(by_id)):
        _parent_cycles(by_id, note)
        children = {}
        for span in by_id.values():
            if span.parent_id:
                children.setdefault(span.parent_id, []).append(span)
    if not ordered:
        _dependency_search(by_id, note)
    return by_id, children, roots


_SPAN_ID = attrgetter("span_id")  # (of a link's target)


def _all_reached(tops: list[Span], children: dict[str, list[Span]], total: int) -> bool:
    """Whether every span is below a top one (it is unless some parents form a loop)."""
    reached = len(tops)
    stack = list(tops)
    while stack:
        below = children.get(stack.pop().span_id)
        if below:
            reached += len(below)
            stack += below
    return reached == total


def _parent_cycles(by_id: dict[str, Span], note: Callable[[Span, str, bool], None]) -> None:
    rooted: set[str] = set()  # spans whose ancestors are known to end at a root (walked already)
    for span in by_id.values():  # walk up, break at the span that closes the loop
        if span.span_id in rooted:
            continue
        parent = span.parent_id
        if not parent or parent not in by_id or parent in rooted:
            rooted.add(span.span_id)  # a root, or below a walked span: nothing to walk
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


def _points_back(span: Span, targets: Iterable, get: Callable[[str], Span | None]) -> bool:
    """Whether each of a span's dependencies in the trace started before it (ties: a lower id)."""
    start, span_id = span.start_ns, span.span_id
    for target in targets:
        if isinstance(target, str):
            other = get(target)
            if other is not None and (other.start_ns > start or (other.start_ns == start and target >= span_id)):
                return False
    return True


def _dependency_search(by_id: dict[str, Span], note: Callable[[Span, str, bool], None]) -> None:
    edges = {}
    backwards = True  # every edge goes to a span that started earlier: no cycle, no search needed
    for span_id, span in by_id.items():
        targets = span.attributes.get(DEPENDS_ON)
        if isinstance(targets, list):
            out = edges[span_id] = [t for t in targets if isinstance(t, str) and t in by_id]
        elif span.links:
            out = edges[span_id] = [k.span_id for k in span.links if k.span_id in by_id]
        else:
            continue
        if backwards:
            start = span.start_ns
            for target in out:
                other = by_id[target].start_ns
                if other > start or (other == start and target >= span_id):
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
    by_id, children, roots = _checked(spans, reports)
    if not by_id:
        return
    convention = normalize_trace(list(by_id.values()))  # (rewrites attributes, never parents)
    if convention:
        roots = None  # (the run spans it marked: found again)
        if normalized is not None:
            normalized[convention] = normalized.get(convention, 0) + 1
    grouped = trace_runs(spans[0].trace_id, by_id, children, roots)
    sub_runs = runs.sub_runs(grouped)

    def located(run: Run, delegated: dict[str, Finding]) -> Finding:
        finding = locate(run, rules, {sid: f.origin_error_type or "" for sid, f in delegated.items()},
                         top_level=id(run) not in sub_runs)
        if finding.origin is None or finding.origin.span_id not in delegated:
            classify(finding)  # (one followed into a sub-agent takes the sub-agent's class)
        return finding

    yield from delegation.located(grouped, located)


def iter_findings(paths: Iterable[str] = (), remotes: Iterable[Remote] = (), inputs: list[InputReport] | None = None,
                  budget_bytes: int = DEFAULT_BUDGET_BYTES, normalized: dict[str, int] | None = None,
                  progress: Progress | None = None, rules: list | None = None,
                  trace_prefix: str | None = None) -> Iterator[Finding]:
    """Findings trace by trace (memory: the budget plus the largest trace); fills `inputs`.

    `rules`: critical-failure rules (None: the built-ins). `trace_prefix`: only the traces whose
    id starts with it (every input is still read and its problems reported)."""
    inputs = [] if inputs is None else inputs
    with TraceStore(budget_bytes) as store, lifecycle.environment_read_once():
        consume = None if trace_prefix is None else functools.partial(_consume, trace_prefix=trace_prefix.lower())
        read_into(store, inputs, paths, remotes, progress, consume)
        reports = {r.path: r for r in inputs}
        with no_gc():
            for spans in store.traces():
                yield from trace_findings(spans, reports, normalized, rules)


def analyze(paths: list[str], remotes: Iterable[Remote] = (), budget_bytes: int = DEFAULT_BUDGET_BYTES,
            progress: Progress | None = None, trace_prefix: str | None = None) -> Analysis:
    """Every finding kept (`show`, API callers); `trace_prefix`: only those traces (see iter_findings)."""
    analysis = Analysis()
    findings = list(iter_findings(paths, remotes, analysis.inputs, budget_bytes, analysis.normalized, progress,
                                  trace_prefix=trace_prefix))
    findings.sort(key=lambda f: (f.run.root.start_ns, f.run.trace_id, f.run.root.span_id))
    analysis.findings = findings
    canonical_notes(analysis.inputs)
    return analysis


def analyze_reduced(paths: list[str], remotes: Iterable[Remote] = (), budget_bytes: int = DEFAULT_BUDGET_BYTES,
                    progress: Progress | None = None, rules: list | None = None, *,
                    reduce: Callable[[Finding], RunSummary], jobs: int = 1,
                    min_chunk_bytes: int | None = None) -> Reduced:
    """The streaming analysis: every finding reduced as it comes, by `reduce` (the reports'
    reducer, `report/reduce.py`: this module imports no report).

    Files are analysed in chunks, trace by trace as soon as a trace is complete (`chunks`), in
    `jobs` worker processes when the input is large enough; the result is the same as analysing
    every trace after reading (and the same for any `jobs`). Remote sources, which cannot be read
    twice, are read whole first, with the files named alongside them."""
    from otel_agent_trace.analyzer import chunks

    out = Reduced()
    files = expand(paths)
    remotes = list(remotes)
    total = sum(file_size(p) for p in files)
    if progress is None:
        progress = Progress(total)
    with no_gc(), lifecycle.environment_read_once():  # (worker processes are forked with both)
        if remotes:
            with TraceStore(budget_bytes) as store:
                read_into(store, out.inputs, files, remotes, progress)
                reports = {r.path: r for r in out.inputs}
                for spans in store.traces():
                    out.runs.extend(reduce(f) for f in trace_findings(spans, reports, out.normalized, rules))
        else:
            smallest = chunks.MIN_CHUNK_BYTES if min_chunk_bytes is None else min_chunk_bytes
            if total < smallest:
                jobs = 1  # a small input is read faster than a worker starts
            plan = chunks.plan(files, jobs, smallest)
            results = chunks.run_chunks(plan, jobs, rules, reduce, budget_bytes, progress)
            chunks.merge(plan, results, files, rules, reduce, out)
        out.runs.sort(key=lambda r: r.key)
        canonical_notes(out.inputs)
    return out


def canonical_notes(inputs: list[InputReport]) -> None:
    """Each input's notes by line, then reason: one order however the input was read or cut."""
    for report in inputs:
        report.bad_lines.sort(key=lambda b: (b.line, b.reason))
        report.warnings.sort(key=lambda b: (b.line, b.reason))
