"""`--format json`: the contract of issue 2 (keys may be added, never renamed)."""

from __future__ import annotations

from typing import Any

import orjson

from otel_agent_trace.analyzer.analysis import Analysis, Reduced, RunSummary
from otel_agent_trace.analyzer.classify import BUG_CLASS_OF_ERROR, failed_outside_the_call, read_back
from otel_agent_trace.analyzer.graph import recovered_by
from otel_agent_trace.analyzer.lifecycle import SUSPICION, exception_text
from otel_agent_trace.analyzer.locate import Finding, Hop, tool_name
from otel_agent_trace.analyzer.metrics import combine as combine_metrics
from otel_agent_trace.analyzer.metrics import recorded_cost, run_metrics
from otel_agent_trace.analyzer.report.fleet import span_kind
from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.semconv import LINK_RELATION, RUN_RESUMES
from otel_agent_trace.vocabulary import Relation


def to_dict(analysis: Analysis | Reduced, prices: dict[str, Any] | None = None,
            budget_usd: float | None = None) -> dict[str, Any]:
    """The report as the JSON contract's dict. Its `runs` is an `orjson.Fragment` when the runs
    came encoded (`encode_entry`): `orjson.dumps(..., option=OPT_INDENT_2)` then writes the same
    bytes as from the entries' dicts."""
    if isinstance(analysis, Reduced):
        runs: Any = _runs(analysis.runs)
        per_run = [r.metrics for r in analysis.runs]
    else:
        runs = [run_entry(f) for f in analysis.findings]
        per_run = [run_metrics(f) for f in analysis.findings]
    steps = [m.steps for m in per_run]  # (a run's metrics hold its entry's status and steps)
    return {
        "runs": runs,
        "inputs": [
            {"path": i.path, "spans": i.spans, "bad_lines": [{"line": b.line, "reason": b.reason} for b in i.bad_lines],
             **({"error": i.error} if i.error else {}),
             "warnings": [{"line": w.line, "reason": w.reason} for w in i.warnings]}
            for i in analysis.inputs
        ],
        "summary": {
            "runs": len(per_run),
            "failed_runs": sum(1 for m in per_run if m.status == "failed"),
            "suspect_runs": sum(1 for m in per_run if m.status == "suspect"),
            "avg_steps_per_run": round(sum(steps) / len(steps), 3) if steps else 0.0,
            "metrics": combine_metrics(per_run, prices, budget_usd),
        },
    }


_ENTRY_INDENT = b"\n    "  # a `runs[]` entry's lines sit two levels deep in the report


def encode_entry(data: dict[str, Any]) -> bytes:
    """A `runs[]` entry encoded as `orjson.dumps(report, option=OPT_INDENT_2)` writes it inside
    the report (newlines only ever come from the indentation: JSON escapes those in strings)."""
    return orjson.dumps(data, option=orjson.OPT_INDENT_2).replace(b"\n", _ENTRY_INDENT)


def _runs(summaries: list[RunSummary]) -> Any:
    """The `runs` array: the entries' dicts, or one `orjson.Fragment` of them when all came encoded
    (the array written as `OPT_INDENT_2` writes a list one level deep)."""
    if not summaries or any(r.entry is None for r in summaries):
        return [r.data for r in summaries]
    return orjson.Fragment(b"[" + _ENTRY_INDENT + (b"," + _ENTRY_INDENT).join(r.entry for r in summaries) + b"\n  ]")


_UNKNOWN: Any = object()


