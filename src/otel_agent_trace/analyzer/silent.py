"""Where a failed run most likely went wrong when nothing in it raised (issue 27 §2, no LLM).

A run known to have failed (a verdict, `analyzer/verdicts.py`, or a rule) with no proven origin
still has a story in its text. This module reads the run as a sequence of *turns* (`turns`): what
each step's model said, and what each tool or code execution returned (an *observation*, charged
to the turn that issued the call), and ranks the few turns most likely to hold the decisive
mistake, each with a reason a person checks in seconds:

* `answer_provenance`: the first turn whose output introduced the final answer's distinctive
  values (numbers, names, quoted strings that are not in the task); when the value came from an
  observation, the turn that issued the call (a tool's result restated by its caller: the answer);
* `made_up_value`: the first turn stating a value that no earlier input contained (the task, the
  instructions, an earlier turn or result; `detectors.fabricated_values`, code left aside), in its
  text or in a call's arguments;
* `error_in_text`: the first tool or code error stated only in text (a result or an execution
  output that reports a failure; nothing raised), charged to the turn that made the call;
* `contradicted_result`: a turn that reads a failed or empty result and reports success;
* `claimed_action`: a final answer saying an action was done that an offered tool does, never called;
* `unread_page`: a result announcing more (a next page, a cursor) that no later call asked for;
* `answer_dropped` (told the expected answer): a result held it, and the final answer states another.

`suspicions(run)` returns them ranked (`Suspicion`); `locate` records them as suspicions (flag
`suspicion`) when a failed run has no proven origin. The figures that ranked them are in
docs/analyzer.md ("Localising without an error"), measured on Who&When; what holds on other
logs is said there too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from otel_agent_trace import answers, detectors
from otel_agent_trace.analyzer.lifecycle.answers import FINAL_ANSWER_TOOL
from otel_agent_trace.analyzer.lifecycle.tool_calls import tool_definitions
from otel_agent_trace.analyzer.normalize.conventions import facts_of
from otel_agent_trace.analyzer.recovery import ACTION_TOOL
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.detectors import classify_result
from otel_agent_trace.messages import semconv_messages
from otel_agent_trace.semconv import (
    GEN_AI_SYSTEM_INSTRUCTIONS,
    CONTEXT_NEW_MESSAGES,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
)
from otel_agent_trace.vocabulary import ErrorType, Outcome

# the signals, each the error type of the `errors[]` entry it makes (analyzer only, never recorded;
# a made-up value is the recorder's `fabricated_value`, found anywhere in the run, not only in the answer)
ANSWER_PROVENANCE = "answer_provenance"
MADE_UP_VALUE = ErrorType.FABRICATED_VALUE.value
ERROR_IN_TEXT = "error_in_text"
CONTRADICTED_RESULT = "contradicted_result"
ASSUMED_FACT = "assumed_fact"
ANSWER_DROPPED = "answer_dropped"
CLAIMED_ACTION = "claimed_action"
UNREAD_PAGE = "unread_page"
MAX_SUSPICIONS = 3
# how much a provenance is worth by the strength of the value it follows (marked answer, number, name)
_PROVENANCE_SCORE = {3: 0.9, 2: 0.8, 1: 0.5, 0: 0.4}
# a value a browsing agent states that no input the trace shows contained (`made_up_value`)
_BROWSING_MADE_UP_SCORE = 0.45
# an argument value of more words than this is text the model composed (a query, a message), not a value it chose
_ARGUMENT_WORDS = 3

_INPUT_KEYS = ("input.value", GEN_AI_INPUT_MESSAGES, GEN_AI_SYSTEM_INSTRUCTIONS)
# a turn that only ends the conversation (AG2's TERMINATE, and the like): no answer in it
_END_WORDS = re.compile(r"\b(?:TERMINATE|FINAL ANSWER:?|DONE)\b")
# code execution output as multi-agent frameworks write it into the conversation: AG2's executor
# (`exitcode: 1 (execution failed)`), Magentic-One's ComputerTerminal (`The script ran, then exited
# with Unix exit code: 1`, `The script ran but produced no output to console. The Unix exit code was: 0`)
_EXECUTION = re.compile(r"^\s*(?:exitcode:|The script ran(?:, then exited with| but produced no output to "
                        r"console\. The) Unix exit code(?: was)?:)\s*(-?\d+)", re.IGNORECASE)
_EXECUTOR_NAME = re.compile(r"(?i)(?:terminal|executor|code_?exec|interpreter|sandbox)")
# an executor that found nothing to run: AG2's, Magentic-One's ComputerTerminal
_NO_CODE = re.compile(r"^\s*(?:There is no code from the last|No code block detected in the messages)", re.IGNORECASE)
_ERROR_TEXT = re.compile(r"Traceback \(most recent call last\)|\b[A-Z]\w*(?:Error|Exception)\b:|"
                         r"\bexecution failed\b|\btimed? ?out\b|No such file or directory|\bnot found\b|"
                         r"\b40[134]\b.{0,20}\b(?:Client Error|Forbidden|Not Found|Unauthorized)")
# a turn saying it goes on from what it supposes, not from what it obtained
_ASSUMING = re.compile(r"(?i)\b(?:hypothetical(?:ly)?|simulat(?:e|ed|ing)|assum(?:e|ed|ing)|mock(?:ed|up)?|placeholder|"
                       r"dummy|sample data|example data|for (?:demonstration|illustration)(?: purposes)?|made[- ]up)\b")
_FILE_NAME = re.compile(r"\.[A-Za-z]{2,4}$")
_CODE_BLOCK = re.compile(r"```.*?(?:```|$)", re.DOTALL)
# text in a turn that is not what its agent states (`stated_text`):
# - an address: a URL's path and query string are split into tokens (`sp=-1&lq=0`), none a value stated;
_ADDRESS = re.compile(r"\b(?:https?://|www\.)[^\s<>\"'`)\]]+")
# - the process's own output mixed into a message (the harness's stderr): Python's warnings
#   (`file.py:216: UserWarning: ...` and the source line under it) and tracebacks (down to the
#   exception's line), and a benchmark harness's banners (AutoGenBench's `SCENARIO.PY COMPLETE !#!#`);
_WARNING = re.compile(r"^[^\n]*\.py:\d+: \w*Warning: [^\n]*(?:\n[ \t]+[^\n]*)?", re.MULTILINE)
_TRACEBACK = re.compile(r"^[^\n]*Traceback \(most recent call last\):(?:\n[ \t]+[^\n]*|\n\s*\^+[^\n]*)*"
                        r"(?:\n[^\n]*)?", re.MULTILINE)
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\[nrt]")
_BANNER = re.compile(r"^[^\n]*!#!#[ \t]*$", re.MULTILINE)
# - what a browsing agent shows of a page: Magentic-One's MultimodalWebSurfer follows its action
#   (`I clicked 'Credits'.`) with `Here is a screenshot of [title](url)`, the page's metadata and the
#   OCR of the screenshot, down to `<Image>`; a text browser (Magentic-One's FileSurfer, AutoGen's
#   SimpleTextBrowser) heads the page it shows with `Address:`, `Title:`, `Viewport position:` and a
#   rule, and the page follows to the message's end: what the page says, not what the agent claims
_PAGE_DUMP = re.compile(r"Here is a screenshot of \[.*?(?:<Image>|\Z)|"
                        r"^Address: [^\n]*\n(?:Title: [^\n]*\n)?Viewport position: [^\n]*\n=+\n.*",
                        re.DOTALL | re.MULTILINE)
# - the page element an action names: `I clicked 'Credits'.`, `I typed 'query' into '0 characters out
#   of 2000'.` (the element's label, read from the page; what was typed stays: the agent chose it)
_PAGE_ELEMENT = re.compile(r"^(?:I (?:clicked|hovered over) '|(?P<typed>I typed '.*?') into ').*?'\.[ \t]*$",
                           re.MULTILINE | re.DOTALL)
_SUCCESS_CLAIM = re.compile(r"(?i)\b(?:successfully|succeeded|has been (?:confirmed|verified)|is correct|"
                            r"confirm(?:s|ed)? (?:that|the)|verified)\b")
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


@dataclass
class Turn:
    """One turn of a run's conversation: a step's model output, or an observation (a tool's
    result, a code execution's output) charged to the turn that issued it (`caller`)."""

    span: Span
    agent: str | None
    text: str
    observation: bool = False
    caller: "Turn | None" = None
    index: int = 0

    @property
    def blamed(self) -> "Turn":
        """The decision a suspicion at this turn is charged to."""
        return self.caller if self.observation and self.caller is not None else self


@dataclass
class Suspicion:
    span: Span  # where the mistake is placed (a decision)
    agent: str | None
    signal: str  # one of the signal names above
    reason: str
    score: float
    bug_class: str | None = None
    seen_at: Span | None = None  # the observation the evidence is in, when not the decision itself
    signals: list[str] = field(default_factory=list)


def turns(run: Run) -> list[Turn]:
    """The run's turns in time order: each step with its output text, each tool with its result
    (charged to the step that issued it), each execution output a multi-agent framework wrote as a
    turn (charged to the turn before it)."""
    out: list[Turn] = []
    step_ids = run.step_ids
    items = sorted([*run.steps, *run.tools], key=lambda s: (s.start_ns, s.span_id))
    last_decision: Turn | None = None
    last_code: Turn | None = None
    by_span: dict[str, Turn] = {}
    for span in items:
        if span.span_id in step_ids:
            text = _output_text(run, span)
            agent = run.agent_of(span)
            observation = _is_execution(agent, text)
            # an execution ran the code the latest turn with code wrote (else the turn before it)
            turn = Turn(span, agent, text, observation, (last_code or last_decision) if observation else None,
                        len(out))
            if not observation:
                last_decision = turn
                if "```" in text:
                    last_code = turn
        else:
            parent = by_span.get(span.parent_id or "")
            caller = parent if parent is not None and not parent.observation else last_decision
            if FINAL_ANSWER_TOOL.match(str(span.attributes.get(GEN_AI_TOOL_NAME) or
                                           span.name.removeprefix("execute_tool "))):  # the answer, as the deciding turn gave it: its words
                arguments = span.attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS)
                turn = Turn(span, caller.agent if caller else run.agent_of(span), str(arguments or ""), False,
                            None, len(out))
            else:
                result = span.attributes.get(GEN_AI_TOOL_CALL_RESULT)
                turn = Turn(span, run.agent_of(span), result if isinstance(result, str) else "" if result is None
                            else str(result), True, caller, len(out))
        by_span[span.span_id] = turn
        out.append(turn)
    return out


