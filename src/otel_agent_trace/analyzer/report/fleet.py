"""How a report of many runs stays readable: failed runs grouped by failure signature, a few
examples of each group in full, healthy runs counted. Shared by the HTML and terminal reports.

Up to DETAIL_ALL_RUNS runs, every run is shown in full; above, failed runs are grouped, every
failed run is still named (a row of its group), and EXAMPLES_PER_GROUP runs per group are shown in
full (4,466 runs gave a 64 MB page that took 34 s to load in headless Chromium, and ~18,000
mostly "ok" lines on a terminal for 8,955 runs)."""

from __future__ import annotations

from typing import Any

DETAIL_ALL_RUNS = 100
EXAMPLES_PER_GROUP = 3

Signature = tuple[str, str, str, str]


def signature(run: dict[str, Any]) -> Signature:
    """What makes two failed runs the same failure: rules fired, origin error type and where
    (the tool, or the kind of span without its step number), bug class."""
    rules = "+".join(dict.fromkeys(x["rule_id"] for x in run.get("rules") or ())) or "-"
    origin = run.get("origin") or {}
    where = origin.get("tool") or span_kind(origin.get("span_name") or "-")
    return rules, str(origin.get("error_type") or "-"), where, str(run.get("bug_class") or "-")


def span_kind(span_name: str) -> str:
    """A span's name without its step number (`Step 12` -> `Step`): what two steps share."""
    return " ".join(w for w in str(span_name).split() if not w.isdigit())


def repeated(run: dict[str, Any]) -> list[str]:
    """The run's `errors[]` entries that occurred more than once, one line each, as every report
    shows them: `invalid_arguments at PageDownTool, 10 times (steps 5, 8, 9)`."""
    out = []
    for e in run.get("errors") or ():
        if e.get("count", 1) > 1:
            steps = [o["step_index"] for o in e["occurrences"] if o.get("step_index") is not None]
            out.append(f"{e['error_type']} at {span_kind(e['span_name'])}"
                       + (f" ({e['exception_type']})" if e.get("exception_type") else "")
                       + f", {e['count']} times" + (f" (steps {', '.join(map(str, steps))})" if steps else ""))
    return out


def failure_groups(runs: list[dict[str, Any]]) -> dict[Signature, list[dict[str, Any]]]:
    """Failed runs by signature, largest group first (then by signature: a stable order)."""
    groups: dict[Signature, list[dict[str, Any]]] = {}
    for run in runs:
        if run["status"] == "failed":
            groups.setdefault(signature(run), []).append(run)
    return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def run_key(run: dict[str, Any]) -> tuple[str, str]:
    """A run's identity in a report (a trace may hold several runs)."""
    return run["trace_id"], run["run_span_id"]


def examples(groups: dict[Signature, list[dict[str, Any]]]) -> set[tuple[str, str]]:
    """The runs shown in full: the first EXAMPLES_PER_GROUP of each group."""
    return {run_key(r) for members in groups.values() for r in members[:EXAMPLES_PER_GROUP]}


def reliability_items(m: dict[str, Any]) -> list[tuple[str, str]]:
    """Seed 003's reliability metrics (`summary.metrics.reliability`) as (value, label) pairs, the
    way text, markdown and HTML all show them."""
    r = m.get("reliability")
    if not r:
        return []

    def pct(x: Any) -> str:
        return "n/a" if x is None else f"{x:.0%}"

    recov = r["recoverability"]
    errors = sum(v["errors"] for v in recov.values())
    recovered = sum(v["recovered"] for v in recov.values())
    per_type = ", ".join(f"{t} {v['recovered']}/{v['errors']}" for t, v in recov.items() if v["errors"])
    budget = "" if r.get("budget_usd") is None else f" (${r['budget_usd']:g})"
    return [(pct(r["task_success_rate"]), "task success rate"),
            (pct(r["partial_completion"]), "partial completion (steps that succeeded in failed runs)"),
            (f"{recovered}/{errors}", "errors recovered" + (f" ({per_type})" if per_type else "")),
            (pct(r["verifiability"]), f"verifiable final answers (of {r['verifiable_answers']} with numbers or ids)"),
            (pct(r["cost_within_budget"]), "runs within budget" + budget)]
