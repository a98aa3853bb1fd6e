"""The run a framework's agent executes in, by the one rule of recorder/delegation.py: the program's
run it is the body of (named after it), a sub-agent's run when an agent calls it, else its own
run, lingering after its answer; an agent on its team's task in the team's run."""

from __future__ import annotations

from otel_agent_trace._failopen import safely
from otel_agent_trace.recorder.delegation import JoinedRun, agent_run, run_to_join, tool_running
from otel_agent_trace.recorder.handler import Handler, installed_handler
from otel_agent_trace.recorder.invocation import Invocation, NoInvocation
from otel_agent_trace.recorder.run import RunInvocation


def open_agent_run(name: str | None) -> Invocation:
    """The agent invocation's run, to enter around its code: the program's run it is the body of
    (an entry point or `agent_run` around `agent.run`), named after the agent; a sub-agent's run
    nested under the tool or step of the agent that called it; else a run of its own that
    lingers after the answer (recorder/delegation.py)."""
    handler = installed_handler()
    if handler is None or not handler.enabled:
        return NoInvocation()
    joined = safely("agent run.join", _join, handler, name)
    return joined if joined is not None else agent_run(handler, name)


def open_member_run(team: RunInvocation | None, name: str | None) -> Invocation:
    """An agent working on its team's task (a crewai agent on one of its crew's tasks): it runs in
    the team's run, listed on it, unless an agent calls it (from a tool: a sub-agent's run); with
    no team, `open_agent_run`."""
    if team is None or team.ended or tool_running():
        return open_agent_run(name)
    if name:
        name_run(team, name)
    return NoInvocation()


def _join(handler: Handler, name: str | None) -> Invocation | None:
    outer = run_to_join(handler)
    if outer is None:
        return None
    if name:
        name_run(outer, name)
    return JoinedRun(outer)


def run_of(invocation: Invocation) -> RunInvocation | None:
    """The run an invocation from `open_agent_run` records into (None when nothing is recorded)."""
    run = getattr(invocation, "run", None)
    return run if isinstance(run, RunInvocation) else None


def name_run(run: RunInvocation, agent: str) -> None:
    """The run takes the agent's name, or lists it beside its own (`RunInvocation.add_agent`)."""
    run.add_agent(agent)