def _output_text(run: Run, step: Span) -> str:
    """What a step's model said: its own output messages, else those of the model calls under it
    (in any convention normalization reads, `facts_of`)."""
    spans = [step] + [c for c in run.chats if c.parent_id == step.span_id]
    for span in spans:
        raw = span.attributes.get(GEN_AI_OUTPUT_MESSAGES)
        if raw is not None:
            text = "\n".join(m.content for m in semconv_messages(raw) if m.content)
            if text:
                return text
        facts = facts_of(span)
        if facts is not None and facts.output_text:
            return facts.output_text
    return ""


def _is_execution(agent: str | None, text: str) -> bool:
    return bool(_EXECUTION.match(text) or _NO_CODE.match(text) or (agent and _EXECUTOR_NAME.search(agent)))


def task_text(run: Run) -> str:
    """What the run was given: the run span's input, and the user, system and developer messages
    the first step saw (its input messages, or the recorder's new messages)."""
    parts: list[str] = []
    for span in (run.root, *run.steps[:1], *[c for c in run.chats[:1]]):
        for key in _INPUT_KEYS:
            value = span.attributes.get(key)
            if isinstance(value, str):
                parts.append(value)
        new = span.attributes.get(CONTEXT_NEW_MESSAGES)
        if isinstance(new, str):
            parts.append(new)
    return "\n".join(parts)


