"""`analyze(paths)`: read every input, group runs, locate and classify each failure.

Reading is streaming: spans are grouped by trace in a `TraceStore` that spills to a temporary
SQLite file when the JSON read exceeds a memory budget, then traces are analysed one at a time
(`iter_findings`, a generator whose memory is bounded by the budget plus the largest trace).
Each trace is checked (duplicate span ids, parent cycles, orphans, dependency cycles: reported
with file, line and reason) and normalized from foreign conventions (see `normalize/`) before
runs are grouped. `analyze()` collects the findings into an `Analysis`, as before.

Where the work is: `inputs` reads, `trace` analyses one trace, `chunks` cuts files for the
streaming path, `results` holds what comes back. Each entry point reads the `AnalyzerSettings`
once (None: the environment's) and passes them down, to the chunk workers too.

`analyze_reduced()` is the CLI's path: each finding is reduced, as it is produced, to what the
reports need (`RunSummary`: the JSON report's run entry, the run's metrics inputs and, for
`--format html`, the run's rendered section) and the finding with its spans is dropped, so memory
is bounded by the budget plus the largest trace (plus the small summaries), not by the file.
"""

from __future__ import annotations

import functools
from typing import Callable, Iterable, Iterator

from otel_agent_trace.analyzer import chunks
from otel_agent_trace.analyzer.inputs import Progress, Remote, _consume, expand, file_size, no_gc, read_into
from otel_agent_trace.analyzer.locate import Finding
from otel_agent_trace.analyzer.readers.spill import DEFAULT_BUDGET_BYTES, TraceStore
from otel_agent_trace.analyzer.results import Analysis, Reduced, RunSummary
from otel_agent_trace.analyzer.critical_rules import load_rules
from otel_agent_trace.analyzer.settings import AnalyzerSettings
from otel_agent_trace.analyzer.spans import InputReport
from otel_agent_trace.analyzer.trace import trace_findings

__all__ = ["Analysis", "Progress", "Reduced", "Remote", "RunSummary", "analyze", "analyze_reduced", "canonical_notes",
           "iter_findings"]


def iter_findings(paths: Iterable[str] = (), remotes: Iterable[Remote] = (), inputs: list[InputReport] | None = None,
                  budget_bytes: int = DEFAULT_BUDGET_BYTES, normalized: dict[str, int] | None = None,
                  progress: Progress | None = None, rules: list | None = None,
                  trace_prefix: str | None = None, settings: AnalyzerSettings | None = None) -> Iterator[Finding]:
    """Findings trace by trace (memory: the budget plus the largest trace); fills `inputs`.

    `rules`: critical-failure rules (None: the built-ins). `trace_prefix`: only the traces whose
    id starts with it (every input is still read and its problems reported). `settings`: None:
    the environment's, read here once."""
    inputs = [] if inputs is None else inputs
    settings = AnalyzerSettings.from_env() if settings is None else settings
    rules = load_rules(None) if rules is None else rules  # (the built-ins and the evaluations' source, read once)
    with TraceStore(budget_bytes) as store:
        consume = None if trace_prefix is None else functools.partial(_consume, trace_prefix=trace_prefix.lower())
        read_into(store, inputs, paths, remotes, progress, consume, settings)
        reports = {r.path: r for r in inputs}
        with no_gc():
            for spans in store.traces():
                yield from trace_findings(spans, reports, normalized, rules, settings)


def analyze(paths: list[str], remotes: Iterable[Remote] = (), budget_bytes: int = DEFAULT_BUDGET_BYTES,
            progress: Progress | None = None, trace_prefix: str | None = None,
            settings: AnalyzerSettings | None = None) -> Analysis:
    """Every finding kept (`show`, API callers); `trace_prefix`: only those traces (see iter_findings)."""
    analysis = Analysis(settings=AnalyzerSettings.from_env() if settings is None else settings)
    findings = list(iter_findings(paths, remotes, analysis.inputs, budget_bytes, analysis.normalized, progress,
                                  trace_prefix=trace_prefix, settings=analysis.settings))
    findings.sort(key=lambda f: (f.run.root.start_ns, f.run.trace_id, f.run.root.span_id))
    analysis.findings = findings
    canonical_notes(analysis.inputs)
    return analysis


def analyze_reduced(paths: list[str], remotes: Iterable[Remote] = (), budget_bytes: int = DEFAULT_BUDGET_BYTES,
                    progress: Progress | None = None, rules: list | None = None, *,
                    reduce: Callable[[Finding], RunSummary], jobs: int = 1,
                    min_chunk_bytes: int | None = None, settings: AnalyzerSettings | None = None) -> Reduced:
    """The streaming analysis: every finding reduced as it comes, by `reduce` (the reports'
    reducer, `report/reduce.py`: this module imports no report).

    Files are analysed in chunks, trace by trace as soon as a trace is complete (`chunks`), in
    `jobs` worker processes when the input is large enough; the result is the same as analysing
    every trace after reading (and the same for any `jobs`). Remote sources, which cannot be read
    twice, are read whole first, with the files named alongside them. `settings`: None: the
    environment's, read here once."""
    out = Reduced()
    settings = AnalyzerSettings.from_env() if settings is None else settings
    rules = load_rules(None) if rules is None else rules  # (the built-ins and the evaluations' source, read once)
    files = expand(paths)
    remotes = list(remotes)
    total = sum(file_size(p) for p in files)
    if progress is None:
        progress = Progress(total)
    with no_gc():  # (worker processes are forked with it)
        if remotes:
            with TraceStore(budget_bytes) as store:
                read_into(store, out.inputs, files, remotes, progress, settings=settings)
                reports = {r.path: r for r in out.inputs}
                for spans in store.traces():
                    out.runs.extend(reduce(f) for f in trace_findings(spans, reports, out.normalized, rules, settings))
        else:
            smallest = chunks.MIN_CHUNK_BYTES if min_chunk_bytes is None else min_chunk_bytes
            if total < smallest:
                jobs = 1  # a small input is read faster than a worker starts
            plan = chunks.plan(files, jobs, smallest)
            results = chunks.run_chunks(plan, jobs, rules, reduce, budget_bytes, progress, settings)
            chunks.merge(plan, results, files, rules, reduce, out, settings)
        out.runs.sort(key=lambda r: r.key)
        canonical_notes(out.inputs)
    return out


def canonical_notes(inputs: list[InputReport]) -> None:
    """Each input's notes by line, then reason: one order however the input was read or cut."""
    for report in inputs:
        report.bad_lines.sort(key=lambda b: (b.line, b.reason))
        report.warnings.sort(key=lambda b: (b.line, b.reason))
