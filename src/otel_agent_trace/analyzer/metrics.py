"""Fleet metrics over every run analysed (seed 000's list).

* `steps_per_run`: mean, p50, p95 (nearest-rank percentiles).
* `loop_abort_rate`: failed runs whose failure involves a loop (a `loop_detected` or
  `budget_exceeded` anywhere in the run, or the LOOP_DETECTED / BUDGET_EXCEEDED rule fired) / runs.
* `tool_error_rate`: per tool name, executions whose outcome is not ok / executions (retries that
  succeeded count their failed attempts too: the tool did fail).
* `wrong_tool_rate` (rule-based): tool calls that were `unknown_tool`, `invalid_arguments` (recorded
  or derived: non-JSON arguments), or a repeat of an identical earlier call in the same run, over
  all tool calls. Repeating a call that failed is a retry and is not counted.
* `trace_capture_rate`: runs whose step chain is complete (at least one step, indices 0..n-1 with
  no gap or duplicate, every tool under a step) / runs seen.
* `tokens_per_run`: mean input and output tokens (sum of `gen_ai.usage.*` over chat spans).
* `cost_per_run`: mean cost when a price table is given (`prices`: model -> USD per million
  input/output tokens), else the recorded `agent_trace.usage.cost_usd` summed per run (when
  every chat span with tokens has one, `recorded_cost`), else null.
* `failures`: failed runs counted by origin error type and by bug class.

`reliability` (seed 003):
* `task_success_rate`: runs with status `ok` / runs (failed and suspect runs are not successes);
* `partial_completion`: in failed runs, steps that succeeded (neither an origin nor tainted by one)
  / their steps;
* `recoverability`: per error type, origins a retry recovered / origins (suspicions are no
  errors here: nothing could retry them);
* `verifiability`: final answers whose numbers and ids all trace back to tool results (found in
  them, or derived from their numbers: `detectors.fabricated_values`) / final answers that hold
  any such value (answers without content or without values are not counted);
* `cost_within_budget`: runs whose cost (the price table's) is at most `--budget-usd` / runs
  with a cost; null without a budget or without costs.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Iterable, Mapping

from otel_agent_trace.analyzer.lifecycle import SUSPICION, call_key_of, count
from otel_agent_trace.analyzer.locate import Finding
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.prices import Rates, as_table, lookup
from otel_agent_trace.semconv import (
    COST_USD,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
    GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    NORMALIZED_FROM,
    STEP_INDEX,
)
from otel_agent_trace.vocabulary import ErrorType

LOOP_TYPES = {ErrorType.LOOP_DETECTED.value, ErrorType.BUDGET_EXCEEDED.value}
WRONG_TOOL_TYPES = {ErrorType.UNKNOWN_TOOL.value, ErrorType.INVALID_ARGUMENTS.value}


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return float(ordered[rank - 1])


def complete_chain(run: Run) -> bool:
    """Steps numbered 0..n-1 and every tool attached to one: below a step span (ours), or, on a
    normalized foreign trace (where the decision is the LLM span, a sibling of the tools it
    called), decided by one (the step index normalization derived from the decision)."""
    steps = run.steps
    if not steps:
        return False
    indices = [s.attributes.get(STEP_INDEX) for s in steps]
    if indices != list(range(len(indices))):
        return False
    step_ids = run.step_ids
    spans = run.spans
    for tool in run.tools:
        if tool.parent_id in step_ids:  # (the common case: a tool directly under its step)
            continue
        if NORMALIZED_FROM in tool.attributes and tool.attributes.get(STEP_INDEX) in indices:
            continue
        node = spans.get(tool.parent_id or "")
        while node is not None and node.span_id not in step_ids:
            node = spans.get(node.parent_id or "")
        if node is None:
            return False
    return True


def tokens(run: Run) -> tuple[int, int, dict[str, tuple[int, int, int, int]]]:
    """(input, output, model -> (input, output, cache read, cache write)) of a run's model calls."""
    return chat_usage(run)[:3]


