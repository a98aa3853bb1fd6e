"""What the recorder remembers about one agent run while it is going on.

One `RunState` per run, reachable through a context variable (so it follows the agent's code
across `await`s and copied contexts); steps and tool records hold the span contexts that later
links point to. No span logic lives here.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from opentelemetry.trace import Span, SpanContext

from otel_agent_trace.model import Outcome, ToolCall


@dataclass
class ToolRecord:
    """A tool execution already written as an `execute_tool` span."""

    name: str
    call_id: str | None
    arguments: str | None
    outcome: Outcome
    span_context: SpanContext
    step_index: int | None
    source: str  # "explicit" | "inferred"
    phase: str | None = None
    retried: bool = False  # a later retry_of points here

    @property
    def failing(self) -> bool:
        """Non-ok, or carrying an upstream error: what a strong dependency must not rely on."""
        return self.outcome is not Outcome.OK or self.phase == "propagate"


@dataclass
class PendingCall:
    """A tool call the model requested, waiting for its execution or its result message."""

    call: ToolCall
    step: "StepState"
    record: ToolRecord | None = None  # set when an explicit tool ran for this call


@dataclass
class StepState:
    index: int
    span: Span
    started_ns: int
    decided_ns: int | None = None  # when the model's decision arrived (chat span end)
    tool_calls: list[ToolCall] = field(default_factory=list)
    final: bool = False
    phase: str | None = None


@dataclass
class RunState:
    """Everything one run has recorded so far; guarded by `lock` (tools may run in threads)."""

    span: Span
    name: str | None
    implicit: bool
    started: float = field(default_factory=time.monotonic)
    steps: list[StepState] = field(default_factory=list)
    open_step: StepState | None = None
    pending: dict[str, PendingCall] = field(default_factory=dict)
    records_by_call_id: dict[str, ToolRecord] = field(default_factory=dict)
    records: list[ToolRecord] = field(default_factory=list)
    seen_messages: set[str] = field(default_factory=set)
    message_roles: dict[str, str] = field(default_factory=dict)  # short hash -> role
    last_request_hashes: list[str] = field(default_factory=list)
    last_output_hash: str | None = None
    call_counts: Counter = field(default_factory=Counter)
    tokens: int = 0
    # value flow (recorder/flow.py): value key -> the first tool result it appeared in
    value_producers: dict[str, ToolRecord] = field(default_factory=dict)
    # values the model legitimately received: tool results, user, system and developer messages
    known_values: set[str] = field(default_factory=set)
    resource_writers: dict[str, ToolRecord] = field(default_factory=dict)
    validate: Callable[[str], Any] | None = None
    budget_exceeded: str | None = None
    ended: bool = False
    lock: threading.RLock = field(default_factory=threading.RLock)

    def step_for_call(self, call_id: str | None) -> StepState | None:
        pending = self.pending.get(call_id) if call_id else None
        return pending.step if pending else None


# The run explicitly opened by agent_run / an entrypoint, if any.
explicit_run: contextvars.ContextVar[RunState | None] = contextvars.ContextVar("agent_trace_explicit_run", default=None)
# The latest run opened implicitly by a chat request in this context.
implicit_run: contextvars.ContextVar[RunState | None] = contextvars.ContextVar("agent_trace_implicit_run", default=None)
# The execute_tool span currently running (explicit tools), so nested tool calls don't double-record.
active_tool: contextvars.ContextVar[Any] = contextvars.ContextVar("agent_trace_active_tool", default=None)
