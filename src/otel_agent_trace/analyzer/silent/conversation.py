"""A run as a conversation: its turns (each step's model output; each tool's result or code
execution's output, an *observation* charged to the turn that issued it), what a turn states
(its text without the code, pages, addresses and harness output mixed into it), the task, and
the final answer."""

from __future__ import annotations

import re
from dataclasses import dataclass

from otel_agent_trace.analyzer.lifecycle.answers import FINAL_ANSWER_TOOL
from otel_agent_trace.analyzer.normalize.conventions import facts_of
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.messages import semconv_messages
from otel_agent_trace.semconv import (
    CONTEXT_NEW_MESSAGES,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_SYSTEM_INSTRUCTIONS,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
)

_INPUT_KEYS = ("input.value", GEN_AI_INPUT_MESSAGES, GEN_AI_SYSTEM_INSTRUCTIONS)


# a turn that only ends the conversation (AG2's TERMINATE, and the like): no answer in it
END_WORDS = re.compile(r"\b(?:TERMINATE|FINAL ANSWER:?|DONE)\b")


# code execution output as multi-agent frameworks write it into the conversation: AG2's executor
# (`exitcode: 1 (execution failed)`), Magentic-One's ComputerTerminal (`The script ran, then exited
# with Unix exit code: 1`, `The script ran but produced no output to console. The Unix exit code was: 0`)
EXECUTION = re.compile(r"^\s*(?:exitcode:|The script ran(?:, then exited with| but produced no output to "
                        r"console\. The) Unix exit code(?: was)?:)\s*(-?\d+)", re.IGNORECASE)


_EXECUTOR_NAME = re.compile(r"(?i)(?:terminal|executor|code_?exec|interpreter|sandbox)")


# an executor that found nothing to run: AG2's, Magentic-One's ComputerTerminal
NO_CODE = re.compile(r"^\s*(?:There is no code from the last|No code block detected in the messages)", re.IGNORECASE)


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
PAGE_DUMP = re.compile(r"Here is a screenshot of \[.*?(?:<Image>|\Z)|"
                        r"^Address: [^\n]*\n(?:Title: [^\n]*\n)?Viewport position: [^\n]*\n=+\n.*",
                        re.DOTALL | re.MULTILINE)


# - the page element an action names: `I clicked 'Credits'.`, `I typed 'query' into '0 characters out
#   of 2000'.` (the element's label, read from the page; what was typed stays: the agent chose it)
_PAGE_ELEMENT = re.compile(r"^(?:I (?:clicked|hovered over) '|(?P<typed>I typed '.*?') into ').*?'\.[ \t]*$",
                           re.MULTILINE | re.DOTALL)


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
    return bool(EXECUTION.match(text) or NO_CODE.match(text) or (agent and _EXECUTOR_NAME.search(agent)))


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
    for pattern in (_CODE_BLOCK, PAGE_DUMP, _TRACEBACK, _WARNING, _BANNER, _ADDRESS):
        text = pattern.sub(" ", text)
    text = _PAGE_ELEMENT.sub(lambda m: m.group("typed") or " ", text)
    # JSON's escapes left in text (a ledger printed as JSON: `Adjani\\u2019s`, `42mm:\\n`) are the characters
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else " ", text)


# --- signals -----------------------------------------------------------------------------------
def final_answer(sequence: list[Turn]) -> Turn | None:
    """The last turn of the model (not an observation) that says more than an end word."""
    for turn in reversed(sequence):
        if not turn.observation and END_WORDS.sub("", turn.text).strip(" \n.*"):
            return turn
    return None


def tool_of(span: Span) -> str:
    return str(span.attributes.get(GEN_AI_TOOL_NAME) or span.name.removeprefix("execute_tool "))
