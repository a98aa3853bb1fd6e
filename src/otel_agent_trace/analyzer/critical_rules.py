"""Critical-failure rules: what a team counts as a task-level failure (seed 001), as configuration.

A rules file is JSON (or YAML when PyYAML is installed) in seed 001's shape:

    {"criticalFailures": [
       {"ruleId": "REFUND_TOOL_FAILED", "description": "the refund tool failed",
        "match": {"span_name": "execute_tool calculate_refund", "attribute": {"agent_trace.tool.outcome": "error_result"}},
        "traceBack": true}],
     "builtins": true}

`match` keys (all given must hold): `phase` (`origin|propagate|recovered|critical`, any case),
`error_type` (an `ErrorType` value or a flag such as `tool_retry_exceeded`; any case; a list
means any of them), `span_name` (exact, or a glob with `*`), `attribute` (`{key: value}`, all
equal; value `"*"` means present), `span_kind` (`run|step|tool|chat`). `traceBack` (default
true): walk back from the matched span to an origin; false only reports it. A file's rule with a
built-in's `ruleId` replaces it; `"enabled": false` turns a rule off; `"builtins": false` drops
all built-ins. A list at top level is the same as `{"criticalFailures": [...]}`.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from otel_agent_trace import datafile, prices
from otel_agent_trace.analyzer.evaluations import EvaluationSource
from otel_agent_trace.analyzer.lifecycle import Lifecycle
from otel_agent_trace.analyzer.rule import Rule
from otel_agent_trace.analyzer.runs import Run, is_chat_span, is_run_span, is_step_span, is_tool_span
from otel_agent_trace.analyzer.spans import STATUS_ERROR, Span


class RulesError(ValueError):
    """The rules file is unusable (reported by the CLI, exit 2)."""


@dataclass
class Fired:
    rule: Rule
    span: Span


BUILTIN_RULES: tuple[Rule, ...] = (
    Rule("RUN_EXCEPTION", "an exception left the agent's entrypoint, or the run span has status ERROR",
         {"span_kind": "run", "error_type": ["run_exception", "status_error"]}, builtin=True),
    Rule("FINAL_ANSWER_MISSING_FIELD", "the final answer failed validation (missing required field)",
         {"error_type": "final_answer_invalid"}, builtin=True),
    Rule("TOOL_RETRY_EXCEEDED", "the same tool failed 3 times in a row",
         {"error_type": "tool_retry_exceeded"}, builtin=True),
    Rule("LOOP_DETECTED", "the same tool was requested with the same arguments 3 times",
         {"error_type": "loop_detected"}, builtin=True),
    Rule("BUDGET_EXCEEDED", "a step, time or token budget was exceeded",
         {"error_type": "budget_exceeded"}, builtin=True),
    Rule("RECORDED_CRITICAL", "a span the recorder marked critical",
         {"phase": "critical"}, builtin=True),
)

_MATCH_KEYS = {"phase", "error_type", "span_name", "attribute", "span_kind"}


def load_rules(path: str | None) -> list[Rule]:
    """Built-ins, merged with the rules of `path` (JSON, or YAML with PyYAML)."""
    rules = {r.rule_id: r for r in BUILTIN_RULES}
    if not path:
        return _with_evaluations(list(rules.values()), {}, "")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise RulesError(f"{path}: cannot read: {exc.strerror or exc}") from None
    data = _parse(path, text)
    if isinstance(data, list):
        data = {"criticalFailures": data}
    if not isinstance(data, dict):
        raise RulesError(f"{path}: expected an object with criticalFailures, or a list of rules")
    if data.get("builtins") is False:
        rules = {}
    items = data.get("criticalFailures", data.get("critical_failures", []))
    if not isinstance(items, list):
        raise RulesError(f"{path}: criticalFailures must be a list")
    for i, item in enumerate(items):
        rule = _rule(path, i, item)
        rules[rule.rule_id] = rule
    if data.get("builtins") is False or EVALUATION_RULE_ID in rules:  # (named in the file: off, or on as below)
        keep = data.get("builtins") is not False and rules.pop(EVALUATION_RULE_ID).enabled
    else:
        keep = True
    out = [r for r in rules.values() if r.enabled]
    return _with_evaluations(out, data, f"{path}: ") if keep else out


EVALUATION_RULE_ID = "EVALUATION_FAILED"  # the built-in verdict source of analyzer/evaluations.py


def _with_evaluations(rules: list[Rule], data: dict[str, Any], where: str) -> list[Rule]:
    """`rules` and the built-in source of evaluation verdicts (settings from the environment,
    then the file's `evaluation_fail_labels` / `evaluation_threshold`)."""
    try:
        return [*rules, EvaluationSource.configured(file=data, where=where)]
    except ValueError as exc:
        raise RulesError(str(exc)) from None


def load_config(path: str | None) -> dict[str, Any]:
    """The whole team config file (rules plus optional `prices`), parsed."""
    if not path:
        return {}
    with open(path, encoding="utf-8") as handle:
        data = _parse(path, handle.read())
    if not isinstance(data, dict):
        return {}
    if data.get("prices") is not None:  # the same format and checks as the recorder's price file
        try:
            data["prices"] = prices.table(data["prices"], f"{path}: prices")
        except prices.PriceFileError as exc:
            raise RulesError(str(exc)) from None
    return data


def _parse(path: str, text: str) -> Any:
    try:
        return datafile.parse(path, text)
    except datafile.DataFileError as exc:
        raise RulesError(str(exc)) from None


def _rule(path: str, index: int, item: Any) -> Rule:
    where = f"{path}: criticalFailures[{index}]"
    if not isinstance(item, dict):
        raise RulesError(f"{where}: not an object")
    rule_id = item.get("ruleId", item.get("rule_id", item.get("id")))
    if not rule_id or not isinstance(rule_id, str):
        raise RulesError(f"{where}: ruleId missing")
    match = item.get("match", {})
    if not isinstance(match, dict):
        raise RulesError(f"{where} ({rule_id}): match must be an object")
    unknown = set(match) - _MATCH_KEYS
    if unknown:
        raise RulesError(f"{where} ({rule_id}): unknown match key(s) {sorted(unknown)}; "
                         f"use {sorted(_MATCH_KEYS)}")
    if not match and item.get("enabled", True):
        raise RulesError(f"{where} ({rule_id}): empty match would mark every span critical")
    return Rule(rule_id, str(item.get("description", "")), match,
                bool(item.get("traceBack", item.get("trace_back", True))), bool(item.get("enabled", True)))


def span_kind(span: Span) -> str:
    if is_run_span(span):
        return "run"
    if is_step_span(span):
        return "step"
    if is_tool_span(span):
        return "tool"
    if is_chat_span(span):
        return "chat"
    return "other"


def facts(span: Span, life: Lifecycle) -> tuple[str | None, set[str]]:
    """(phase, error types and flags) of a span, lower case."""
    st = life.states.get(span.span_id)
    types: set[str] = set()
    phase = None
    if st is not None:
        phase = (st.phase or "").lower() or None
        if st.error_type:
            types.add(st.error_type.lower())
        types |= {f.lower() for f in st.flags}
    if span.status_code == STATUS_ERROR:
        types.add("status_error")
    return phase, types


def wanted_types(rule: Rule) -> set[str] | None:
    """The error types a rule matches, lower case (None: it names none)."""
    m = rule.match
    if "error_type" not in m:
        return None
    wanted = m["error_type"] if isinstance(m["error_type"], list) else [m["error_type"]]
    return {str(w).lower() for w in wanted}


def matches(rule: Rule, span: Span, life: Lifecycle,
            known: tuple[str | None, set[str]] | None = None, wanted: set[str] | None = None) -> bool:
    """`known`: the span's `facts`, `wanted`: the rule's `wanted_types`, when already computed
    (`fire` asks every rule about a span)."""
    m = rule.match
    phase, types = facts(span, life) if known is None else known
    if "phase" in m and str(m["phase"]).lower() != (phase or ""):
        return False
    if "error_type" in m:
        if not (wanted_types(rule) if wanted is None else wanted) & types:
            return False
    if "span_name" in m:
        pattern = str(m["span_name"])
        if not (span.name == pattern or ("*" in pattern and fnmatch.fnmatchcase(span.name, pattern))):
            return False
    if "span_kind" in m and span_kind(span) != str(m["span_kind"]).lower():
        return False
    if "attribute" in m:
        attrs = m["attribute"] if isinstance(m["attribute"], dict) else {}
        for key, value in attrs.items():
            if key not in span.attributes:
                return False
            if value != "*" and span.attributes[key] != value and str(span.attributes[key]) != str(value):
                return False
    return True


def fire(run: Run, life: Lifecycle, rules: list[Rule]) -> list[Fired]:
    """Every (rule, span) that matched, root first, then by start time."""
    out: list[Fired] = []
    rules = [r for r in rules if r.enabled]
    spans = run.spans.values()
    # when every rule needs an error type or a phase, a span without an error type (status not ERROR,
    # no lifecycle error type or flag) matches only a rule that wants its phase alone: skip the
    # others without the full check (most spans of a run; those a failure merely propagated
    # through too) (before sorting: only the spans that may match need an order)
    # (the spans with status ERROR are known from grouping (`run.failed`); the others that may
    # match are looked up from the lifecycle's states: the order is the sort's, not the input's)
    if bool(rules) and all(r.match.get("error_type") or r.match.get("phase") for r in rules):
        states = life.states
        spans = run.failed
        if states:
            phases = {str(r.match["phase"]).lower() for r in rules if not r.match.get("error_type")}
            members = run.spans
            spans = spans + [members[sid] for sid, st in states.items()
                             if (st.error_type or st.flags or (st.phase and st.phase.lower() in phases))
                             and sid in members and members[sid].status_code != STATUS_ERROR]
    if not spans:
        return out
    wanted = [wanted_types(rule) for rule in rules]  # (once per run, not per span and rule)
    for span in sorted(spans, key=lambda s: (s is not run.root, s.start_ns, s.span_id)):
        known = facts(span, life)
        hits = [Fired(rule, span) for rule, types in zip(rules, wanted) if matches(rule, span, life, known, types)]
        if len(hits) > 1:  # the recorded-critical fallback only when nothing more specific matched
            hits = [h for h in hits if h.rule.rule_id != "RECORDED_CRITICAL"]
        out.extend(hits)
    return out
