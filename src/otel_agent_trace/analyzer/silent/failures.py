"""Failures stated only in text: a tool or code error nothing raised (`error_in_text`), success
reported after a failed result (`contradicted_result`), and a turn going on from what it supposes
(`assumed_fact`)."""

from __future__ import annotations

import re

from otel_agent_trace.analyzer.silent.conversation import EXECUTION, NO_CODE, Turn, stated_text
from otel_agent_trace.analyzer.silent.suspicion import ASSUMED_FACT, CONTRADICTED_RESULT, ERROR_IN_TEXT, Suspicion
from otel_agent_trace.detectors import classify_result
from otel_agent_trace.semconv import GEN_AI_TOOL_CALL_RESULT
from otel_agent_trace.vocabulary import Outcome

_ERROR_TEXT = re.compile(r"Traceback \(most recent call last\)|\b[A-Z]\w*(?:Error|Exception)\b:|"
                         r"\bexecution failed\b|\btimed? ?out\b|No such file or directory|\bnot found\b|"
                         r"\b40[134]\b.{0,20}\b(?:Client Error|Forbidden|Not Found|Unauthorized)")


# a turn saying it goes on from what it supposes, not from what it obtained
_ASSUMING = re.compile(r"(?i)\b(?:hypothetical(?:ly)?|simulat(?:e|ed|ing)|assum(?:e|ed|ing)|mock(?:ed|up)?|placeholder|"
                       r"dummy|sample data|example data|for (?:demonstration|illustration)(?: purposes)?|made[- ]up)\b")


_SUCCESS_CLAIM = re.compile(r"(?i)\b(?:successfully|succeeded|has been (?:confirmed|verified)|is correct|"
                            r"confirm(?:s|ed)? (?:that|the)|verified)\b")


def failed_observation(turn: Turn) -> str | None:
    """Why an observation reports a failure in its text, else None."""
    text = turn.text
    execution = EXECUTION.match(text)
    if execution:
        if execution.group(1) != "0":
            return f"exit code {execution.group(1)}"
        # a script that succeeded reports an error it caught on its output's first line; below
        # that, error words are the data it printed (an issue's title, a log it read)
        first = _execution_output(text[execution.end():]).lstrip().split("\n", 1)[0]
        return "its output reports an error" if _ERROR_TEXT.search(first) else None
    if NO_CODE.match(text):
        return None
    if turn.span.attributes.get(GEN_AI_TOOL_CALL_RESULT) is not None:
        kind = classify_result(text)
        if kind == Outcome.ERROR_RESULT:
            return "it returned an error"
        return None
    return "its output reports an error" if _ERROR_TEXT.search(text[:4000]) else None


def _execution_output(rest: str) -> str:
    """What an execution printed: the text after its exit code's line and the `Code output:` /
    `Its output was:` heading."""
    return re.sub(r"^[^\n]*\n?\s*(?:Code output|Its output was):", "", rest)


def error_in_text(sequence: list[Turn]) -> list[Suspicion]:
    """The first failure stated only in text that nothing later recovered (no later observation
    succeeded); else the first failure. Charged to the turn that made the call."""
    failures = [(t, why) for t in sequence if t.observation and t.caller is not None
                for why in [failed_observation(t)] if why]
    if not failures:
        return []
    chosen = failures[0]
    for turn, why in failures:
        if not any(later.observation and later.caller is not None and succeeded(later)
                   for later in sequence[turn.index + 1:]):
            chosen = (turn, why)
            break
    turn, why = chosen
    head = " ".join(turn.text.split())[:120]
    return [Suspicion(turn.caller.span, turn.caller.agent, ERROR_IN_TEXT,
                      f"{turn.span.name} failed ({why}: {head!r}); the call was made at "
                      f"{turn.caller.span.name}", 1.0, seen_at=turn.span)]


def succeeded(turn: Turn) -> bool:
    """An observation that reports a result: no failure, and not empty."""
    text = turn.text.strip()
    if NO_CODE.match(text) or failed_observation(turn):
        return False
    execution = EXECUTION.match(text)
    body = text[execution.end():] if execution else text
    body = _execution_output(body).strip() if execution else body
    return body not in ("", "[]", "{}", "null", "None")


def contradicted_result(sequence: list[Turn]) -> list[Suspicion]:
    for i, turn in enumerate(sequence):
        if not turn.observation or turn.caller is None:
            continue
        failed = failed_observation(turn) or (
            "it returned nothing" if turn.text.strip() in ("", "[]", "{}", "null", "None") else None)
        if not failed:
            continue
        reader = next((t for t in sequence[i + 1:] if not t.observation), None)
        if reader is not None and _SUCCESS_CLAIM.search(stated_text(reader.text)):
            return [Suspicion(reader.span, reader.agent, CONTRADICTED_RESULT,
                              f"{reader.span.name} reports success, but the result it read ({turn.span.name}) "
                              f"failed ({failed})", 0.3, bug_class="model_decision", seen_at=turn.span)]
    return []


def assumed_fact(sequence: list[Turn], task: str) -> list[Suspicion]:
    """The first turn (after the one that opened the run) that says it proceeds on an assumption,
    a simulation or placeholder data instead of what it should have obtained."""
    for turn in sequence[1:]:
        if turn.observation:
            continue
        text = stated_text(turn.text)
        m = _ASSUMING.search(text)
        if m and m.group().lower() not in task.lower():
            quote = " ".join(text[max(0, m.start() - 60):m.end() + 60].split())
            reason = f"{turn.span.name} goes on from what it supposes, not what it obtained: ...{quote}..."
            return [Suspicion(turn.span, turn.agent, ASSUMED_FACT, reason, 1.1, bug_class="model_decision")]
    return []