def stated_text(text: str) -> str:
    """What a turn's agent states: its text without code, the harness's output mixed into it
    (warnings, tracebacks, banners), a page a browsing agent shows and the page elements its actions
    name, and addresses (see above)."""
    for pattern in (_CODE_BLOCK, _PAGE_DUMP, _TRACEBACK, _WARNING, _BANNER, _ADDRESS):
        text = pattern.sub(" ", text)
    text = _PAGE_ELEMENT.sub(lambda m: m.group("typed") or " ", text)
    # JSON's escapes left in text (a ledger printed as JSON: `Adjani\\u2019s`, `42mm:\\n`) are the characters
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else " ", text)


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
        if len(value) < 2 or low in _STOP or _END_WORDS.fullmatch(value) or low in task_lower or "_" in value or low in agents or _PRONOUN.match(value):
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


# --- signals -----------------------------------------------------------------------------------
def final_answer(sequence: list[Turn]) -> Turn | None:
    """The last turn of the model (not an observation) that says more than an end word."""
    for turn in reversed(sequence):
        if not turn.observation and _END_WORDS.sub("", turn.text).strip(" \n.*"):
            return turn
    return None


def answer_provenance(sequence: list[Turn], task: str) -> list[Suspicion]:
    agents = frozenset(t.agent.lower() for t in sequence if t.agent)
    answer, values = None, {}
    for turn in reversed(sequence):  # the last turn of the model that states a value
        if not turn.observation and _END_WORDS.sub("", turn.text).strip(" \n.*"):
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


