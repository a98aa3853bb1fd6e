"""`analyze(paths)`: read every input, group runs, locate and classify each failure."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

from otel_agent_trace.analyzer.classify import classify
from otel_agent_trace.analyzer.locate import Finding, locate
from otel_agent_trace.analyzer.readers.otlp_json import read_file
from otel_agent_trace.analyzer.runs import group_runs
from otel_agent_trace.analyzer.spans import InputReport, Span


@dataclass
class Analysis:
    inputs: list[InputReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def unreadable(self) -> bool:
        return any(i.error for i in self.inputs)

    @property
    def bad_lines(self) -> int:
        return sum(len(i.bad_lines) for i in self.inputs)


def expand(paths: list[str]) -> list[str]:
    """Files named, files of directories named (sorted), and glob patterns."""
    out: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            out.extend(sorted(os.path.join(path, n) for n in os.listdir(path)
                              if os.path.isfile(os.path.join(path, n))))
        elif any(c in path for c in "*?[") and not os.path.exists(path):
            out.extend(sorted(glob.glob(path)) or [path])
        else:
            out.append(path)
    return out


def analyze(paths: list[str]) -> Analysis:
    analysis = Analysis()
    spans: list[Span] = []
    for path in expand(paths):
        report = InputReport(path)
        analysis.inputs.append(report)
        try:
            spans.extend(read_file(path, report))
        except OSError as exc:
            report.error = f"cannot read: {exc.strerror or exc}"
        except Exception as exc:  # noqa: BLE001 - one bad input never stops the others
            report.error = f"cannot read: {type(exc).__name__}: {exc}"
    for run in group_runs(spans):
        finding = locate(run)
        classify(finding)
        analysis.findings.append(finding)
    return analysis
