"""Checking the regression set: assertions per case and per team rules, against new runs, by tier.

Assertions (a case's `"assert"` in case.json, over the team file's `"assert"`):
`no_failure` (default true: the analyzer finds no failure), `no_unhandled_tool_error`,
`tool_never_empty_arguments: [tool, ...]`, `no_fabricated_value`, `final_answer_fields: [field, ...]`
(the final answer is a JSON object with them), `expected_answer` (the final answer matches: an
answer, or `{"answer": ..., "match": ..., "tolerance": ...}`, compared as `analyze --expected`
does, by `otel_agent_trace/answers.py`), `max_steps: N`, `max_cost: C` (USD, with the team
file's `prices`). Against new runs of the same task (same run name, else same input hash), a case
also needs its old failure signature gone and no other failure mode. Tiers: `core` must pass
100%, `regular` at least `regular_threshold` (team file, default 0.9), `explore` is reported only.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from otel_agent_trace.json_text import parse_json_or_text
from otel_agent_trace.semconv import GEN_AI_TOOL_CALL_ARGUMENTS, GEN_AI_TOOL_CALL_RESULT, GEN_AI_TOOL_NAME
from otel_agent_trace.regress.cases import Case, RegressError, analyzed, failure_signature, input_hash, load_cases, replay_of, run_name

SUMMARY_FILE = ".regress-summary.json"
DEFAULT_THRESHOLD = 0.9
TOOL_ERRORS = ("tool_exception", "tool_error_result", "tool_empty_result", "tool_timeout")
KNOWN = ("no_failure", "no_unhandled_tool_error", "tool_never_empty_arguments", "no_fabricated_value",
         "final_answer_fields", "expected_answer", "max_steps", "max_cost")


@dataclass
class Result:
    case: Case
    status: str  # pass | fail | skip
    problems: list[str] = field(default_factory=list)
    failure_modes: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        head = f"case {self.case.name} [{self.case.tier}]"
        return f"{head}: {'; '.join(self.problems)}" if self.problems else f"{head}: {self.status}"


@dataclass
class Team:
    rules: list | None = None
    assertions: dict[str, Any] = field(default_factory=dict)
    prices: dict[str, Any] = field(default_factory=dict)
    threshold: float = DEFAULT_THRESHOLD


def load_team(path: str | None) -> Team:
    if not path:
        return Team()
    from otel_agent_trace.analyzer.critical_rules import RulesError, load_config, load_rules

    try:
        rules, config = load_rules(path), load_config(path)
    except RulesError as exc:
        raise RegressError(str(exc)) from None
    config = config if isinstance(config, dict) else {}
    assertions = config.get("assert") or {}
    _known(path, assertions)
    return Team(rules, assertions, config.get("prices") or {}, float(config.get("regular_threshold", DEFAULT_THRESHOLD)))


def _known(where: str, assertions: Any) -> None:
    if not isinstance(assertions, dict):
        raise RegressError(f"{where}: \"assert\" must be an object")
    unknown = sorted(set(assertions) - set(KNOWN))
    if unknown:
        raise RegressError(f"{where}: unknown assertion(s) {', '.join(unknown)} (known: {', '.join(KNOWN)})")


def check_case(case: Case, team: Team, against: list[tuple[Any, Any]] | None = None) -> Result:
    """One case: its own trace, or (with `against`) the new runs of the same task."""
    assertions = {"no_failure": True, **team.assertions, **(case.meta.get("assert") or {})}
    _known(os.path.join(case.directory, "case.json"), assertions)
    if against is None:
        runs = analyzed([case.trace], rules=team.rules)
        if not runs:
            raise RegressError(f"{case.trace}: no agent run")
    else:
        runs = [pair for pair in against if _same_task(case, pair[0].run)]
        if not runs:
            return Result(case, "skip", ["no new run of this task"])
    problems: list[str] = []
    modes: list[str] = []
    for finding, summary in runs:
        report = summary.data
        signature = failure_signature(report)
        if signature is not None:
            modes.append(" | ".join(signature))
        if against is not None:
            if signature is not None and signature == case.signature:
                problems.append(f"the old failure still occurs ({' | '.join(signature)})")
            elif signature is not None:
                problems.append(f"a new failure mode ({' | '.join(signature)})")
        problems += [p for p in _assertions(assertions, finding.run, report, summary.metrics, team) if p not in problems]
    return Result(case, "fail" if problems else "pass", problems, modes)


def _same_task(case: Case, run: Any) -> bool:
    """A replay of the case's run; else the same input (first user message) when both are known,
    else the same run name."""
    if case.meta.get("trace_id") and replay_of(run) == case.meta["trace_id"]:
        return True
    wanted, got = case.meta.get("input_hash"), input_hash(run)
    if wanted and got:
        return wanted == got
    name = case.meta.get("run_name")
    return bool(name) and run_name(run) == name


def _assertions(a: dict[str, Any], run: Any, report: dict[str, Any], metrics: Any, team: Team) -> list[str]:
    out: list[str] = []
    recovered = {r["span_id"] for r in report.get("recovered") or ()}
    if a.get("no_unhandled_tool_error"):
        for error in _occurrences(report):
            if error.get("error_type") in TOOL_ERRORS and error["span_id"] not in recovered:
                out.append(_tool_error(run, error))
    for name in a.get("tool_never_empty_arguments") or ():
        for span in run.tools:
            if (span.attributes.get(GEN_AI_TOOL_NAME) or span.name.split(" ", 1)[-1]) == name and \
                    _empty(parse_json_or_text(span.attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS))):
                out.append(f"tool {name} called with empty arguments at step {run.step_index_of(span)}")
    if a.get("no_fabricated_value"):
        for error in _occurrences(report):
            if error.get("error_type") == "fabricated_value":
                out.append(f"fabricated value at step {error.get('step_index')}")
    fields = a.get("final_answer_fields") or ()
    if fields:
        answer = _final_answer(run)
        parsed = parse_json_or_text(answer) if answer else None
        missing = [f for f in fields if not isinstance(parsed, dict) or f not in parsed]
        if missing:
            out.append(f"final answer lacks field(s) {', '.join(missing)}")
    if a.get("expected_answer") is not None:
        out += _expected_answer(a["expected_answer"], run)
    if a.get("max_steps") is not None and report["steps"] > int(a["max_steps"]):
        out.append(f"{report['steps']} steps, at most {a['max_steps']} allowed")
    if a.get("max_cost") is not None:
        from otel_agent_trace.analyzer.metrics import run_cost

        cost = run_cost(metrics.per_model, team.prices) if team.prices else None
        if cost is None:
            out.append("max_cost needs a price table (\"prices\" in the rules file)")
        elif cost > float(a["max_cost"]):
            out.append(f"cost ${cost:.4f} over ${float(a['max_cost']):.4f}")
    if a.get("no_failure") and report["status"] == "failed" and not out:
        out.append(_failure(report))
    elif a.get("no_failure") and report["status"] == "failed":
        out += [f"rule {r['rule_id']}" for r in report.get("rules") or () if f"rule {r['rule_id']}" not in out]
    return out


def _failure(report: dict[str, Any]) -> str:
    origin, critical = report.get("origin") or {}, report.get("critical") or {}
    parts = []
    if origin:
        where = f"tool {origin['tool']}" if origin.get("tool") else origin.get("span_name")
        parts.append(f"{where}: {origin.get('error_type')} at step {origin.get('step_index')}")
    elif critical:
        parts.append(f"{critical.get('error_type')}: {critical.get('description')}")
    parts += [f"rule {r['rule_id']}" for r in report.get("rules") or ()]
    return "; ".join(parts) or "the run failed"


def _occurrences(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every occurrence of the run's `errors[]` (an entry folds the repeats of one error), each
    with its entry's keys: an assertion names each place an error occurred, as before folding."""
    return [error | occurrence for error in report.get("errors") or () for occurrence in error.get("occurrences") or [{}]]


