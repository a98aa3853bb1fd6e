"""The one rule for the run a framework's agent invocation (a LangGraph graph's `invoke`, a
pydantic-ai `run`, a smolagents `run`, an openai-agents agent, a llama-index workflow) runs in.

- The body of a run the program opened (an entry point, `agent_run`), with no agent calling it:
  it runs inside that run (`run_to_join`; the agent is named on it, frameworks/runs.py), so a
  task is one run however many framework calls it makes.
- Called by an agent (inside a recorded tool, or from a node / step of another framework agent's
  run, or of an implicit run that has not answered): a sub-agent's run, a child of the span that
  delegated to it (the running tool, else the calling run's open step, else that run) with a
  `delegated_to` link; the tools it runs are its own. It ends when it returns.
- Otherwise: a run of its own, named after the agent, that lingers after it answers like an
  answered implicit run (`ImplicitRuns.linger`): it ends when its thread or task starts another
  run, after `run_idle_seconds`, at a provider flush, or at exit, so that an exception the program
  raises about its answer (uncaught: `excepthook`, a thread's, the asyncio handler's) marks it
  failed.

A LangGraph thread resumed after `interrupt` (frameworks/langchain.py) goes on in its lingering
run (`continue_run`) while that run is still open.

`resume(run)` makes a run current again around each resumption of a stream that a framework
hands out as a generator.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from otel_agent_trace._failopen import safely
from otel_agent_trace.recorder.handler import Handler
from otel_agent_trace.recorder.invocation import Invocation, NoInvocation
from otel_agent_trace.recorder.run import RunInvocation, caller_of_here, current_explicit
from otel_agent_trace.recorder.state import active_tool, agent_running


def tool_running() -> bool:
    """A recorded tool is running here: an agent invoked now is called by the agent using it."""
    tool = active_tool.get()
    return tool is not None and not tool.settled


def run_to_join(handler: Handler | None) -> RunInvocation | None:
    """The run the program opened around this agent invocation, which no agent calls: no recorded
    tool is running and no framework agent's code is running in that run."""
    if handler is None or not handler.enabled:
        return None
    if tool_running():
        return None
    run = current_explicit()
    if run is None or agent_running.get() is run:
        return None
    return run


def delegating_span(handler: Handler) -> Any:
    """The span of the agent calling an agent invocation starting here (a sub-agent): the running
    tool, else the calling run's open step, else that run; None when no agent calls it."""
    tool = active_tool.get()
    if tool is not None and not tool.settled:
        return tool.span
    caller = handler.current_run()
    if caller is None or (caller.implicit and caller.answered_ns is not None):
        return None  # an implicit run that answered calls no one: the program moved on
    step = caller.open_step
    return step.span if step is not None else caller.span


def _open(handler: Handler, name: str | None) -> tuple[RunInvocation, bool]:
    delegating = delegating_span(handler)
    if delegating is None:
        handler.implicit.end_answered()
    return handler.new_run(name, None, delegating), delegating is not None


class AgentRun(Invocation):
    """A run as a context manager that also clears the calling tool while the sub-agent runs,
    and marks its context as running an agent (`agent_running`)."""

    kind = "agent run"

    def __init__(self, handler: Handler, run: RunInvocation, nested: bool):
        super().__init__()
        self.handler, self.run, self.nested = handler, run, nested
        self.span = run.span
        self.caller = caller_of_here()  # where the program invoked the agent: its run lingers there
        self._tokens_: list[tuple[Any, Any, Any]] = []

    def activate(self) -> None:
        self.run.activate()
        self._tokens_.append((self.run.enter(), active_tool.set(None), agent_running.set(self.run)))

    def deactivate(self) -> None:
        if self._tokens_:
            run_token, tool_token, agent_token = self._tokens_.pop()
            agent_running.reset(agent_token)
            active_tool.reset(tool_token)
            self.run.leave(run_token)
        self.run.deactivate()

    def _on_stop(self, *result: Any) -> None:
        if self.nested:
            self.run.end()
        else:  # the program may still judge the answer (and raise): ImplicitRuns.linger
            self.handler.implicit.linger(self.run, self.caller)

    def _on_fail(self, exc: BaseException) -> None:
        self.run.end(exc)


class JoinedRun(Invocation):
    """An agent invocation that runs in the program's run (`run_to_join`): while its code runs
    that run is marked as an agent's, so an agent it calls (a node's graph) is a sub-agent; it
    ends nothing (the program's run ends with the program's block)."""

    kind = "joined run"

    def __init__(self, run: RunInvocation):
        super().__init__()
        self.run = run
        self.span = run.span
        self._tokens_: list[Any] = []

    def activate(self) -> None:
        self.run.activate()
        self._tokens_.append(agent_running.set(self.run))

    def deactivate(self) -> None:
        if self._tokens_:
            agent_running.reset(self._tokens_.pop())
        self.run.deactivate()

    def _on_stop(self, *result: Any) -> None:
        pass

    def _on_fail(self, exc: BaseException) -> None:
        pass


def agent_run(handler: Handler | None, name: str | None) -> Invocation:
    """The run of one agent invocation by the rule above, without the join (frameworks/runs.py
    `open_agent_run` joins): nested and linked when an agent calls it, else its own, lingering."""
    if handler is None or not handler.enabled:
        return NoInvocation()
    opened = safely("agent run.start", _open, handler, name)
    return AgentRun(handler, *opened) if opened is not None else NoInvocation()


def continue_run(handler: Handler | None, run: RunInvocation | None) -> Invocation | None:
    """The invocation that goes on with `run`, an agent's own run lingering after it answered (a
    LangGraph thread resumed after `interrupt`), when nothing else claims this invocation (no run
    of the program to join, no agent calling) and the run is still open; else None."""
    if handler is None or not handler.enabled or run is None or run.ended:
        return None
    if current_explicit() is not None or delegating_span(handler) is not None:
        return None
    if not handler.implicit.reclaim(run):
        return None
    handler.implicit.end_answered()  # this thread's other answered runs are over
    run.reopen()
    return AgentRun(handler, run, False)


@contextlib.contextmanager
def resume(invocation: Invocation) -> Iterator[None]:
    """Current around one resumption of a generator (entered and left in the same context)."""
    safely("agent run.resume", invocation.activate)
    try:
        yield
    finally:
        safely("agent run.pause", invocation.deactivate)
