"""Work the answer claims or the run left undone: an action an offered tool does, claimed and
never called (`claimed_action`), and more results announced and never fetched (`unread_page`)."""

from __future__ import annotations

import json
import re

from otel_agent_trace.analyzer.lifecycle.tool_calls import tool_definitions
from otel_agent_trace.analyzer.recovery import ACTION_TOOL
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.silent.conversation import Turn, final_answer, stated_text, tool_of
from otel_agent_trace.analyzer.silent.suspicion import CLAIMED_ACTION, UNREAD_PAGE, Suspicion
from otel_agent_trace.semconv import GEN_AI_TOOL_CALL_RESULT


def claimed_action(run: Run, sequence: list[Turn]) -> list[Suspicion]:
    """The final answer says an action was done that a tool the model was given does, and that
    tool never ran: `send_email` offered, never called, and "the customer has been emailed". The
    action's words are read off the tool's name (`recovery.ACTION_TOOL`'s verbs, and a message
    noun used as a verb: `email` -> `emailed`); a claim said in the negative is none."""
    final = final_answer(sequence)
    defined = tool_definitions(run) if final is not None else None
    if not defined:
        return []
    called = {tool_of(tool) for tool in run.tools}  # (as definitions name them: no `execute_tool ` prefix)
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
        tool = tool_of(turn.span)
        if any(t.observation and tool_of(t.span) == tool for t in sequence[turn.index + 1:]):
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


# a sentence that says the action in the negative, as a condition, or of the future (`will be emailed`,
# `I'll make sure it is sent`, `can be paid`): no claim that it was done
_NEGATED = re.compile(r"(?i)\b(?:not|never|no|nothing|neither|nor|unable|failed|cannot|couldn't|wasn't|hasn't|haven't|isn't|"
                      r"aren't|weren't|won't|didn't|if|once|when|after|before|until|will|shall|can|could|would|should|"
                      r"may|might|going to|to be)\b|'ll\b")