def _tool_error(run: Any, error: dict[str, Any]) -> str:
    span = run.spans.get(error["span_id"])
    name = (span.attributes.get(GEN_AI_TOOL_NAME) if span else None) or error.get("span_name")
    result = span.attributes.get(GEN_AI_TOOL_CALL_RESULT) if span else None
    kind = error.get("error_type")
    if kind == "tool_empty_result":
        what = f"returned {_short(result) if result is not None else 'nothing'}"
    elif kind == "tool_error_result":
        what = f"returned an error ({_short(result)})"
    elif kind == "tool_timeout":
        what = "timed out"
    else:
        what = f"raised ({span.status_message if span else ''})"
    return f"tool {name} {what} at step {error.get('step_index')}"


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _empty(arguments: Any) -> bool:
    if arguments in (None, "", [], {}):
        return True
    return isinstance(arguments, dict) and all(v in (None, "", [], {}) for v in arguments.values())


def _final_answer(run: Any) -> str | None:
    from otel_agent_trace.analyzer.expected import final_answer

    return final_answer(run)


def _expected_answer(wanted: Any, run: Any) -> list[str]:
    """`expected_answer`: the final answer compared as `analyze --expected` compares it."""
    from otel_agent_trace import answers

    spec = wanted if isinstance(wanted, dict) else {"answer": wanted}
    how, tolerance = str(spec.get("match", "auto")), spec.get("tolerance")
    try:
        answers.check(spec.get("answer"), how, tolerance)
    except ValueError as exc:
        raise RegressError(f"expected_answer: {exc}") from None
    verdict = answers.compare(spec["answer"], _final_answer(run), how, tolerance)
    return [] if verdict.ok else [f"wrong answer: {verdict.evidence} ({verdict.how} match)"]


