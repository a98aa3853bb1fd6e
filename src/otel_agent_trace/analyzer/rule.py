"""A critical-failure rule: what the analyzer treats as a task-level failure when it matches a span.
The rules of a team's file (critical_rules.py) and the verdict sources that know a run failed from
outside it (verdicts.py, evaluations.py) are all rules of this shape."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Rule:
    rule_id: str
    description: str = ""
    match: dict[str, Any] = field(default_factory=dict)
    trace_back: bool = True
    enabled: bool = True
    builtin: bool = False
