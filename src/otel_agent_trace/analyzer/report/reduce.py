"""How the reports reduce each finding as the streaming analysis yields it: the JSON contract's
run entry, the run's metrics inputs and, for `--format html`, the run's rendered section.

The analysis pipeline (`analysis.analyze_reduced`) takes the reducer as an argument and imports
no report: the dependency points one way, from the reports to the analysis.
"""

from __future__ import annotations

from typing import Any, Callable

from otel_agent_trace.analyzer import analysis
from otel_agent_trace.analyzer.analysis import Reduced, RunSummary
from otel_agent_trace.analyzer.locate import Finding
from otel_agent_trace.analyzer.metrics import run_metrics
from otel_agent_trace.analyzer.report.fleet import DETAIL_ALL_RUNS
from otel_agent_trace.analyzer.report.json_report import encode_entry, run_entry


def summarize(f: Finding, html: bool = False, encoded: bool = False) -> RunSummary:
    """A finding reduced to what every report needs; the finding and its spans can then go.
    `encoded`: only the JSON report is wanted, so the run's entry is kept encoded (`entry`)."""
    metrics = run_metrics(f)
    data = run_entry(f, metrics.recorded_cost)
    section = None
    if html:
        from otel_agent_trace.analyzer.report.html import run_section

        section = run_section(data, f)
    root = f.run.root
    key = (root.start_ns, f.run.trace_id, root.span_id)
    if encoded:
        return RunSummary(key, None, metrics, section, encode_entry(data))
    return RunSummary(key, data, metrics, section)


def reducer(html: bool = False, encoded: bool = False) -> Callable[[Finding], RunSummary]:
    """The reducer of one analysis. A report of more runs than `DETAIL_ALL_RUNS` shows failed runs
    only in full (report/html.py), so no section is rendered (and held) for the others past that
    count (per process: worker processes each count their own). `encoded`: see `summarize`."""
    healthy_sections = [0]

    def reduce(finding: Finding) -> RunSummary:
        section = html and (finding.failed or healthy_sections[0] < DETAIL_ALL_RUNS)
        healthy_sections[0] += html and not finding.failed
        return summarize(finding, section, encoded)

    return reduce


def analyze_reduced(paths: list[str], *args: Any, html: bool = False, encoded: bool = False,
                    wrap: Callable[[Callable[[Finding], RunSummary]], Callable[[Finding], RunSummary]] | None = None,
                    **kwargs: Any) -> Reduced:
    """`analysis.analyze_reduced` with the reports' reducer (what the CLI runs); `encoded`: the
    JSON report is the only one wanted (see `summarize`); `wrap`: a reducer around the reports'
    one (`analyze --judge`'s, which rewrites the entries it judges)."""
    reduce = reducer(html, encoded)
    return analysis.analyze_reduced(paths, *args, reduce=wrap(reduce) if wrap else reduce, **kwargs)
