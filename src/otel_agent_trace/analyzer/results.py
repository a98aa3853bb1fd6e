"""What an analysis returns: every finding kept (`Analysis`), or each run reduced to what the
reports need (`Reduced` of `RunSummary`), with how reading the inputs went."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from otel_agent_trace.analyzer.locate import Finding
from otel_agent_trace.analyzer.settings import AnalyzerSettings
from otel_agent_trace.analyzer.spans import InputReport


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
    settings: AnalyzerSettings = field(default_factory=AnalyzerSettings)  # what it ran with (`enrich` re-locates so)


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