@dataclass
class Summary:
    results: list[Result]
    rates: dict[str, dict[str, Any]]
    new_modes: list[str]
    gates_ok: bool


def regress(directory: str, rules: str | None = None, against: list[str] | None = None) -> Summary:
    team = load_team(rules)
    cases = load_cases(directory)
    if not cases:
        raise RegressError(f"{directory}: no case (save one with `otel-agent-trace save`)")
    new_runs = analyzed(list(against), rules=team.rules) if against else None
    results = [check_case(c, team, new_runs) for c in cases]
    rates: dict[str, dict[str, Any]] = {}
    for tier in ("core", "regular", "explore"):
        counted = [r for r in results if r.case.tier == tier and r.status != "skip"]
        passed = sum(1 for r in counted if r.status == "pass")
        rates[tier] = {"passed": passed, "checked": len(counted), "rate": round(passed / len(counted), 4) if counted else None}
    gates_ok = all(rates[t]["rate"] in (None, 1.0) for t in ("core",)) and \
        (rates["regular"]["rate"] is None or rates["regular"]["rate"] >= team.threshold)
    modes = sorted({m for r in results for m in r.failure_modes})
    last_path = os.path.join(directory, SUMMARY_FILE)
    last = _read_json(last_path)
    new_modes = [m for m in modes if m not in set(last.get("failure_modes") or ())] if last else modes
    summary = Summary(results, rates, new_modes, gates_ok)
    with open(last_path, "w", encoding="utf-8") as handle:
        json.dump({"rates": rates, "failure_modes": modes, "threshold": team.threshold,
                   "results": {r.case.name: r.status for r in results}}, handle, indent=2)
        handle.write("\n")
    return summary


def _read_json(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
        return value if isinstance(value, dict) else {}
    except (OSError, ValueError):
        return {}


def render(summary: Summary, threshold: float | None = None) -> str:
    lines = [f"{r.status.upper():4}  {r.message}" for r in summary.results]
    lines.append("")
    for tier, rate in summary.rates.items():
        shown = "-" if rate["rate"] is None else f"{rate['rate']:.0%}"
        gate = {"core": "must be 100%", "regular": "gate", "explore": "reported only"}[tier]
        lines.append(f"{tier:8} {rate['passed']}/{rate['checked']} passed ({shown}; {gate})")
    lines.append("new failure modes since the last run: " + (", ".join(summary.new_modes) if summary.new_modes else "none"))
    lines.append("regression set: " + ("PASS" if summary.gates_ok else "FAIL"))
    return "\n".join(lines)
