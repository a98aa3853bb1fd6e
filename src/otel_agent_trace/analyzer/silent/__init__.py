"""Where a failed run most likely went wrong when nothing in it raised (issue 27 §2, no LLM).

A run known to have failed (a verdict, `analyzer/verdicts.py`, or a rule) with no proven origin
still has a story in its text. This package reads the run as a sequence of *turns* (`turns`): what
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

Modules: `conversation` (the run as turns, what each states), `answer`, `values`, `failures`, `work`
(the signals), `suspicion` (what a signal names); this one ranks and merges them."""

from __future__ import annotations

from typing import Any

from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.silent.answer import answer_dropped, answer_provenance, answer_values
from otel_agent_trace.analyzer.silent.conversation import Turn, stated_text, task_text, turns
from otel_agent_trace.analyzer.silent.failures import assumed_fact, contradicted_result, error_in_text
from otel_agent_trace.analyzer.silent.suspicion import MAX_SUSPICIONS, Suspicion
from otel_agent_trace.analyzer.silent.values import made_up_value
from otel_agent_trace.analyzer.silent.work import claimed_action, unread_page

__all__ = ["Suspicion", "Turn", "agreeing_agent_first", "answer_values", "stated_text", "suspicions", "task_text",
           "turns"]


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
