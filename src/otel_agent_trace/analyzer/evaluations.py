"""Evaluation results in the trace (`gen_ai.evaluation.result`): which runs they say failed.

An evaluation result reaches the analysis three ways, all read as one event on the evaluated span:
- a span event `gen_ai.evaluation.result` on the evaluated span (an SDK span event);
- a log record with that event name (`readers/otlp_logs.py`: a *carrier* span, parented to the
  span the record names);
- the small span `record_evaluation` writes when no LoggerProvider is configured (a span of that
  name, parented to the evaluated span: also a carrier).
`attach` takes the carriers out of a trace before it is checked (so they are never orphans, runs
or steps) and adds each as an event to the span it names: its parent when that span is in the
trace, else the chat span whose `gen_ai.response.id` it carries, else the trace's first top span
(the run, when the evaluation names only the trace).

`EvaluationSource` (a verdict source, `verdicts.py`) then reads the events of each run: a result
whose label is a failing one (`evaluation_fail_labels`: `fail`, `incorrect`, `not_relevant` by
default; compared case-insensitively, spaces and dashes read as `_`), or whose score is under the
threshold for its name (`evaluation_threshold`: none by default, since scales differ; one number
for every evaluation, or `name=value` pairs), makes the run failed: error type
`evaluation_failed`, critical on the evaluated span, the evaluation named in the evidence. A
result that itself records an error (`error.type`: the evaluator failed) says nothing about the
run and is skipped. Both settings are `OTEL_AGENT_TRACE_*` variables and `--rules` file keys.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Iterable, Mapping

from otel_agent_trace.analyzer import verdicts
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.spans import Event, InputReport, Span
from otel_agent_trace.config import ENV_PREFIX, AgentTraceConfig, parse_thresholds
from otel_agent_trace.semconv import (
    EVALUATION_SCOPE,
    EVALUATION_SOURCE,
    ERROR_TYPE_SEMCONV,
    GEN_AI_EVALUATION_EXPLANATION,
    GEN_AI_EVALUATION_NAME,
    GEN_AI_EVALUATION_RESULT,
    GEN_AI_EVALUATION_SCORE_LABEL,
    GEN_AI_EVALUATION_SCORE_VALUE,
    GEN_AI_RESPONSE_ID,
)
from otel_agent_trace.vocabulary import ErrorType

EVALUATION_FAILED = ErrorType.EVALUATION_FAILED.value
_LABELS_ENV, _THRESHOLD_ENV = ENV_PREFIX + "EVALUATION_FAIL_LABELS", ENV_PREFIX + "EVALUATION_THRESHOLD"
_KEYS = (GEN_AI_EVALUATION_NAME, GEN_AI_EVALUATION_SCORE_VALUE, GEN_AI_EVALUATION_SCORE_LABEL,
         GEN_AI_EVALUATION_EXPLANATION, GEN_AI_RESPONSE_ID, ERROR_TYPE_SEMCONV, EVALUATION_SOURCE)


_NAME, _EVENTS = attrgetter("name"), attrgetter("events")


def attach(spans: list[Span], reports: Mapping[str, InputReport] | None = None) -> list[Span]:
    """The trace's spans without its carriers, each carrier an event on the span it names (see
    the module docstring). A trace with no carrier is returned as it is (one pass over names)."""
    if GEN_AI_EVALUATION_RESULT not in map(_NAME, spans):  # (the common case, looped in C)
        return spans
    carriers = [span for span in spans if span.name == GEN_AI_EVALUATION_RESULT
                and GEN_AI_EVALUATION_NAME in span.attributes]
    if not carriers:
        return spans
    taken = {id(span) for span in carriers}
    kept = [span for span in spans if id(span) not in taken]
    by_id = {span.span_id: span for span in kept}
    by_response: dict[str, Span] = {}
    for span in kept:
        response = span.attributes.get(GEN_AI_RESPONSE_ID)
        if isinstance(response, str):
            by_response.setdefault(response, span)
    tops = sorted((s for s in kept if not s.parent_id or s.parent_id not in by_id), key=lambda s: (s.start_ns, s.span_id))
    for carrier in carriers:
        attributes = {k: carrier.attributes[k] for k in _KEYS if k in carrier.attributes}
        attributes.setdefault(EVALUATION_SOURCE, "span")
        target = by_id.get(carrier.parent_id or "")
        if target is None:
            target = by_response.get(str(attributes.get(GEN_AI_RESPONSE_ID)))
        if target is None and tops:
            target = tops[0]
            if carrier.parent_id and carrier.attributes.get(EVALUATION_SCOPE) != "trace":
                _note(reports, carrier, f"{GEN_AI_EVALUATION_RESULT} {attributes[GEN_AI_EVALUATION_NAME]!r} names span "
                      f"{carrier.parent_id}, not in trace {carrier.trace_id}: read as about the trace's first run")
        if target is None:
            _note(reports, carrier, f"{GEN_AI_EVALUATION_RESULT} {attributes[GEN_AI_EVALUATION_NAME]!r} names "
                  + (f"trace {carrier.trace_id}, which is not in the inputs" if carrier.trace_id
                     else "no trace (no trace id): not matched to a run"))
            continue
        # (a span read without events shares one immutable empty list: give it its own)
        target.events = [*target.events, Event(GEN_AI_EVALUATION_RESULT, carrier.start_ns, attributes)]
    return kept


def _note(reports: Mapping[str, InputReport] | None, span: Span, reason: str) -> None:
    path, line = span.source or ("", 0)
    report = reports.get(path) if reports is not None else None  # (a chunk's notes: an empty dict until asked)
    if report is not None:
        report.warn(line, reason)


@dataclass(frozen=True)
class Result:
    """One evaluation result on a span of a run."""

    span: Span
    name: str
    score: float | None
    label: str | None
    explanation: str | None
    source: str  # span_event | log_record | span

    def describe(self) -> str:
        parts = [f"evaluation {self.name!r}"]
        if self.label is not None:
            parts.append(f"label {self.label!r}")
        if self.score is not None:
            parts.append(f"score {self.score:g}")
        text = ", ".join(parts)
        if self.explanation:
            text += f": {self.explanation}"
        return text + f" (on span {self.span.span_id} {self.span.name!r}, {_SOURCES.get(self.source, self.source)})"


_SOURCES = {"span_event": "a span event", "log_record": "a log record", "span": "an evaluation span"}


def results(run: Run) -> list[Result]:
    """The evaluation results on the spans of a run, in span start order."""
    out = []
    for span in filter(_EVENTS, run.spans.values()):  # (most spans have none: filtered in C)
        for event in span.events:
            if event.name != GEN_AI_EVALUATION_RESULT:
                continue
            a = event.attributes
            name = a.get(GEN_AI_EVALUATION_NAME)
            if not isinstance(name, str) or a.get(ERROR_TYPE_SEMCONV):
                continue
            out.append(Result(span, name, _score(a.get(GEN_AI_EVALUATION_SCORE_VALUE)),
                              str(a[GEN_AI_EVALUATION_SCORE_LABEL]) if a.get(GEN_AI_EVALUATION_SCORE_LABEL) is not None else None,
                              str(a[GEN_AI_EVALUATION_EXPLANATION]) if a.get(GEN_AI_EVALUATION_EXPLANATION) else None,
                              str(a.get(EVALUATION_SOURCE) or "span_event")))
    out.sort(key=lambda r: (r.span.start_ns, r.span.span_id))
    return out


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        score = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(score) else score


def label_key(label: str) -> str:
    return "_".join(label.strip().lower().replace("-", " ").split())


@dataclass
class EvaluationSource(verdicts.VerdictSource):
    """Evaluation results in the trace: a built-in verdict source (every analysis has one; a rules
    file's `"ruleId": "EVALUATION_FAILED", "enabled": false` turns it off)."""

    rule_id: str = "EVALUATION_FAILED"
    description: str = "an evaluation result in the trace says the run failed"
    match: dict[str, Any] = field(default_factory=lambda: {"error_type": EVALUATION_FAILED})
    builtin: bool = True
    fail_labels: frozenset[str] = frozenset(label_key(x) for x in AgentTraceConfig.evaluation_fail_labels)
    thresholds: dict[str, float] = field(default_factory=dict)  # evaluation name -> lowest passing score ("*": all)

    @classmethod
    def configured(cls, config: AgentTraceConfig | None = None, file: Mapping[str, Any] | None = None,
                   where: str = "") -> "EvaluationSource":
        """From the environment's settings (`config`, else read now), overridden by a rules file's
        `evaluation_fail_labels` and `evaluation_threshold` keys (raises ValueError on bad values)."""
        if config is None:  # (only these two: a recorder setting the analysis does not use never stops it)
            env = {k: os.environ[k] for k in (_LABELS_ENV, _THRESHOLD_ENV) if k in os.environ}
            config = AgentTraceConfig.from_env(env)
        labels: Iterable[str] = config.evaluation_fail_labels
        thresholds = parse_thresholds(config.evaluation_threshold)
        file = file or {}
        if file.get("evaluation_fail_labels") is not None:
            given = file["evaluation_fail_labels"]
            given = [p for p in given.split(",")] if isinstance(given, str) else given
            if not isinstance(given, list) or not all(isinstance(x, str) for x in given):
                raise ValueError(f"{where}evaluation_fail_labels must be a list of labels")
            labels = given
        if file.get("evaluation_threshold") is not None:
            thresholds = parse_thresholds(file["evaluation_threshold"], where)
        return cls(fail_labels=frozenset(label_key(x) for x in labels if x.strip()), thresholds=thresholds)

    def failing(self, result: Result) -> str | None:
        """Why a result says the run failed, or None."""
        if result.label is not None and label_key(result.label) in self.fail_labels:
            return f"failing label {result.label!r}"
        threshold = self.thresholds.get(result.name, self.thresholds.get("*"))
        if threshold is not None and result.score is not None and result.score < threshold:
            return f"score {result.score:g} under the threshold {threshold:g}"
        return None

    def verdicts(self, run: Run, top_level: bool) -> list[verdicts.Verdict]:
        out = []
        for result in results(run):
            why = self.failing(result)
            if why is not None:
                out.append(verdicts.Verdict(EVALUATION_FAILED, f"{result.describe()}: {why}", result.span.span_id))
        return out
