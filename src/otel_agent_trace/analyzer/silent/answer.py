"""What the final answer rests on: where its distinctive values first appeared
(`answer_provenance`), and, told the expected answer, a result that held it which the answer
then did not give (`answer_dropped`)."""

from __future__ import annotations

import re
from typing import Any

from otel_agent_trace import answers
from otel_agent_trace.analyzer.silent.conversation import END_WORDS, Turn, final_answer, stated_text
from otel_agent_trace.analyzer.silent.suspicion import ANSWER_DROPPED, ANSWER_PROVENANCE, Suspicion
from otel_agent_trace.semconv import GEN_AI_TOOL_CALL_RESULT

# how much a provenance is worth by the strength of the value it follows (marked answer, number, name)
_PROVENANCE_SCORE = {3: 0.9, 2: 0.8, 1: 0.5, 0: 0.4}


_NUMBER = re.compile(r"(?<![\w.])[-+]?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?(?![\w])")


# what an answer marks as its answer: **bold**, \\boxed{...}, "quoted", and `answer is X`
_MARKED_ANSWER = re.compile(r"\*\*([^*\n]{1,80})\*\*|\\boxed\{([^}]{1,80})\}|[\"“]([^\"”\n]{2,60})[\"”]|"
                            r"(?i:answer(?: is|:)\s*)([^\n.,;]{1,60})")


_NAME = re.compile(r"\b(?:[A-Z][\w'’.-]*[A-Za-z0-9](?:\s+(?:of|the|de|von|van|and|&)?\s*[A-Z][\w'’.-]*)*)\b")


# a pronoun's contraction (`I'm`, `I'll`, `We've`) is capitalised but is no name
_PRONOUN = re.compile(r"(?i)^(?:i|we|you|they|he|she|it|let)['’]")


_STOP = frozenset("""the a an this that these those it its is are was were be been i we you he she they
final answer result results therefore thus so here based task terminate note yes no step code output
python verification verified data information conclusion summary plan""".split())


# --- values ------------------------------------------------------------------------------------
def _number_key(token: str) -> str | None:
    text = token.strip().lstrip("+$").rstrip("%").replace(",", "")
    try:
        value = float(text)
    except ValueError:
        return None
    return f"n:{value:g}"


def answer_values(text: str, task: str, agents: frozenset[str] = frozenset()) -> dict[str, tuple[str, int]]:
    """The distinctive values of a final answer (key -> (as written, strength)) that the task
    does not already contain: what the answer marks as its answer (bold, boxed, quoted) first
    (strength 3), then numbers (2), then names (1): a capitalised run of words that does not start
    a sentence, or a code in capitals; agents' names are not values."""
    task_lower = task.lower()
    task_numbers = {_number_key(m.group()) for m in _NUMBER.finditer(task)}
    out: dict[str, tuple[str, int]] = {}

    def add(value: str, strength: int) -> None:
        value = value.replace("*", "").strip(" .,:;!?()[]{}'\"")
        number = _NUMBER.fullmatch(value)
        if number:
            key = _number_key(value)
            if key and key not in task_numbers:
                # a small whole number (a count, a list's item) appears anywhere by chance: weaker
                small = abs(float(key[2:])) < 10 and float(key[2:]).is_integer()
                _keep(out, key, value, strength - 1 if small else strength)
            return
        low = value.lower()
        if len(value) < 2 or low in _STOP or END_WORDS.fullmatch(value) or low in task_lower or "_" in value or low in agents or _PRONOUN.match(value):
            return
        if not any(c.isalpha() for c in value):
            return
        _keep(out, f"s:{low}", value, strength)

    for m in _MARKED_ANSWER.finditer(text):
        if text[m.end():m.end() + 1] == ":" or text[m.end() - 3:m.end()] in (":**", "?**"):
            continue  # a heading (`**Verification**:`) or a question, not an answer
        inner = next(g for g in m.groups() if g is not None).replace("*", "")
        numbers = list(_NUMBER.finditer(inner))
        if numbers:
            for n in numbers:
                add(n.group(), 3)
        elif len(inner) <= 60:
            add(inner, 3)
    for m in _NUMBER.finditer(text):
        if not _is_list_marker(text, m):
            add(m.group(), 2)
    for m in _NAME.finditer(text):
        value = m.group()
        start = m.start()
        sentence_start = start == 0 or text[:start].rstrip(" *#>-")[-1:] in ("", ".", "!", "?", ":", "\n")
        if (sentence_start and " " not in value and not value.isupper()) or (value.isupper() and len(value) < 3):
            continue
        add(value, 1)
    return out


def _keep(out: dict[str, tuple[str, int]], key: str, value: str, strength: int) -> None:
    if key not in out or out[key][1] < strength:
        out[key] = (value, strength)


