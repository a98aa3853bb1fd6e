"""crewai crews, agents and tools, with no code change.

* `Crew.kickoff` / `kickoff_async` / `akickoff`: one run named after the crew (`Crew.name`), or
  the program's run it is the body of, or a sub-agent's run when an agent calls it, lingering
  after its answer otherwise (frameworks/runs.py `open_agent_run`). `kickoff_async` runs
  `kickoff` in a worker thread: the run is opened in the caller's task, the inner call goes on in
  it. A `stream=True` kickoff is left to the plain kickoff crewai runs in its worker.
* `Agent.execute_task` / `aexecute_task`: an agent working on one of its crew's tasks runs in
  the crew's run and is listed on it (`agent_trace.run.agents`, by its `role`); called from a tool
  (crewai's "Delegate work to coworker", a crew inside a tool) it is a sub-agent's run nested
  under that tool; alone (no crew), a run of its own. `Agent.kickoff` / `kickoff_async` (an agent
  without a crew) is a run named after its role.
* `BaseTool.run` / `arun`, `Tool.run` / `arun` (native function calling: crewai calls
  `tool.run(**arguments)`) and `CrewStructuredTool.invoke` / `ainvoke` (text ReAct tool calls):
  an explicit `execute_tool` span where the tool runs (frameworks/tool_calls.py), matched to the
  model's call by name and arguments (crewai does not hand the call id to the tool); what the tool
  returned is the result (`[]` stays an empty result), a returned `ToolFailure` (a spent usage
  limit) fails the span, and an exception fails it although crewai hands its text to the model.

Model calls are not wrapped here: crewai's native OpenAI provider calls the openai client
(`chat.completions.with_raw_response.create`), litellm for other providers, both patched, so each
model call is one chat span. crewai's own telemetry uses a tracer provider of its own (never the
global one): `CREWAI_DISABLE_TELEMETRY=true` turns it off; `OTEL_SDK_DISABLED=true` would too, but
it turns ours off as well (docs/coverage.md).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from typing import Any

from otel_agent_trace._failopen import safely
from otel_agent_trace.frameworks.runs import open_agent_run, open_member_run, run_of
from otel_agent_trace.frameworks.tool_calls import Failed, tool_wrapper
from otel_agent_trace.integration import Integration, Patch
from otel_agent_trace.recorder.invocation import Invocation, NoInvocation

CREW_MODULE = "crewai.crew"
AGENT_MODULE = "crewai.agent.core"
TOOLS_MODULE = "crewai.tools.base_tool"
STRUCTURED_MODULE = "crewai.tools.structured_tool"

# the crew or agent whose kickoff this context runs: its own inner kickoff is no second run
_kicking_off: contextvars.ContextVar[Any] = contextvars.ContextVar("agent_trace_crewai_kickoff", default=None)
# the run the crew of this context records into: its agents' tasks run in it
_crew_run: contextvars.ContextVar[Any] = contextvars.ContextVar("agent_trace_crewai_crew_run", default=None)


def _crew_name(crew: Any) -> str:
    return getattr(crew, "name", None) or "crew"


def _role(agent: Any) -> str:
    return getattr(agent, "role", None) or type(agent).__name__


# --- runs -----------------------------------------------------------------------------------------
def _open(instance: Any, crew: bool) -> tuple[Invocation, list[Any]]:
    """The kickoff's run, and the tokens marking this context as inside it."""
    invocation = open_agent_run(_crew_name(instance) if crew else _role(instance))
    tokens = [_kicking_off.set(instance), _crew_run.set(run_of(invocation) if crew else None)]
    return invocation, tokens


def _close(tokens: list[Any]) -> None:
    _crew_run.reset(tokens[1])
    _kicking_off.reset(tokens[0])