def made_up_value(sequence: list[Turn], task: str) -> list[Suspicion]:
    """The first turn stating a value no earlier input contained. An agent that browses reads whole
    pages, of which its turns show a part (a screenshot's OCR, a viewport): what it states may come
    from what the trace does not show, so its first such turn is a weaker place, kept beside the
    first turn of an agent whose inputs are all seen."""
    known = set(detectors.distinctive_values(task))
    said = detectors.Received([task])  # what was said so far: the factors and totals a value may be computed with
    question = " ".join(task.split())[:200]
    browsing = {t.agent for t in sequence if t.agent and _PAGE_DUMP.search(t.text)}
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
                    f"{caller.span.name} called {_tool_of(turn.span)} with {', '.join(made_up[:3])}, which no earlier "
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


def _tool_of(span: Span) -> str:
    return str(span.attributes.get(GEN_AI_TOOL_NAME) or span.name.removeprefix("execute_tool "))


def _stated_value(value: str) -> bool:
    """A value a turn can have made up: a number or an id with digits; not a path, an address or a
    file name (those a turn names, they are not facts it states)."""
    return any(c.isdigit() for c in value) and "/" not in value and not _FILE_NAME.search(value)


def _failed_observation(turn: Turn) -> str | None:
    """Why an observation reports a failure in its text, else None."""
    text = turn.text
    execution = _EXECUTION.match(text)
    if execution:
        if execution.group(1) != "0":
            return f"exit code {execution.group(1)}"
        # a script that succeeded reports an error it caught on its output's first line; below
        # that, error words are the data it printed (an issue's title, a log it read)
        first = _execution_output(text[execution.end():]).lstrip().split("\n", 1)[0]
        return "its output reports an error" if _ERROR_TEXT.search(first) else None
    if _NO_CODE.match(text):
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
                for why in [_failed_observation(t)] if why]
    if not failures:
        return []
    chosen = failures[0]
    for turn, why in failures:
        if not any(later.observation and later.caller is not None and _succeeded(later)
                   for later in sequence[turn.index + 1:]):
            chosen = (turn, why)
            break
    turn, why = chosen
    head = " ".join(turn.text.split())[:120]
    return [Suspicion(turn.caller.span, turn.caller.agent, ERROR_IN_TEXT,
                      f"{turn.span.name} failed ({why}: {head!r}); the call was made at "
                      f"{turn.caller.span.name}", 1.0, seen_at=turn.span)]


def _succeeded(turn: Turn) -> bool:
    """An observation that reports a result: no failure, and not empty."""
    text = turn.text.strip()
    if _NO_CODE.match(text) or _failed_observation(turn):
        return False
    execution = _EXECUTION.match(text)
    body = text[execution.end():] if execution else text
    body = _execution_output(body).strip() if execution else body
    return body not in ("", "[]", "{}", "null", "None")


def contradicted_result(sequence: list[Turn]) -> list[Suspicion]:
    for i, turn in enumerate(sequence):
        if not turn.observation or turn.caller is None:
            continue
        failed = _failed_observation(turn) or (
            "it returned nothing" if turn.text.strip() in ("", "[]", "{}", "null", "None") else None)
        if not failed:
            continue
        reader = next((t for t in sequence[i + 1:] if not t.observation), None)
        if reader is not None and _SUCCESS_CLAIM.search(stated_text(reader.text)):
            return [Suspicion(reader.span, reader.agent, CONTRADICTED_RESULT,
                              f"{reader.span.name} reports success, but the result it read ({turn.span.name}) "
                              f"failed ({failed})", 0.3, bug_class="model_decision", seen_at=turn.span)]
    return []


