"""Values the run never had: the first turn stating, or calling a tool with, a value no earlier
input contained (`made_up_value`)."""

from __future__ import annotations

import json
import re

from otel_agent_trace import detectors
from otel_agent_trace.analyzer.silent.conversation import PAGE_DUMP, Turn, stated_text, tool_of
from otel_agent_trace.analyzer.silent.suspicion import MADE_UP_VALUE, Suspicion
from otel_agent_trace.semconv import GEN_AI_TOOL_CALL_ARGUMENTS

# a value a browsing agent states that no input the trace shows contained (`made_up_value`)
_BROWSING_MADE_UP_SCORE = 0.45


# an argument value of more words than this is text the model composed (a query, a message), not a value it chose
_ARGUMENT_WORDS = 3


_FILE_NAME = re.compile(r"\.[A-Za-z]{2,4}$")


def made_up_value(sequence: list[Turn], task: str) -> list[Suspicion]:
    """The first turn stating a value no earlier input contained. An agent that browses reads whole
    pages, of which its turns show a part (a screenshot's OCR, a viewport): what it states may come
    from what the trace does not show, so its first such turn is a weaker place, kept beside the
    first turn of an agent whose inputs are all seen."""
    known = set(detectors.distinctive_values(task))
    said = detectors.Received([task])  # what was said so far: the factors and totals a value may be computed with
    question = " ".join(task.split())[:200]
    browsing = {t.agent for t in sequence if t.agent and PAGE_DUMP.search(t.text)}
    found: list[Suspicion] = []
    for turn in sequence:
        if not turn.observation and not (question and question in " ".join(turn.text.split())) and (
                turn.agent not in browsing or not found):
            # (a turn that restates the task hands it on: what it adds is the task's, not a claim)
            stated = stated_text(turn.text)
            values = [v for v in detectors.fabricated_values(stated, known, said) if _stated_value(v)] if stated.strip() else []
            if values:
                unseen = turn.agent in browsing
                found.append(Suspicion(
                    turn.span, turn.agent, MADE_UP_VALUE,
                    f"{turn.span.name} states {', '.join(values[:3])}, which no earlier input, instruction or result "
                    "contained" + (" (it browses: a page the trace shows only in part may hold it)" if unseen else ""),
                    _BROWSING_MADE_UP_SCORE if unseen else 0.95, bug_class="model_decision"))
                if not unseen:
                    return found
        arguments = turn.span.attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS)
        if isinstance(arguments, str):
            made_up = _made_up_arguments(arguments, known, said) if turn.observation and turn.caller else []
            if made_up and turn.caller.agent not in browsing:
                caller = turn.caller
                found.append(Suspicion(
                    caller.span, caller.agent, MADE_UP_VALUE,
                    f"{caller.span.name} called {tool_of(turn.span)} with {', '.join(made_up[:3])}, which no earlier "
                    "input, instruction or result contained", 0.95, bug_class="model_decision", seen_at=turn.span))
                return found
            known |= detectors.distinctive_values(arguments)
        known |= detectors.distinctive_values(turn.text)
        said.add(turn.text)
    return found


def _made_up_arguments(arguments: str, known: set[str], said: detectors.Received) -> list[str]:
    """The values of a call's arguments that no earlier input contained (`made_up_value`): its
    short scalar values only; code or a text the model composed (a message body, a query of many
    words) is left aside, as code is in a turn's text."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return []
    leaves: list[str] = []
    stack = [parsed]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            leaves.append(str(value))
        elif isinstance(value, str) and "\n" not in value and len(value.split()) <= _ARGUMENT_WORDS:
            leaves.append(value)
    if not leaves:
        return []
    return [v for v in detectors.fabricated_values("\n".join(leaves), known, said)
            if _stated_value(v) or ("@" in v and "/" not in v)]  # (an address the call is sent to is chosen too)


def _stated_value(value: str) -> bool:
    """A value a turn can have made up: a number or an id with digits; not a path, an address or a
    file name (those a turn names, they are not facts it states)."""
    return any(c.isdigit() for c in value) and "/" not in value and not _FILE_NAME.search(value)