def run_entry(f: Finding, cost_usd: float | None = _UNKNOWN) -> dict[str, Any]:
    """A run's entry of `runs[]`; `cost_usd`: the run's `recorded_cost`, when already known."""
    run = f.run
    return {
        "trace_id": run.trace_id,
        "run_span_id": run.root.span_id,
        "agent": run.agent,
        "status": "failed" if f.failed else "suspect" if f.answer_suspect else "ok",
        "steps": len(run.steps),
        "critical": None if f.critical is None else {
            "span_id": f.critical.span_id,
            "step_index": run.step_index_of(f.critical),
            "error_type": f.critical_error_type,
            "description": f.description,
        },
        "origin": None if f.origin is None else {
            "span_id": f.origin.span_id,
            "step_index": run.step_index_of(f.origin),
            "tool": tool_name(f.origin),
            "error_type": f.origin_error_type,
            "span_name": f.origin.name,
            "agent": f.origin_agent or run.agent_of(f.origin),
        },
        "chain": _hops(f.chain) if f.chain else [],  # (a run without an error: empty lists without a call)
        "bug_class": f.bug_class,
        "evidence": f.evidence,
        "recovered": _recovered(f) if f.recovered else [],
        # additions (issue 5)
        "confidence": f.confidence,
        "candidates": [
            {**_ref(run, c.span), "error_type": c.error_type, "tool": tool_name(c.span), "confidence": c.confidence,
             "weak_hops": c.weak_hops, "derived": c.derived, "suspect": c.suspect}
            for c in f.candidates
        ],
        "chains": [_hops(c) for c in f.chains] if f.chains else [],
        "rules": [{"rule_id": x.rule.rule_id, "description": x.rule.description, **_ref(run, x.span)}
                  for x in f.fired] if f.fired else [],
        "errors": fold([_error(f, s) for s in _ranked(f)]) if f.errors else [],
        "derived_graph": bool(f.graph and f.graph.derived),
        # addition (issue 12): the recorded agent_trace.usage.cost_usd summed, null unless every call was priced
        "cost_usd": recorded_cost(run) if cost_usd is _UNKNOWN else cost_usd,
        # addition (issue 29): the run this one resumes (a LangGraph thread after `interrupt`)
        "resumes": resumed_run(run.root),
    }


def resumed_run(root: Span) -> dict[str, Any] | None:
    """{trace_id, run_span_id} of the run this run's span resumes: its link of relation `resumes`,
    else (a backend that dropped link attributes) the link into the trace `agent_trace.run.resumes`
    names (`run_span_id` null when no link survived)."""
    trace_id = root.attributes.get(RUN_RESUMES)
    for link in root.links:
        if link.attributes.get(LINK_RELATION) == Relation.RESUMES.value or (trace_id and link.trace_id == trace_id):
            return {"trace_id": link.trace_id, "run_span_id": link.span_id}
    return {"trace_id": str(trace_id), "run_span_id": None} if trace_id else None


def _ranked(f: Finding) -> list[Span]:
    """`errors[]` as a user should read them: proven before suspected, then earliest first."""
    life = f.lifecycle
    if life is None:
        return f.errors
    return sorted(f.errors, key=lambda s: SUSPICION in life.states[s.span_id].flags if s.span_id in life.states else False)


def _hops(chain: list[Hop]) -> list[dict[str, Any]]:
    return [{"span_id": h.span.span_id, "step_index": h.step_index, "phase": h.phase, "error_type": h.error_type,
             "span_name": h.span.name, "relation": h.relation} for h in chain]


def _error(f: Finding, span: Span) -> dict[str, Any]:
    """An `errors[]` entry: the span where the error appeared, what kind it is, and where the
    report places it (`decision_span_id`: the step that made or ran it; `read_by_span_id`: for a
    tool or environment failure, the decision that read it)."""
    life = f.lifecycle
    st = life.states.get(span.span_id) if life else None
    error_type = st.error_type if st else None
    reader = f.readers.get(span.span_id)
    bug_class = BUG_CLASS_OF_ERROR.get(error_type or "")
    exception_type = exception_text(span)[0].rsplit(".", 1)[-1] or None
    outside, back = _outside(error_type, span), _read_back(error_type, span)
    return {**_ref(f.run, span), "agent": f.run.agent_of(span), "error_type": error_type,
            "derived": bool(st and st.derived),
            "reason": st.reason if st else "", "suspicion": bool(st and SUSPICION in st.flags),
            "bug_class": bug_class, "start_time_unix_nano": span.start_ns,
            "decision_span_id": _decision(f.run, span).span_id,
            "read_by_span_id": reader.span_id if reader is not None else None,
            "located_at": located_at(f.run, span, bug_class, reader, outside, back),
            "exception_type": exception_type}


def _outside(error_type: str | None, span: Span) -> bool:
    """Whether the error is a tool failure from outside the call (`classify.failed_outside_the_call`)."""
    exception_class, message = exception_text(span)
    return failed_outside_the_call(error_type, exception_class.rsplit(".", 1)[-1] or None, message)


def _read_back(error_type: str | None, span: Span) -> bool:
    """Whether the error is model output its framework reported back unparsed (`classify.read_back`)."""
    if error_type is None:
        return False
    exception_class, message = exception_text(span)
    return read_back(error_type, exception_class.rsplit(".", 1)[-1] or None, message)


# What each occurrence of a folded `errors[]` entry keeps of its own (docs/analyzer.md, "Folding").
OCCURRENCE_KEYS = ("span_id", "step_index", "agent", "start_time_unix_nano", "decision_span_id", "read_by_span_id",
                   "located_at", "reason")


