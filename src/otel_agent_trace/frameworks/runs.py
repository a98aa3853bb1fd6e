"""The run a framework's agent executes in: its own, or the one it is the body of, named after it."""

from __future__ import annotations

from otel_agent_trace.recorder.handler import installed_handler
from otel_agent_trace.recorder.invocation import Invocation, NoInvocation
from otel_agent_trace.recorder.run import RunInvocation, current_explicit
from otel_agent_trace.recorder.state import active_tool


def open_agent_run(name: str | None) -> Invocation:
    """A run of its own (enter it), unless the agent already runs inside one of our runs as its
    body (an entry point or `agent_run` around `agent.run`): then that run is the agent's and a
    no-op is returned. Called from inside a tool, the agent is a sub-agent: a run nested under the
    tool span."""
    handler = installed_handler()
    if handler is None or not handler.enabled:
        return NoInvocation()
    outer = current_explicit()
    if outer is not None and active_tool.get() is None:
        if name:
            name_run(outer, name)
        return NoInvocation()
    return handler.run(name)


def name_run(run: RunInvocation, agent: str) -> None:
    """The run takes the agent's name, or lists it beside its own (`RunInvocation.add_agent`)."""
    run.add_agent(agent)
