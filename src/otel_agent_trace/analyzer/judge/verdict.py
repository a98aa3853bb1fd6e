"""A verdict written into the run's report entry (the JSON contract, report/json_report.py):
the judged place becomes the first place the entry names.

- `errors[]`: the entry located at the judged step moves to the front; when none is, a new
  entry (`error_type` `judged_mistake`, `suspicion: true`, `derived: true`) is put first. Either
  carries `judge` (model, strategy, category, reason, agent).
- `origin`: when the run has no proven origin (none, or a suspicion), the judged place; it
  carries `judged: true`. A proven origin is never replaced (such runs are not judged).
- `evidence`: a first line naming the judge, its strategy, the step, the category, the reason.
- `judge` on the entry: the verdict, or why there is none.
"""

from __future__ import annotations

from typing import Any

from otel_agent_trace.analyzer.judge.dossier import Dossier
from otel_agent_trace.analyzer.judge.strategies import Verdict

JUDGED_ERROR = "judged_mistake"
# a TRAIL category's bug class (classify.py's classes): system execution is the tool's or the
# environment's, context handling the prompt's, the rest the model's decision
_TOOL = {"Tool Definition Issues", "Environment Setup Errors", "Rate Limiting", "Authentication Errors",
         "Service Errors", "Resource Not Found", "Resource Exhaustion", "Timeout Issues"}
_PROMPT = {"Context Handling Failures", "Incorrect Memory Usage"}


def bug_class(category: str) -> str | None:
    if category == "Other":
        return None
    return "tool" if category in _TOOL else "prompt" if category in _PROMPT else "model_decision"


def unproven(entry: dict[str, Any]) -> bool:
    """A failed run whose first named place is not proven: no origin, or one only suspected."""
    if entry.get("status") != "failed":
        return False
    origin = entry.get("origin")
    if origin is None:
        return True
    suspected = {e["span_id"] for e in entry.get("errors") or () if e.get("suspicion")}
    return origin["span_id"] in suspected or bool(origin.get("suspicion"))


def apply(entry: dict[str, Any], dossier: Dossier, verdict: Verdict, model: str, strategy: str) -> None:
    place = dossier.steps[verdict.position]
    judge = {"model": model, "strategy": strategy, "span_id": place.span_id, "step_index": place.step_index,
             "agent": verdict.agent or place.agent, "category": verdict.category, "reason": verdict.reason,
             "requests": verdict.requests, "cached": verdict.cached}
    errors = entry.setdefault("errors", [])
    at = _entry_at(errors, dossier, verdict.position)
    if at is None:
        error = _new_error(place, judge, verdict, model, place.agent or entry.get("agent"))
    else:
        error = errors.pop(at)
        error["judge"] = judge
    errors.insert(0, error)
    if unproven(entry):
        before = entry.get("origin")
        entry["origin"] = {"span_id": error["span_id"], "step_index": error["step_index"],
                           "tool": before.get("tool") if before and before["span_id"] == error["span_id"] else None,
                           "error_type": error["error_type"], "span_name": error["span_name"],
                           "agent": place.agent or entry.get("agent"), "judged": True}
        entry["chain"] = []
        if bug_class(verdict.category):
            entry["bug_class"] = bug_class(verdict.category)
    where = f"step {place.step_index if place.step_index is not None else verdict.position} ({place.name}"
    where += f", agent {place.agent})" if place.agent else ")"
    entry["evidence"] = [f"judge {model} ({strategy.replace('_', ' ')}): the decisive mistake is at {where}: "
                         f"{verdict.category}: {verdict.reason}", *(entry.get("evidence") or ())]
    entry["judge"] = {"verdict": judge}


def _entry_at(errors: list[dict[str, Any]], dossier: Dossier, position: int) -> int | None:
    """The first `errors[]` entry placed at the step at `position` (its span or any of its places)."""
    for i, error in enumerate(errors):
        spans = [*(error.get("located_at") or ()), error["span_id"]]
        if any(dossier.places.get(span) == position for span in spans):
            return i
    return None


def _new_error(place: Any, judge: dict[str, Any], verdict: Verdict, model: str, agent: str | None) -> dict[str, Any]:
    """An `errors[]` entry of the judged step, with the keys every entry has (json_report._error)."""
    reason = f"judged by {model}: {verdict.category}: {verdict.reason}"
    occurrence = {"span_id": place.span_id, "step_index": place.step_index, "agent": agent,
                  "start_time_unix_nano": place.start_ns,
                  "decision_span_id": place.span_id, "read_by_span_id": None, "located_at": [place.span_id],
                  "reason": reason}
    return {"span_id": place.span_id, "step_index": place.step_index, "span_name": place.name, "agent": agent,
            "error_type": JUDGED_ERROR, "derived": True, "reason": reason, "suspicion": True,
            "bug_class": bug_class(verdict.category), "start_time_unix_nano": place.start_ns,
            "decision_span_id": place.span_id, "read_by_span_id": None, "located_at": [place.span_id],
            "exception_type": None, "count": 1, "occurrences": [occurrence], "judge": judge}
