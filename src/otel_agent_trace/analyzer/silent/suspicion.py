"""What a silent signal names: a place (a decision) with the reason a person checks, and the
signals' names, each the error type of the `errors[]` entry it makes (analyzer only, never
recorded; a made-up value is the recorder's `fabricated_value`, found anywhere in the run, not
only in the answer)."""

from __future__ import annotations

from dataclasses import dataclass, field

from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.vocabulary import ErrorType

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