def chat_usage(run: Run) -> tuple[int, int, dict[str, tuple[int, int, int, int]], float | None]:
    """`tokens` and `recorded_cost` of a run, in one pass over its model calls (each reads the
    same attributes of the same spans)."""
    total_in = total_out = 0
    per_model: dict[str, list[int]] = {}
    cost_total, priced, unpriced = 0.0, False, False
    for span in run.chats:  # the model calls (`runs.is_chat_span`), in subtree order
        get = span.attributes.get
        tin = get(GEN_AI_USAGE_INPUT_TOKENS)
        if type(tin) is not int:  # (`token_count`, without a call in the common case)
            tin = token_count(tin)
        tout = get(GEN_AI_USAGE_OUTPUT_TOKENS)
        if type(tout) is not int:
            tout = token_count(tout)
        read, write = get(GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS), get(GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS)
        read = read if type(read) is int else token_count(read) if read is not None else 0
        write = write if type(write) is int else token_count(write) if write is not None else 0
        model = get(GEN_AI_RESPONSE_MODEL) or get(GEN_AI_REQUEST_MODEL) or ""
        if type(model) is not str:
            model = str(model)
        total_in += tin
        total_out += tout
        counts = per_model.get(model)
        if counts is None:
            per_model[model] = [tin, tout, read, write]
        else:
            counts[0] += tin
            counts[1] += tout
            counts[2] += read
            counts[3] += write
        if not unpriced:
            cost = get(COST_USD)
            if isinstance(cost, (int, float)) and not isinstance(cost, bool):
                cost_total += cost
                priced = True
            elif tin or tout:
                unpriced = True  # a call that used tokens was not priced: no sum is the run's cost
    recorded = round(cost_total, 9) if priced and not unpriced else None
    return total_in, total_out, {k: (v[0], v[1], v[2], v[3]) for k, v in per_model.items()}, recorded


def token_count(value: Any) -> int:
    """A recorded token count as an int (0 when missing or unreadable)."""
    if type(value) is int:
        return value  # the common case, without the try
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def recorded_cost(run: Run) -> float | None:
    """The sum of the run's recorded chat costs; None unless every model call that used tokens
    was priced (a partial sum would read as the whole run's cost)."""
    return chat_usage(run)[3]


def cost_of(m: "RunMetrics", prices: dict[str, Any] | None) -> float | None:
    """A run's cost: the user's price table overrides the recorded costs."""
    cost = run_cost(m.per_model, prices) if prices else None
    return cost if cost is not None else m.recorded_cost


def run_cost(per_model: dict[str, tuple[int, ...]], prices: Mapping[str, Rates]) -> float | None:
    """A run's cost from a user price table (`prices.table`); None if a model with tokens is not in it."""
    cost = 0.0
    prices = as_table(prices)
    for model, counts in per_model.items():
        rates = lookup(prices, model)
        if rates is None:
            if counts[0] or counts[1]:
                return None
            continue
        cost += rates.cost(*counts)
    return cost


@dataclass(slots=True)
class RunMetrics:
    """What one run contributes to the fleet metrics: all `compute` needs once the run is dropped."""

    steps: int
    tool_calls: dict[str, int]  # tool name -> executions
    tool_errors: dict[str, int]  # tool name -> executions counted as tool errors (only names with one)
    wrong: int
    failed: bool
    loopish: bool
    origin_error_type: str | None
    bug_class: str | None
    captured: bool
    tokens_in: int
    tokens_out: int
    per_model: dict[str, tuple[int, int, int, int]]  # model -> (input, output, cache read, cache write)
    status: str = "ok"  # the report's: ok | failed | suspect
    steps_ok: int = 0  # steps neither an origin nor tainted by one
    origins_by_type: dict[str, int] | None = None
    recovered_by_type: dict[str, int] | None = None
    verifiable: bool | None = None  # the final answer's values all trace back to tool results
    recorded_cost: float | None = None  # `recorded_cost`: the run's chat spans' cost_usd summed

    def __reduce__(self) -> tuple:
        """Pickled as its fields, in order (see `analysis.RunSummary.__reduce__`)."""
        return RunMetrics, _FIELDS(self)