def same_error(entry: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two errors of one run the same error for its reader: error type, the span
    without its step number (the tool, or the kind of step), exception class, and whether it is
    a suspicion (a suspicion never folds into a proven error)."""
    return entry["error_type"], span_kind(entry["span_name"]), entry["exception_type"], entry["suspicion"]


def fold(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One `errors[]` entry per distinct error of a run, in the order of its first occurrence:
    the first occurrence's keys, `count`, every occurrence in `occurrences` (earliest first) and,
    as `located_at`, every place where any occurrence is located. Nothing is dropped: a user reads
    a `page_down` called ten times with the same bad argument once, with its ten places."""
    out: list[dict[str, Any]] = []
    by_key: dict[tuple[Any, ...], dict[str, Any]] = {}
    for entry in entries:
        occurrence = {k: entry[k] for k in OCCURRENCE_KEYS}
        key = same_error(entry)
        folded = by_key.get(key)
        if folded is None:
            folded = by_key[key] = {**entry, "located_at": list(entry["located_at"]), "count": 1,
                                    "occurrences": [occurrence]}
            out.append(folded)
            continue
        folded["count"] += 1
        folded["occurrences"].append(occurrence)
        folded["located_at"] = list(dict.fromkeys(folded["located_at"] + entry["located_at"]))
    return out


def _recovered(f: Finding) -> list[dict[str, Any]]:
    """`recovered[]`: errors a retry recovered, with what recovered them."""
    if not f.recovered:
        return []
    life, run = f.lifecycle, f.run
    failed = {s for s in life.origins if s in run.tool_ids} if life else set()
    out = []
    for span in f.recovered:
        by = recovered_by(f.graph, failed, span.span_id) if f.graph is not None else None
        error_type = life.error_type(span.span_id) if life else None
        bug_class = BUG_CLASS_OF_ERROR.get(error_type or "")
        reader = f.readers.get(span.span_id)
        out.append({**_ref(run, span), "error_type": error_type, "bug_class": bug_class,
                    "start_time_unix_nano": span.start_ns, "decision_span_id": _decision(run, span).span_id,
                    "recovered_by_span_id": by,
                    "read_by_span_id": reader.span_id if reader is not None else None,
                    "located_at": located_at(run, span, bug_class, reader, _outside(error_type, span),
                                             _read_back(error_type, span))})
    return out


def located_at(run: Any, span: Span, bug_class: str | None, reader: Span | None, outside: bool = False,
               back: bool = False) -> list[str]:
    """Where the report locates an error, in reading order (docs/analyzer.md, "Placement"): the
    decision that made or ran it; for a tool or environment failure (`bug_class` `tool`), and for
    model output its framework could not parse or run and reported back (`back`,
    `classify.read_back`), also the decision that read it, the first one that acted knowing of
    the failure. Both are facts of the trace: the failure happened inside the first step and
    entered the second one's context. A failure from outside the call (`outside`: a timeout, a
    service, a format the tool refuses; `classify.failed_outside_the_call`) that a later decision
    read is placed there only: the call was well-formed, and the decision that read the failure
    is the one that had to act."""
    if bug_class == "tool" and reader is not None and outside:
        return [_enclosing_step(run, reader).span_id]
    places = [_decision(run, span).span_id]
    if (bug_class == "tool" or back) and reader is not None:
        places.append(_enclosing_step(run, reader).span_id)
    return list(dict.fromkeys(places))


def _decision(run: Any, span: Span) -> Span:
    """The step that made or ran an error's span: a tool's parent, unless that is the run itself;
    a model call nested in a framework's step span, that step span (see `_enclosing_step`)."""
    if span.span_id in run.tool_ids and span.parent_id and span.parent_id != run.root.span_id:
        return run.spans.get(span.parent_id, span)
    return _enclosing_step(run, span)


def _enclosing_step(run: Any, span: Span) -> Span:
    """A decision as one unit: when a framework nests each model call in a step span of its own
    (smolagents' `Step N`, which also holds the tools that call ran), that step span; otherwise
    the span itself (our `agent_step` spans are the steps; a span holding several steps is none)."""
    parent = span.parent_id
    if span.span_id in run.step_ids and parent and parent != run.root.span_id and parent in run.spans \
            and sum(1 for s in run.steps if s.parent_id == parent) == 1:
        return run.spans[parent]
    return span


def _ref(run: Any, span: Span) -> dict[str, Any]:
    return {"span_id": span.span_id, "step_index": run.step_index_of(span), "span_name": span.name}
