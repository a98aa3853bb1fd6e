"""Analyses each complete trace `serve` holds, as `analyze` does, and writes what it found.

The analysis is `analyzer/chunks.analyse_trace` with the reports' reducer (`report/reduce.py`):
the function the `analyze` command runs on every trace it reads, so a run's line in the findings
file is byte for byte the object of its `runs[]` entry in `analyze --format json` (compact, one
per line). Notes the analysis makes about a trace (duplicate span ids, orphans) go to the log."""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

import orjson

from otel_agent_trace.analyzer import chunks
from otel_agent_trace.analyzer.results import RunSummary
from otel_agent_trace.analyzer.critical_rules import load_rules
from otel_agent_trace.analyzer.settings import AnalyzerSettings
from otel_agent_trace.analyzer.report.reduce import summarize
from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.rotating_file import RotatingLineFile
from otel_agent_trace.serve.held import HeldTraces

log = logging.getLogger("otel_agent_trace.serve")


def finding_line(summary: RunSummary) -> bytes:
    """A run's line of the findings file: its `runs[]` entry, compact."""
    return orjson.dumps(summary.data) + b"\n"


class Analyst:
    """The thread that takes complete traces from `held` and analyses them one at a time."""

    def __init__(self, held: HeldTraces, findings: RotatingLineFile, rules: list | None = None,
                 on_run: Callable[[dict[str, Any]], None] | None = None, period: float | None = None) -> None:
        self.held = held
        self.findings = findings
        self.rules = load_rules(None) if rules is None else rules  # (the built-ins, read once)
        self.settings = AnalyzerSettings.from_env()  # read once, when serve starts
        self.on_run = on_run  # each run's entry, after its line is written (metrics, finding spans)
        self.period = period if period is not None else max(0.02, min(held.decision_wait / 4, 0.5))
        self.backlog = 0  # complete traces taken and not analysed yet
        self.stats = {"traces_analysed": 0, "runs": 0, "analysis_errors": 0, "write_errors": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="agent-trace-serve-analyst", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            self.analyse(self.held.take_ready())

    def stop(self) -> None:
        """Stop taking traces, then analyse every trace still held (complete or not)."""
        self._stop.set()
        self._thread.join()
        self.analyse(self.held.take_all())

    def analyse(self, traces: list[list[Span]]) -> None:
        self.backlog = len(traces)
        for spans in traces:
            try:
                notes, _, summaries = chunks.analyse_trace(spans, self.rules, summarize, self.settings)
            except Exception:  # noqa: BLE001 - one trace the analysis cannot read never stops the others
                self.stats["analysis_errors"] += 1
                log.exception("otel-agent-trace serve: the analysis of trace %s failed", spans[0].trace_id)
                continue
            finally:
                self.backlog -= 1
            for _, bad, line, reason in notes:
                log.warning("otel-agent-trace serve: request %d: %s%s", line, "" if bad else "warning: ", reason)
            self.stats["traces_analysed"] += 1
            for summary in summaries:
                try:
                    self.findings.write_line(finding_line(summary))
                except OSError as exc:  # a full disk loses lines, never the service
                    self.stats["write_errors"] += 1
                    log.error("otel-agent-trace serve: cannot write %s: %s", self.findings.path, exc)
                self.stats["runs"] += 1
                if self.on_run is not None:
                    self.on_run(summary.data)
