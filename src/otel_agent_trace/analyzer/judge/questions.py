"""The judge's questions and the JSON its answers must be.

Every question shows the task, how the run failed, and the run's steps (each with its new
input, its output and its tool results); it names the steps asked about. Three kinds, one per
strategy move (Who&When, arXiv 2505.00212): `verdict` (which of these steps holds the decisive
mistake), `step` (is this step the decisive mistake), `half` (is the decisive mistake in the
first or the second half of these steps). Each answer is a JSON object; `parse` checks it
against its kind's schema and returns None for anything else (the caller counts it malformed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from otel_agent_trace.analyzer.judge.dossier import Dossier

# TRAIL's taxonomy (arXiv 2505.08638), its 21 leaves; "Other" when none fits
CATEGORIES = (
    "Language-only", "Tool-related", "Poor Information Retrieval", "Tool Output Misinterpretation",
    "Incorrect Problem Identification", "Tool Selection Errors", "Formatting Errors", "Instruction Non-compliance",
    "Tool Definition Issues", "Environment Setup Errors", "Rate Limiting", "Authentication Errors", "Service Errors",
    "Resource Not Found", "Resource Exhaustion", "Timeout Issues", "Context Handling Failures", "Resource Abuse",
    "Goal Deviation", "Task Orchestration", "Incorrect Memory Usage", "Other",
)
VERDICT, STEP, HALF = "judge_verdict", "judge_step", "judge_half"

SYSTEM = (
    "You are an expert debugging failed LLM agent runs. A run failed; find the decisive mistake: the earliest "
    "step whose error, if fixed, would have let the run succeed. Steps are numbered from 0. Answer only with the "
    "JSON object asked for. Categories (TRAIL taxonomy): " + ", ".join(CATEGORIES) + "."
)

_BLAME = {"agent": {"type": "string"}, "category": {"type": "string", "enum": list(CATEGORIES)},
          "reason": {"type": "string"}}
SCHEMAS: dict[str, dict[str, Any]] = {
    VERDICT: {"type": "object", "additionalProperties": False, "required": ["step", "agent", "category", "reason"],
              "properties": {"step": {"type": "integer"}, **_BLAME}},
    STEP: {"type": "object", "additionalProperties": False, "required": ["decisive", "agent", "category", "reason"],
           "properties": {"decisive": {"type": "boolean"}, **_BLAME}},
    HALF: {"type": "object", "additionalProperties": False, "required": ["half", "reason"],
           "properties": {"half": {"type": "string", "enum": ["first", "second"]}, "reason": {"type": "string"}}},
}
_SHAPE = {VERDICT: '{"step": <integer>, "agent": "...", "category": "...", "reason": "..."}',
          STEP: '{"decisive": true|false, "agent": "...", "category": "...", "reason": "..."}',
          HALF: '{"half": "first"|"second", "reason": "..."}'}


@dataclass(frozen=True)
class Question:
    kind: str  # VERDICT | STEP | HALF
    messages: list[dict[str, str]]


# the log's size in a question: past it, the steps not asked about are shortened (a long run must
# still fit the judge's context window; the budget bounds what all questions cost together)
LOG_CHARS = 48_000
_SHORT_FIELD = 160  # characters of each field of a step not asked about, in a shortened log


def _log(dossier: Dossier, asked: list[int], upto: int | None = None) -> str:
    """The task, the failure and the steps (up to `upto`). Over `LOG_CHARS`, shortened until it
    fits: the steps not in `asked` cut to `_SHORT_FIELD` characters a field, then to their
    header line, then every step cut (and the log's end kept)."""
    steps = dossier.steps if upto is None else dossier.steps[: upto + 1]
    head = f"# Task\n{dossier.task}\n\n# How the run failed\n{dossier.failure}\n\n# Steps\n\n"
    focus = set(asked)
    levels = (lambda s: s.render(),
              lambda s: s.render() if s.position in focus else s.render(_SHORT_FIELD),
              lambda s: s.render() if s.position in focus else s.render(_SHORT_FIELD).split("\n", 1)[0],
              lambda s: s.render(_SHORT_FIELD) if s.position in focus else s.render(_SHORT_FIELD).split("\n", 1)[0])
    for render in levels:
        text = head + "\n\n".join(render(s) for s in steps)
        if len(text) <= LOG_CHARS:
            return text
    return head + "(earlier steps left out)\n\n" + text[len(head):][-(LOG_CHARS - len(head)):]


def _question(kind: str, dossier: Dossier, ask: str, asked: list[int], upto: int | None = None) -> Question:
    user = f"{_log(dossier, asked, upto)}\n\n# Question\n{ask}\nAnswer as JSON: {_SHAPE[kind]}"
    return Question(kind, [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}])


def verdict(dossier: Dossier, steps: list[int]) -> Question:
    """All at once: which of `steps` holds the decisive mistake."""
    return _question(VERDICT, dossier, f"Which of the steps {_names(steps)} made the decisive mistake? "
                                       f"Answer with one of these step numbers.", steps)


def step(dossier: Dossier, position: int) -> Question:
    """Step by step: is step `position` the decisive mistake (shown the log up to it)."""
    return _question(STEP, dossier, f"Did step {position} make the decisive mistake of this run?", [position],
                     upto=position)


def half(dossier: Dossier, first: list[int], second: list[int]) -> Question:
    """Binary search: is the decisive mistake among `first` or `second` (the log up to the last of them)."""
    return _question(HALF, dossier, f"Is the decisive mistake in the first half, steps {_names(first)}, "
                                    f"or in the second half, steps {_names(second)}?", first + second,
                     upto=second[-1])


def _names(steps: list[int]) -> str:
    if len(steps) > 2 and steps == list(range(steps[0], steps[-1] + 1)):
        return f"{steps[0]} to {steps[-1]}"
    return ", ".join(str(s) for s in steps)


def response_format(kind: str, mode: str) -> dict[str, Any]:
    """The request's `response_format`: the kind's strict JSON schema, or `json_object`."""
    if mode == "json_object":
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": {"name": kind, "strict": True, "schema": SCHEMAS[kind]}}


def parse(kind: str, content: str | None) -> dict[str, Any] | None:
    """The answer as a dict when it is a JSON object of the kind's schema, else None. A fenced
    block (```json ... ```) is read too: endpoints without structured outputs often send one."""
    if not content:
        return None
    text = content.strip()
    if text.startswith("```"):
        text = text.strip("`")
        text = text[4:] if text.lower().startswith("json") else text
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    schema = SCHEMAS[kind]
    for name in schema["required"]:
        if name not in value or not _fits(value[name], schema["properties"][name]):
            return None
    return value


def category(value: str) -> str:
    """A category as TRAIL names it (case-insensitive), else "Other"."""
    return _CATEGORY_NAMES.get(value.strip().lower(), "Other")


_CATEGORY_NAMES = {c.lower(): c for c in CATEGORIES}


def _fits(value: Any, prop: dict[str, Any]) -> bool:
    kind = prop["type"]
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "boolean":
        ok = isinstance(value, bool)
    else:
        ok = isinstance(value, str)
    # (a category outside the taxonomy is kept as "Other": `category`)
    return ok and ("enum" not in prop or prop is _BLAME["category"] or value in prop["enum"])