def _passes_through(instance: Any) -> bool:
    """No run of ours: the same kickoff already runs here (`kickoff_async` → `kickoff` in a thread,
    `akickoff` → `kickoff_async`), or a streaming crew (its worker's plain kickoff is the run)."""
    return _kicking_off.get() is instance or getattr(instance, "stream", False) is True


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _kickoff(crew: bool) -> Any:
    def kickoff(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        """`Crew.kickoff` / `Agent.kickoff`: the whole kickoff inside its run (an agent's kickoff
        inside a running loop hands out `kickoff_async`, whose run it is)."""
        if _passes_through(instance) or (not crew and _loop_running()):
            return wrapped(*args, **kwargs)
        opened = safely("crewai.kickoff", _open, instance, crew)
        if opened is None:
            return wrapped(*args, **kwargs)
        invocation, tokens = opened
        try:
            with invocation:
                return wrapped(*args, **kwargs)
        finally:
            _close(tokens)

    return kickoff


def _kickoff_async(crew: bool) -> Any:
    async def run(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        opened = safely("crewai.kickoff", _open, instance, crew)
        if opened is None:
            return await wrapped(*args, **kwargs)
        invocation, tokens = opened
        try:
            with invocation:
                return await wrapped(*args, **kwargs)
        finally:
            _close(tokens)

    def kickoff_async(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        """`kickoff_async` / `akickoff`: the run opens when the coroutine runs, in the caller's task."""
        if _passes_through(instance):
            return wrapped(*args, **kwargs)
        return run(wrapped, instance, args, kwargs)

    return kickoff_async


def execute_task(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    """`Agent.execute_task` / `aexecute_task`: in its crew's run, or a (sub-)agent's run."""
    invocation = safely("crewai.task", open_member_run, _crew_run.get(), _role(instance)) or NoInvocation()
    if asyncio.iscoroutinefunction(wrapped):
        return _awaited(invocation, wrapped, args, kwargs)
    token = _crew_run.set(None)  # a crew the task runs (from a tool) is no member of this one
    try:
        with invocation:
            return wrapped(*args, **kwargs)
    finally:
        _crew_run.reset(token)


async def _awaited(invocation: Invocation, wrapped: Any, args: tuple, kwargs: dict) -> Any:
    token = _crew_run.set(None)
    try:
        with invocation:
            return await wrapped(*args, **kwargs)
    finally:
        _crew_run.reset(token)


# --- tools ----------------------------------------------------------------------------------------
def _tool_name(tool: Any) -> str | None:
    """The name the model calls the tool by (crewai sanitizes it for function calling)."""
    name = getattr(tool, "name", None)
    if not name:
        return None
    try:
        from crewai.utilities.string_utils import sanitize_tool_name
    except ImportError:
        return name
    return sanitize_tool_name(name)


def _arguments(tool: Any, args: tuple, kwargs: dict) -> Any:
    if not args:
        return dict(kwargs)
    schema = getattr(tool, "args_schema", None)
    names = list(getattr(schema, "model_fields", None) or ())
    return {**dict(zip(names, args)), **kwargs} if names else {"args": list(args), **kwargs}


def _describe_run(instance: Any, args: tuple, kwargs: dict) -> tuple[str, Any, None] | None:
    """`tool.run(**arguments)` / `arun`."""
    name = _tool_name(instance)
    return (name, _arguments(instance, args, kwargs), None) if name else None


def _describe_invoke(instance: Any, args: tuple, kwargs: dict) -> tuple[str, Any, None] | None:
    """`CrewStructuredTool.invoke(input, config=None, **kwargs)`: input a dict or its JSON text."""
    name = _tool_name(instance)
    if not name:
        return None
    tool_input = args[0] if args else kwargs.get("input")
    if isinstance(tool_input, str):
        try:
            tool_input = json.loads(tool_input)
        except ValueError:
            pass
    return name, tool_input, None


def _result(instance: Any, returned: Any) -> Any:
    """What the tool returned; a `ToolFailure` it returned (a spent usage limit) fails the span."""
    if type(returned).__name__ == "ToolFailure" and hasattr(returned, "message"):
        return Failed(RuntimeError(returned.message))
    return returned


tool = tool_wrapper(_describe_run, _result, "crewai.tool")
structured_tool = tool_wrapper(_describe_invoke, _result, "crewai.structured tool")


# module -> {target: wrapper}: what the instrumentor patches when the module is imported
TARGETS = {
    CREW_MODULE: {"Crew.kickoff": _kickoff(crew=True), "Crew.kickoff_async": _kickoff_async(crew=True),
                  "Crew.akickoff": _kickoff_async(crew=True)},
    AGENT_MODULE: {"Agent.kickoff": _kickoff(crew=False), "Agent.kickoff_async": _kickoff_async(crew=False),
                   "Agent.execute_task": execute_task, "Agent.aexecute_task": execute_task},
    TOOLS_MODULE: {"BaseTool.run": tool, "BaseTool.arun": tool, "Tool.run": tool, "Tool.arun": tool},
    STRUCTURED_MODULE: {"CrewStructuredTool.invoke": structured_tool, "CrewStructuredTool.ainvoke": structured_tool},
}
INTEGRATION = Integration("crewai", tuple(Patch(module, target, wrapper) for module, targets in TARGETS.items()
                                   for target, wrapper in targets.items()))