def _is_list_marker(text: str, match: re.Match) -> bool:
    """`1.` or `2)` starting a line: a list's numbering, not a value."""
    start = match.start()
    before = text[text.rfind("\n", 0, start) + 1:start]
    return not before.strip() and text[match.end():match.end() + 1] in (".", ")")


def contains(text: str, key: str, cache: dict[str, set[str]]) -> bool:
    """Whether a turn's text holds a value (numbers compared as numbers, names case-blind)."""
    if key.startswith("n:"):
        numbers = cache.get(text)
        if numbers is None:
            numbers = cache[text] = {k for k in (_number_key(m.group()) for m in _NUMBER.finditer(text)) if k}
        return key in numbers
    return key[2:] in text.lower()


def answer_provenance(sequence: list[Turn], task: str) -> list[Suspicion]:
    """The turn that introduced the value the final answer rests on (`answer_values`, strongest,
    introduced last); a result is charged to the turn that made the call, except a tool's result
    its own caller restates as the answer: the call chose the tool and the tool the value, so the
    answer is the decision charged."""
    agents = frozenset(t.agent.lower() for t in sequence if t.agent)
    answer, values = None, {}
    for turn in reversed(sequence):  # the last turn of the model that states a value
        if not turn.observation and END_WORDS.sub("", turn.text).strip(" \n.*"):
            values = answer_values(stated_text(turn.text), task, agents)
            if values:
                answer = turn
                break
    if answer is None:
        return []
    cache: dict[str, set[str]] = {}
    first: dict[str, Turn] = {}
    for key in values:
        for turn in sequence[:answer.index + 1]:
            if contains(turn.text, key, cache):
                first[key] = turn
                break
    if not first:
        return []
    strongest = max(values[k][1] for k in first)
    # of the answer's strongest values, the one introduced last is what the answer rests on:
    # earlier ones are the material every turn restates
    key, turn = max(((k, t) for k, t in first.items() if values[k][1] == strongest), key=lambda kv: kv[1].index)
    blamed = turn.blamed
    source = f"the result of {turn.span.name} (called at {blamed.span.name})" if turn.observation else turn.span.name
    reason = f"the final answer's value {values[key][0]!r} first appears in {source}"
    if turn.observation and turn.span.attributes.get(GEN_AI_TOOL_CALL_RESULT) is not None and answer.agent == blamed.agent:
        # a tool's result, read by the agent that called it: the call chose the tool, the tool chose the
        # value, and the answer chose to state it; a decision is at fault only in the answer
        blamed = answer
        reason += f"; {answer.span.name} states it as the answer"
    return [Suspicion(blamed.span, blamed.agent, ANSWER_PROVENANCE, reason, _PROVENANCE_SCORE[strongest],
                      seen_at=turn.span if turn is not blamed else None)]


def answer_dropped(sequence: list[Turn], task: str, expected: Any) -> list[Suspicion]:
    """The answer the run should have given (`expected`, an `analyzer/expected.Expectation`)
    came back in the result of a call, and the next decision of the agent that made the call is
    the final answer, which states another: the run had the right value and answered otherwise.
    Not counted: a decision that goes on after the result (it may use the value later, or rightly
    doubt it), a value another agent stated in a group chat (a claim; on Who&When such turns were
    not where the mistake was), a task that itself names the answer (a choice among options), an
    answer too short to tell from chance (`_telling`)."""
    if expected is None or not _telling(expected.answer):
        return []

    def held(text: str) -> bool:
        return answers.holds(expected.answer, text, expected.how, expected.tolerance)

    final = final_answer(sequence)
    if final is None or held(task):
        return []
    for turn in sequence[:final.index]:
        if not turn.observation or turn.caller is None or not turn.text or not held(turn.text):
            continue
        reader = next((t for t in sequence[turn.index + 1:final.index + 1]
                       if not t.observation and t.agent == turn.caller.agent), None)
        if reader is not final:
            continue  # (a decision that goes on may use the value later, or rightly doubt it)
        return [Suspicion(reader.span, reader.agent, ANSWER_DROPPED,
                          f"the expected answer {answers.shown(expected.answer, expected.how)} came back in the result of {turn.span.name}; "
                          f"{reader.span.name}, which read it, answers otherwise", 1.0, bug_class="model_decision",
                          seen_at=turn.span)]
    return []


def _telling(answer: Any) -> bool:
    """An expected answer whose presence in a text is not chance: a number of two digits or a
    fraction, a text of four characters or more (any one of a list)."""
    for value in answer if isinstance(answer, list) else [answer]:
        number = answers.as_number(value)
        if number is not None:
            if abs(number) >= 10 or number != int(number):
                return True
        elif len(answers.normalise(value)) >= 4:
            return True
    return False
