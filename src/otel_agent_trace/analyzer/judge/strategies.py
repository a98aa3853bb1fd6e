"""How the judge searches a run's candidate places (the three strategies Who&When compares,
arXiv 2505.00212), each over the dossier's candidates in the run's order:

- `all_at_once`: one question naming every candidate; the answer names one. 1 request a run.
- `step_by_step`: each candidate in turn, shown the log up to it, until the judge says "this
  one". Up to one request per candidate; it stops at the first yes.
- `binary_search`: halves the candidates, asking which half holds the mistake, down to one step,
  then asks about that step for its category and reason. ~log2(n) + 1 requests.

A strategy returns a `Verdict`, or None when the judge gave no usable answer (malformed, refused,
a step not asked about, nothing said yes, the budget spent): the structural ranking then stands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from otel_agent_trace.analyzer.judge import questions
from otel_agent_trace.analyzer.judge.client import OK, Reply
from otel_agent_trace.analyzer.judge.dossier import Dossier

Ask = Callable[[questions.Question], Reply]


@dataclass
class Verdict:
    position: int  # the judged step's position in the run
    agent: str
    category: str
    reason: str
    requests: int  # questions asked for it (cached ones included)
    cached: bool  # every answer came from the cache


class _Asker:
    """`ask` counting the questions of one run and whether all came from the cache."""

    def __init__(self, ask: Ask):
        self._ask = ask
        self.asked = 0
        self.all_cached = True

    def __call__(self, question: questions.Question) -> Reply:
        reply = self._ask(question)
        self.asked += 1
        self.all_cached = self.all_cached and reply.cached
        return reply

    def verdict(self, position: int, answer: dict) -> Verdict:
        return Verdict(position, str(answer.get("agent") or ""), questions.category(str(answer.get("category") or "")),
                       str(answer.get("reason") or ""), self.asked, self.all_cached)


def all_at_once(dossier: Dossier, ask: Ask) -> Verdict | None:
    asker = _Asker(ask)
    steps = sorted(dossier.candidates)
    reply = asker(questions.verdict(dossier, steps))
    if reply.status != OK or reply.answer["step"] not in steps:  # type: ignore[index]
        return None
    return asker.verdict(reply.answer["step"], reply.answer)  # type: ignore[index]


def step_by_step(dossier: Dossier, ask: Ask) -> Verdict | None:
    asker = _Asker(ask)
    for position in sorted(dossier.candidates):
        reply = asker(questions.step(dossier, position))
        if reply.status != OK:
            return None  # (an unusable answer ends the walk: a "no" cannot be assumed)
        if reply.answer["decisive"]:  # type: ignore[index]
            return asker.verdict(position, reply.answer)  # type: ignore[arg-type]
    return None


def binary_search(dossier: Dossier, ask: Ask) -> Verdict | None:
    asker = _Asker(ask)
    steps = sorted(dossier.candidates)
    while len(steps) > 1:
        middle = len(steps) // 2
        first, second = steps[:middle], steps[middle:]
        reply = asker(questions.half(dossier, first, second))
        if reply.status != OK:
            return None
        steps = first if reply.answer["half"] == "first" else second  # type: ignore[index]
    if not steps:
        return None
    reply = asker(questions.step(dossier, steps[0]))
    if reply.status != OK:
        return None
    return asker.verdict(steps[0], reply.answer)  # type: ignore[arg-type]


STRATEGIES: dict[str, Callable[[Dossier, Ask], Verdict | None]] = {
    "all_at_once": all_at_once, "step_by_step": step_by_step, "binary_search": binary_search}
