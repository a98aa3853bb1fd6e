"""`analyze --expected FILE`: the answers runs should have given, and the runs that did not.

The file is JSON Lines, one expectation per line: `"answer"` (text, a number, or a list of
accepted answers) and what it is the answer to, one of
- `"trace_id"`: the run(s) of that trace;
- `"task_id"`: runs whose span or resource carries that task id (`agent_trace.task.id`,
  `task.id`, `task_id`, or any attribute named `*.task_id` / `*.task.id`, e.g. `bench.task_id`);
- `"input"`: runs whose task (the run span's `input.value` / `gen_ai.input.messages`, else the
  first user message its first model call was given) is that text, normalised as answers are.
Optional: `"match"` (`auto`, `text`, `number`, `contains`, `regex`: see `otel_agent_trace/answers.py`,
the comparison `regress` uses too) and `"tolerance"` (numbers). Blank lines and lines starting
with `#` are skipped. A line that is not such an object is reported with file, line and reason,
and the other lines are used.

A top-level run an expectation names whose final answer (`final_answer`) does not match is
failed: error type `wrong_answer` on the run span, evidence "expected X, got Y"
(`ExpectedAnswers`, a verdict source: verdicts.py). A run no expectation names is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from otel_agent_trace import answers
from otel_agent_trace.analyzer import verdicts
from otel_agent_trace.analyzer.normalize.conventions import LLM, facts_of
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.json_text import parse_json_or_text
from otel_agent_trace.messages import semconv_messages
from otel_agent_trace.semconv import CONTEXT_NEW_MESSAGES, GEN_AI_INPUT_MESSAGES, GEN_AI_OUTPUT_MESSAGES, TASK_ID
from otel_agent_trace.vocabulary import ErrorType

WRONG_ANSWER = ErrorType.WRONG_ANSWER.value
_KEYS = ("trace_id", "task_id", "input")
_TASK_KEYS = (TASK_ID, "task.id", "task_id")


class ExpectedError(ValueError):
    """The expected-answers file cannot be used at all (unreadable): exit 2."""


@dataclass(frozen=True)
class Expectation:
    answer: Any
    how: str = "auto"
    tolerance: float | None = None
    line: int = 0


@dataclass
class ExpectedAnswers(verdicts.VerdictSource):
    """The expectations of one file, by trace id, task id and normalised input."""

    rule_id: str = "WRONG_ANSWER"
    description: str = "the final answer differs from the expected one (--expected)"
    match: dict[str, Any] = field(default_factory=lambda: {"error_type": WRONG_ANSWER, "span_kind": "run"})
    by_trace: dict[str, Expectation] = field(default_factory=dict)
    by_task: dict[str, Expectation] = field(default_factory=dict)
    by_input: dict[str, Expectation] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # "FILE:LINE: reason" of the lines not used

    @classmethod
    def load(cls, path: str) -> "ExpectedAnswers":
        try:
            with open(path, "rb") as handle:
                lines = handle.read().splitlines()
        except OSError as exc:
            raise ExpectedError(f"{path}: cannot read: {exc.strerror or exc}") from None
        source = cls()
        for number, raw in enumerate(lines, start=1):
            text = raw.strip()
            if not text or text.startswith(b"#"):
                continue
            try:
                source.add(orjson.loads(text), number)
            except orjson.JSONDecodeError as exc:
                source.problems.append(f"{path}:{number}: invalid JSON: {exc}")
            except ValueError as exc:
                source.problems.append(f"{path}:{number}: {exc}")
        return source

    def add(self, item: Any, line: int = 0) -> None:
        """One expectation (raises ValueError naming what is wrong with it)."""
        if not isinstance(item, dict):
            raise ValueError(f"expected an object, got {type(item).__name__}")
        if "answer" not in item and "expected" not in item:
            raise ValueError('no "answer"')
        answer = item.get("answer", item.get("expected"))
        how = str(item.get("match", "auto"))
        tolerance = item.get("tolerance")
        answers.check(answer, how, tolerance)
        keys = [k for k in _KEYS if item.get(k) not in (None, "")]
        if not keys:
            raise ValueError('names no run: give "trace_id", "task_id" or "input"')
        expectation = Expectation(answer, how, float(tolerance) if tolerance is not None else None, line)
        for key in keys:
            value = item[key]
            if key == "trace_id":
                self.by_trace[str(value).lower()] = expectation
            elif key == "task_id":
                self.by_task[str(value)] = expectation
            else:
                self.by_input[answers.normalise(value if isinstance(value, str) else orjson.dumps(value).decode())] = expectation

    def expectation(self, run: Run) -> Expectation | None:
        found = self.by_trace.get(run.trace_id)
        if found is None and self.by_task:
            task = task_id(run)
            found = self.by_task.get(task) if task is not None else None
        if found is None and self.by_input:
            text = run_input(run)
            found = self.by_input.get(answers.normalise(text)) if text is not None else None
        return found

    def verdicts(self, run: Run, top_level: bool) -> list[verdicts.Verdict]:
        if not top_level:
            return []
        wanted = self.expectation(run)
        if wanted is None:
            return []
        result = answers.compare(wanted.answer, final_answer(run), wanted.how, wanted.tolerance)
        if result.ok:
            return []
        return [verdicts.Verdict(WRONG_ANSWER, f"wrong answer: {result.evidence} ({result.how} match)",
                                 expected=wanted)]


def task_id(run: Run) -> str | None:
    """The task id the run span (or its resource) carries, if any."""
    for attributes in (run.root.attributes, run.root.resource):
        for key in _TASK_KEYS:
            if attributes.get(key) not in (None, ""):
                return str(attributes[key])
        for key, value in attributes.items():
            if key.endswith((".task_id", ".task.id")) and value not in (None, ""):
                return str(value)
    return None


def run_input(run: Run) -> str | None:
    """The task the run was given: the run span's input, else the first user message its steps'
    contexts showed (`agent_trace.context.new_messages`), else that of its first model call."""
    a = run.root.attributes
    if isinstance(a.get("input.value"), str):
        return a["input.value"]
    for message in semconv_messages(a.get(GEN_AI_INPUT_MESSAGES)):
        if message.role == "user" and message.content:
            return message.content
    for step in run.steps:  # our recorder: the messages each step's context showed first
        items = parse_json_or_text(step.attributes.get(CONTEXT_NEW_MESSAGES) or "[]")
        for item in items if isinstance(items, list) else ():
            message = item.get("message") if isinstance(item, dict) else None
            if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), str):
                return message["content"]
    for span in sorted(run.spans.values(), key=lambda s: (s.start_ns, s.span_id)):
        facts = facts_of(span)
        if facts is not None and facts.role == LLM:
            for message in facts.inputs:
                if message.role == "user" and message.content:
                    return message.content
            return None
    return None


def final_answer(run: Run) -> str | None:
    """The run's final answer: the run span's output (`output.value`, `gen_ai.output.messages`),
    else the last model output that called no tool, else the arguments of a final-answer tool."""
    from otel_agent_trace.analyzer.lifecycle.answers import FINAL_ANSWER_TOOL

    a = run.root.attributes
    if isinstance(a.get("output.value"), str) and a["output.value"]:
        return a["output.value"]
    for message in semconv_messages(a.get(GEN_AI_OUTPUT_MESSAGES)):
        if message.content and not message.tool_calls:
            return message.content
    ordered = sorted(run.spans.values(), key=lambda s: (s.start_ns, s.span_id))
    for span in reversed(ordered):
        facts = facts_of(span)
        if facts is None:
            continue
        if facts.role == LLM and facts.output_text and not facts.calls:
            return facts.output_text
        if facts.tool_name and FINAL_ANSWER_TOOL.match(facts.tool_name):
            arguments = parse_json_or_text(facts.arguments) if isinstance(facts.arguments, str) else facts.arguments
            if isinstance(arguments, dict) and len(arguments) == 1:
                return str(next(iter(arguments.values())))
            return None if arguments is None else str(arguments)
    return None
