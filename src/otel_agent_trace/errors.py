"""Exceptions otel-agent-trace raises into the agent on purpose (never by accident)."""

from __future__ import annotations


class HostFacingError(Exception):
    """Base of the exceptions that fail-open wrappers let through to the agent."""


class AgentBudgetExceeded(HostFacingError):
    """Raised from the next LLM call of a run past its budget when `BUDGET_ACTION=raise`.

    `reason` is `steps`, `seconds` or `tokens`; `limit` the configured budget; `used` what the
    run had used when the call was refused. The call is not sent.
    """

    def __init__(self, reason: str, limit: float, used: float):
        super().__init__(f"agent run exceeded its {reason} budget: {used:g} used, limit {limit:g}")
        self.reason, self.limit, self.used = reason, limit, used
