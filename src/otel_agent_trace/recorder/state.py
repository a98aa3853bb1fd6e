"""The records a run keeps of its steps and tools, and the context variables that find the run.

The run itself (`run.RunInvocation`) holds these; steps and tool records keep the span contexts
that later links point to. No span logic lives here.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import Span, SpanContext

from otel_agent_trace.messages import ToolCall
from otel_agent_trace.vocabulary import Outcome


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
    # the result text its span holds whole (content capture on, not clipped), until the step whose
    # context shows it first names this span instead of writing the text again (chat.py)
    result: str | None = None

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
    code_tool_calls: list[str] = field(default_factory=list)  # tools a CodeAgent's code called (smolagents)


# The run explicitly opened by agent_run / an entrypoint, if any.
explicit_run: contextvars.ContextVar[Any] = contextvars.ContextVar("agent_trace_explicit_run", default=None)
# The latest run opened implicitly by a chat request in this context.
implicit_run: contextvars.ContextVar[Any] = contextvars.ContextVar("agent_trace_implicit_run", default=None)
# The execute_tool span currently running (explicit tools), so nested tool calls don't double-record.
active_tool: contextvars.ContextVar[Any] = contextvars.ContextVar("agent_trace_active_tool", default=None)
# The run a framework agent's code is running in, in this context (its own, or the program's run
# it joined): an agent invocation starting there is a sub-agent (recorder/delegation.py).
agent_running: contextvars.ContextVar[Any] = contextvars.ContextVar("agent_trace_agent_running", default=None)


class ModelCall:
    """A framework's model call in flight (a LangChain chat model's callback window): a chat of
    ours that starts inside it claims it, so the framework records no second chat for the call."""

    __slots__ = ("claimed",)

    def __init__(self) -> None:
        self.claimed = False


# The framework model call this context is inside, if any.
model_call: contextvars.ContextVar[ModelCall | None] = contextvars.ContextVar("agent_trace_model_call", default=None)
