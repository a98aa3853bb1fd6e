"""What every framework integration does with the run an agent executes in: name it after the agent."""

from __future__ import annotations

from otel_agent_trace.model import GEN_AI_AGENT_NAME, OP_INVOKE_AGENT, RUN_AGENTS
from otel_agent_trace.recorder.run import RunInvocation


def name_run(run: RunInvocation, agent: str) -> None:
    """An unnamed run takes the agent's name. A run already named (an entry point, `agent_run("x")`)
    keeps it and lists the agent in `agent_trace.run.agents`, so that the framework's own run span
    of that agent, directly inside, is read as the same run (analyzer/runs.py `_without_echoes`)."""
    if not run.name:
        run.name = agent
        run.span.set_attribute(GEN_AI_AGENT_NAME, agent)
        run.span.update_name(f"{OP_INVOKE_AGENT} {agent}")
    elif agent != run.name:
        with run.lock:
            agents = getattr(run, "framework_agents", [])
            if agent not in agents:
                run.framework_agents = agents + [agent]  # type: ignore[attr-defined]
                run.span.set_attribute(RUN_AGENTS, run.framework_agents)  # type: ignore[attr-defined]