def answer_dropped(sequence: list[Turn], task: str, expected: Any) -> list[Suspicion]:
    """The answer the run should have given (`expected`, an `analyzer/expected.Expectation`)
    came back in the result of a call, and the next decision of the agent that made the call is
    the final answer, which states another: the run had the right value and answered otherwise.
    (A decision that goes on may use the value later, or rightly doubt it.) Only a result counts: a value another agent stated in a group chat is a claim the others
    may rightly doubt (on Who&When, such turns were not where the mistake was). Nothing when the
    task itself names the answer (a choice among options), or when the answer is too short to
    tell from chance (`_telling`)."""
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
        shown = answers.compare(expected.answer, None, expected.how).expected
        return [Suspicion(reader.span, reader.agent, ANSWER_DROPPED,
                          f"the expected answer {shown} came back in the result of {turn.span.name}; "
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


def claimed_action(run: Run, sequence: list[Turn]) -> list[Suspicion]:
    """The final answer says an action was done that a tool the model was given does, and that
    tool never ran: `send_email` offered, never called, and "the customer has been emailed". The
    action's words are read off the tool's name (`recovery.ACTION_TOOL`'s verbs, and a message
    noun used as a verb: `email` -> `emailed`); a claim said in the negative is none."""
    final = final_answer(sequence)
    defined = tool_definitions(run) if final is not None else None
    if not defined:
        return []
    called = set(run.tool_names)
    text = stated_text(final.text)
    for name in sorted(defined):
        if name in called or not ACTION_TOOL.match(name):
            continue
        forms = _done_forms(name)
        for m in re.finditer(r"(?i)\b(?:" + "|".join(forms) + r")\b", text):
            start = max((b.end() for b in _SENTENCE_END.finditer(text, 0, m.start())), default=0)
            if _NEGATED.search(text[start:m.start()]):  # (said in the negative, or of the future, in its sentence)
                continue
            stop = next((b.end() for b in _SENTENCE_END.finditer(text, m.end())), len(text))
            quote = " ".join(text[start:stop].split())[:160]
            return [Suspicion(final.span, final.agent, CLAIMED_ACTION,
                              f"{final.span.name} says {quote!r}, but {name}, the tool that does it, was never "
                              "called", 0.95, bug_class="model_decision")]
    return []


def unread_page(sequence: list[Turn]) -> list[Suspicion]:
    """A tool's result announced more (a next page, a cursor, `has_more`), and the run never called
    that tool again: the decision that read the result and went on without the rest (the caller's
    next one) is charged."""
    for turn in sequence:
        if not turn.observation or turn.caller is None or turn.span.attributes.get(GEN_AI_TOOL_CALL_RESULT) is None:
            continue
        more = _more_announced(turn.text)
        if more is None:
            continue
        tool = _tool_of(turn.span)
        if any(t.observation and _tool_of(t.span) == tool for t in sequence[turn.index + 1:]):
            continue
        reader = next((t for t in sequence[turn.index + 1:] if not t.observation and t.agent == turn.caller.agent), None)
        if reader is not None:
            return [Suspicion(reader.span, reader.agent, UNREAD_PAGE,
                              f"the result of {turn.span.name} announces more ({more}), which no later call asked "
                              f"for; {reader.span.name}, which read it, went on without it", 0.9,
                              bug_class="model_decision", seen_at=turn.span)]
    return []


def _more_announced(text: str) -> str | None:
    """`key: value` of a result's field that says more is to be fetched, else None."""
    if not _MORE_HINT.search(text):
        return None  # (most results: one scan, no parse)
    try:
        value = json.loads(text)
    except ValueError:
        return None
    for part in (value, *(v for v in value.values() if isinstance(v, dict))) if isinstance(value, dict) else ():
        for key, field_value in part.items():
            if key.lower().replace("_", "") in _MORE_KEYS and field_value not in (None, False, "", 0, [], {}):
                return f"{key}: {json.dumps(field_value)}"
    return None


# a result's fields that say more is to be fetched (compared lower-cased, without underscores)
_MORE_KEYS = frozenset({"nextpage", "nextcursor", "nextpagetoken", "nexttoken", "hasmore", "more", "truncated",
                        "nextoffset", "nextlink", "next"})
_MORE_HINT = re.compile(r"(?i)\bnext|has_?more|\bmore\b|truncated")


def _done_forms(name: str) -> list[str]:
    """How an answer says a tool's action is done: its verb's past forms (`send_email`: `sent`),
    and a message noun's (`emailed`)."""
    words = [w.lower() for w in re.findall(r"[A-Z]?[a-z]+", name)]
    forms = [*_PAST.get(words[0], [_past(words[0])])]
    forms += [_past(w) for w in words[1:] if w in _MESSAGE_NOUNS]
    return forms


def _past(verb: str) -> str:
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ied"
    return verb + "ed"


# the irregular past forms of `recovery.ACTION_TOOL`'s verbs (the others add -ed), and the message
# nouns used as verbs
_PAST = {"send": ["sent"], "set": ["set"], "put": ["put"], "pay": ["paid"], "write": ["written", "wrote"],
         "forward": ["forwarded"], "cancel": ["cancelled", "canceled"], "submit": ["submitted"],
         "commit": ["committed"], "transfer": ["transferred"], "stop": ["stopped"], "pin": ["pinned"],
         "unpin": ["unpinned"], "star": ["starred"], "tag": ["tagged"], "label": ["labelled", "labeled"],
         "share": ["shared"], "reset": ["reset"], "start": ["started"], "upload": ["uploaded"]}
_MESSAGE_NOUNS = frozenset({"email", "mail", "text", "message", "sms", "ping"})
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")
_NEGATED = re.compile(r"(?i)\b(?:not|never|no|nothing|neither|nor|unable|failed|cannot|couldn't|wasn't|hasn't|haven't|isn't|"
                      r"aren't|weren't|won't|didn't|if|once|when|after|before|until|will|to be)\b")


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


def suspicions(run: Run, expected: Any = None) -> list[Suspicion]:
    """The places most likely to hold a failed run's decisive mistake, best first (at most
    `MAX_SUSPICIONS`, one per place: a place several signals name gathers their reasons).
    `expected`: the answer the run should have given, when a verdict knows it (`answer_dropped`)."""
    sequence = turns(run)
    if not sequence:
        return []
    task = task_text(run)
    found = [*answer_dropped(sequence, task, expected), *assumed_fact(sequence, task),
             *answer_provenance(sequence, task), *error_in_text(sequence),
             *contradicted_result(sequence), *made_up_value(sequence, task), *claimed_action(run, sequence),
             *unread_page(sequence)]
    merged: dict[str, Suspicion] = {}
    for s in found:
        have = merged.get(s.span.span_id)
        if have is None:
            s.signals = [s.signal]
            merged[s.span.span_id] = s
        else:
            have.signals.append(s.signal)
            if s.score > have.score:  # (the entry is of its strongest signal's type, whose reason comes first)
                have.reason = s.reason + "; " + have.reason
                have.signal, have.score, have.bug_class = s.signal, s.score, s.bug_class or have.bug_class
            else:
                have.reason += "; " + s.reason
                have.bug_class = have.bug_class or s.bug_class
    ranked = sorted(merged.values(), key=lambda s: (-s.score, s.span.start_ns, s.span.span_id))
    return agreeing_agent_first(ranked[:MAX_SUSPICIONS])


def agreeing_agent_first(ranked: list[Suspicion]) -> list[Suspicion]:
    """In a multi-agent run, the agent that independent signals agree on leads: when the first
    place's agent is named at no other place and another agent is named at two or more, that
    agent's best place comes first (its score raised to the first one's). One signal can be set
    off by any turn; several pointing at the same agent's turns are better evidence of who
    erred. Places of one agent (a single-agent run) are left in their order."""
    if len(ranked) < 3:  # (no place, or too few for another agent to be named twice)
        return ranked
    counts: dict[str | None, int] = {}
    for s in ranked:
        counts[s.agent] = counts.get(s.agent, 0) + 1
    if counts[ranked[0].agent] > 1:
        return ranked
    lead = next((s for s in ranked if s.agent is not None and counts[s.agent] >= 2), None)
    if lead is None:
        return ranked
    lead.reason += f"; {counts[lead.agent]} of the {len(ranked)} places name {lead.agent}"
    lead.score = max(lead.score, ranked[0].score)
    return [lead, *(s for s in ranked if s is not lead)]
