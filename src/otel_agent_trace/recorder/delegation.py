"""Runs that a framework opens for an agent, nested when one agent delegates to another.

A framework's agent invocation (a LangGraph graph's `invoke`, ...) is an explicit run named after
the agent. Opened while another run is current, it is a sub-agent's run: a child of the span that
delegated to it (the running tool when the sub-agent is called as a tool, else the calling run's
open step, else that run) with a `delegated_to` link to it, and the tools it runs are its own
(the calling tool's span does not swallow them). A sub-agent's run ends when it returns; an
outermost one lingers like an answered implicit run (`ImplicitRuns.linger`), so that an exception the
program raises about its answer marks it failed. `resume(run)` makes a run current again around
each resumption of a stream that a framework hands out as a generator.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from otel_agent_trace._failopen import safely
from otel_agent_trace.recorder.handler import Handler
from otel_agent_trace.recorder.invocation import Invocation, NoInvocation
from otel_agent_trace.recorder.run import RunInvocation
from otel_agent_trace.recorder.state import active_tool


def _delegating_span(handler: Handler) -> Any:
    tool = active_tool.get()
    if tool is not None and not tool.settled:
        return tool.span
    caller = handler.current_run()
    if caller is None:
        return None
    step = caller.open_step
    return step.span if step is not None else caller.span


def _open(handler: Handler, name: str | None) -> tuple[RunInvocation, bool]:
    delegating = _delegating_span(handler)
    if delegating is None:
        handler.implicit.end_answered()
    return handler.new_run(name, None, delegating), delegating is not None


class AgentRun(Invocation):
    """A run as a context manager that also clears the calling tool while the sub-agent runs."""

    kind = "agent run"

    def __init__(self, handler: Handler, run: RunInvocation, nested: bool):
        super().__init__()
        self.handler, self.run, self.nested = handler, run, nested
        self.span = run.span
        self._tokens_: list[tuple[Any, Any]] = []

    def activate(self) -> None:
        self.run.activate()
        self._tokens_.append((self.run.enter(), active_tool.set(None)))

    def deactivate(self) -> None:
        if self._tokens_:
            run_token, tool_token = self._tokens_.pop()
            active_tool.reset(tool_token)
            self.run.leave(run_token)
        self.run.deactivate()

    def _on_stop(self, *result: Any) -> None:
        if self.nested:
            self.run.end()
        else:  # the program may still judge the answer (and raise): ImplicitRuns.linger
            self.handler.implicit.linger(self.run)

    def _on_fail(self, exc: BaseException) -> None:
        self.run.end(exc)


def agent_run(handler: Handler | None, name: str | None) -> Invocation:
    """The run of one agent invocation (nested and linked when another run is current)."""
    if handler is None or not handler.enabled:
        return NoInvocation()
    opened = safely("agent run.start", _open, handler, name)
    return AgentRun(handler, *opened) if opened is not None else NoInvocation()


@contextlib.contextmanager
def resume(invocation: Invocation) -> Iterator[None]:
    """Current around one resumption of a generator (entered and left in the same context)."""
    safely("agent run.resume", invocation.activate)
    try:
        yield
    finally:
        safely("agent run.pause", invocation.deactivate)