_FIELDS = attrgetter(*RunMetrics.__slots__)  # (a slots dataclass's slots: its fields, in order)


def run_metrics(f: Finding) -> RunMetrics:
    """Reduce one finding to its metrics inputs (the streaming CLI keeps only this per run)."""
    run, life = f.run, f.lifecycle
    errors: dict[str, int] = {}
    wrong = 0
    seen_calls: set[tuple[str, str]] = set()
    names = run.tool_names
    per_name = life.tool_counts if life and life.tool_counts is not None else count(names)
    states = life.states if life else {}
    origins = life.origins if life else ()
    known_keys = life.call_keys if life else {}  # (`Lifecycle.call_key`'s, most computed by `compute` already)
    if not states and not origins and len(per_name) < len(names):  # no tool failed, some name repeats
        wrong = _repeated_calls(run, names, per_name, known_keys, life)
    for tool, name in zip(run.tools, names) if states or origins else ():
        tool_id = tool.span_id
        st = states.get(tool_id)
        etype = st.error_type if st is not None else None
        origin = tool_id in origins
        if origin and etype not in WRONG_TOOL_TYPES:
            errors[name] = errors.get(name, 0) + 1
        # a tool called once cannot repeat a call: its arguments need no canonical form
        if per_name[name] > 1:
            key = known_keys.get(tool_id) or (life.call_key(tool, name) if life else call_key_of(tool))
        else:
            key = (name, "")
        if etype in WRONG_TOOL_TYPES or key in seen_calls:
            wrong += 1
        if not origin:
            seen_calls.add(key)  # repeating a call that failed is a retry, not a wrong call
    loopish = False
    if f.failed:
        # (a span without a lifecycle state has no error type: only the states need a look)
        loopish = (life is not None and any(st.error_type in LOOP_TYPES for sid, st in life.states.items()
                                            if sid in run.spans)) or \
            any(x.rule.rule_id in ("LOOP_DETECTED", "BUDGET_EXCEEDED") for x in f.fired)
    tin, tout, per_model, cost = chat_usage(run)
    status = "failed" if f.failed else "suspect" if f.answer_suspect else "ok"
    origins_by_type: dict[str, int] = {}
    recovered_by_type: dict[str, int] = {}
    tainted = life.tainted if life else set()
    if origins:
        recovered_ids = {s.span_id for s in f.recovered}
        for sid in origins:
            st = states.get(sid)
            if st is not None and SUSPICION in st.flags:
                continue  # a suspicion (an answer without tools, say) is no error a retry could recover
            etype = st.error_type if st is not None and st.error_type else "unknown"
            origins_by_type[etype] = origins_by_type.get(etype, 0) + 1
            if sid in recovered_ids:
                recovered_by_type[etype] = recovered_by_type.get(etype, 0) + 1
    if origins or tainted:
        steps_ok = sum(1 for s in run.steps if s.span_id not in origins and s.span_id not in tainted)
    else:  # (a run without an error: every step is ok, counted without a look)
        steps_ok = len(run.steps)
    return RunMetrics(len(run.steps), per_name, errors, wrong, f.failed, bool(loopish), f.origin_error_type, f.bug_class,
                      complete_chain(run), tin, tout, per_model, status, steps_ok, origins_by_type, recovered_by_type,
                      life.verifiable if life else None, cost)


def _repeated_calls(run: Run, names: list[str], per_name: dict[str, int], known_keys: dict[str, tuple[str, str]],
                    life: Any) -> int:
    """`run_metrics`' wrong calls of a run no tool of which failed or was flagged: each call that
    repeats an earlier one (the calls less the distinct ones; a name called once repeats none)."""
    keys = [known_keys.get(tool.span_id) or (life.call_key(tool, name) if life else call_key_of(tool))
            for tool, name in zip(run.tools, names) if per_name[name] > 1]
    return len(keys) - len(set(keys))


def compute(findings: Iterable[Finding], prices: dict[str, Any] | None = None) -> dict[str, Any]:
    return combine([run_metrics(f) for f in findings], prices)


def combine(per_run: Iterable[RunMetrics], prices: dict[str, Any] | None = None,
            budget_usd: float | None = None) -> dict[str, Any]:
    """The fleet metrics from every run's `RunMetrics`."""
    per_run = list(per_run)
    out = _fleet(per_run, prices)
    out["reliability"] = reliability(per_run, prices, budget_usd)
    return out


def reliability(per_run: list[RunMetrics], prices: dict[str, Any] | None, budget_usd: float | None) -> dict[str, Any]:
    """Seed 003's reliability metrics (see the module docstring)."""
    runs = len(per_run)
    failed = [m for m in per_run if m.status == "failed"]
    failed_steps = sum(m.steps for m in failed)
    origins: Counter[str] = Counter()
    recovered: Counter[str] = Counter()
    for m in per_run:
        origins.update(m.origins_by_type or {})
        recovered.update(m.recovered_by_type or {})
    answers = [m.verifiable for m in per_run if m.verifiable is not None]
    costs = [c for c in (cost_of(m, prices) for m in per_run) if c is not None]
    return {
        "task_success_rate": round(sum(m.status == "ok" for m in per_run) / runs, 4) if runs else 0.0,
        "partial_completion": round(sum(m.steps_ok for m in failed) / failed_steps, 4) if failed_steps else None,
        "recoverability": {t: {"errors": n, "recovered": recovered[t], "rate": round(recovered[t] / n, 4)}
                           for t, n in sorted(origins.items())},
        "verifiability": round(sum(answers) / len(answers), 4) if answers else None,
        "verifiable_answers": len(answers),
        "cost_within_budget": (round(sum(c <= budget_usd for c in costs) / len(costs), 4)
                               if budget_usd is not None and costs else None),
        "budget_usd": budget_usd,
    }


def _fleet(per_run: list[RunMetrics], prices: dict[str, Any] | None) -> dict[str, Any]:
    """Seed 000's fleet metrics."""
    steps = [m.steps for m in per_run]
    runs = len(per_run)
    tool_calls: Counter[str] = Counter()
    tool_errors: Counter[str] = Counter()
    wrong = total_calls = 0
    loop_aborts = captured = 0
    tin_all: list[int] = []
    tout_all: list[int] = []
    costs: list[float | None] = []
    by_type: Counter[str] = Counter()
    by_class: Counter[str] = Counter()
    for m in per_run:
        for name, calls in m.tool_calls.items():
            tool_calls[name] += calls
            total_calls += calls
        for name, errors in m.tool_errors.items():
            tool_errors[name] += errors
        wrong += m.wrong
        if m.failed:
            loop_aborts += m.loopish
            by_type[m.origin_error_type or "unknown"] += 1
            by_class[m.bug_class or "unknown"] += 1
        captured += m.captured
        tin_all.append(m.tokens_in)
        tout_all.append(m.tokens_out)
        costs.append(cost_of(m, prices))
    known_costs = [c for c in costs if c is not None]
    return {
        "runs": runs,
        "steps_per_run": {
            "mean": round(sum(steps) / runs, 3) if runs else 0.0,
            "p50": percentile(steps, 50),
            "p95": percentile(steps, 95),
        },
        "loop_abort_rate": round(loop_aborts / runs, 4) if runs else 0.0,
        "tool_error_rate": {name: {"calls": n, "errors": tool_errors[name], "rate": round(tool_errors[name] / n, 4)}
                            for name, n in sorted(tool_calls.items())},
        "wrong_tool_rate": round(wrong / total_calls, 4) if total_calls else 0.0,
        "tool_calls": total_calls,
        "trace_capture_rate": round(captured / runs, 4) if runs else 0.0,
        "tokens_per_run": {
            "input": round(sum(tin_all) / runs, 1) if runs else 0.0,
            "output": round(sum(tout_all) / runs, 1) if runs else 0.0,
        },
        "cost_per_run": round(sum(known_costs) / len(known_costs), 6) if known_costs and len(known_costs) == runs else None,
        "failures": {
            "by_origin_error_type": dict(sorted(by_type.items())),
            "by_bug_class": dict(sorted(by_class.items())),
        },
    }
