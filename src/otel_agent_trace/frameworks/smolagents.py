"""smolagents: `MultiStepAgent.run` is one `invoke_agent {agent.name}` run, each `Tool.__call__`
an explicit `execute_tool` span, a managed agent called by its manager a tool span with the
sub-agent's run nested under it.

The model calls go through the openai client underneath (`OpenAIServerModel`) and are recorded by
its wrapper: each model call, a `ToolCallingAgent` action step as much as a planning step, is one
`agent_step` with its chat span. A `ToolCallingAgent` tool is matched to the model's call by name
and arguments (smolagents does not hand the call id to the tool), inside the step that asked for
it. A `CodeAgent`'s tools are called from the code the model wrote: they carry no call id and sit
in the step whose answer held the code (the time window of that step). smolagents runs parallel
tool calls in a `ThreadPoolExecutor` with `copy_context()`: the run is found from those threads;
a CodeAgent's code runs in a worker thread without it (`local_python_executor.timeout`): ours
hands the caller's context over.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from typing import Any, Iterator

from otel_agent_trace._failopen import safely
from otel_agent_trace.frameworks.runs import open_agent_run
from otel_agent_trace.semconv import STEP_KIND, STEP_TOOL_CALLS
from otel_agent_trace.recorder.invocation import Invocation, NoInvocation
from otel_agent_trace.frameworks.tool_calls import tool_wrapper as tool_wrapper_for
from otel_agent_trace.integration import Integration, Patch


def agent_name(agent: Any) -> str:
    return getattr(agent, "name", None) or type(agent).__name__


# --- runs -----------------------------------------------------------------------------------------
def run_wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    """`agent.run(task)`: the whole run inside ours; `stream=True` runs while its steps are read."""
    if kwargs.get("stream", args[1] if len(args) > 1 else False):
        return _streamed(instance, wrapped(*args, **kwargs))  # (nothing ran yet: a generator)
    run = safely("smolagents.run", open_agent_run, agent_name(instance)) or NoInvocation()
    with run:
        return wrapped(*args, **kwargs)


def _streamed(agent: Any, steps: Iterator[Any]) -> Iterator[Any]:
    """The run is current each time the consumer asks for the next step, and ends with the steps
    (or when the consumer stops reading)."""
    run = safely("smolagents.run", open_agent_run, agent_name(agent)) or NoInvocation()
    run.defer()
    try:
        while True:
            with run:
                try:
                    step = next(steps)
                except StopIteration:
                    break
            yield step
    finally:
        run.stop()  # (after a failure: already settled, nothing happens)


# --- tools ----------------------------------------------------------------------------------------
def _step_kind(recording: Invocation, instance: Any) -> None:
    """What the step that ran this tool was. smolagents answers through its `final_answer` tool:
    that step is the run's answer (`final`), as a step without tool calls is for a plain loop. A
    CodeAgent's step whose code called tools (its answer held no tool calls, so it was read as
    `final`) is a `tool_call` step naming them."""
    step = getattr(getattr(recording, "start", None), "step", None)
    if step is None:
        return
    if type(instance).__name__ == "FinalAnswerTool":
        step.final = True
        step.span.set_attribute(STEP_KIND, "final")
    elif not step.tool_calls:
        step.final = False
        step.code_tool_calls = step.code_tool_calls + [recording.start.name]  # type: ignore[attr-defined]
        step.span.set_attributes({STEP_KIND: "tool_call", STEP_TOOL_CALLS: step.code_tool_calls})


def _arguments(tool: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    arguments = {k: v for k, v in kwargs.items() if k != "sanitize_inputs_outputs"}
    if len(args) == 1 and not arguments and isinstance(args[0], dict):
        arguments = args[0]
    elif args:  # positional: named after the tool's declared inputs (a managed agent: `task`)
        names = list(getattr(tool, "inputs", None) or ["task"])
        arguments = {**dict(zip(names, args)), **arguments}
    return arguments


def _describe_tool(instance: Any, args: tuple, kwargs: dict) -> tuple[str, Any, None] | None:
    """`Tool.__call__(*args, **kwargs)`."""
    name = getattr(instance, "name", None)
    return (name, _arguments(instance, args, kwargs), None) if name else None


def _describe_managed_agent(instance: Any, args: tuple, kwargs: dict) -> tuple[str, Any, None] | None:
    """`MultiStepAgent.__call__(task)`: a manager calling its managed agent, a tool of its own."""
    name = agent_name(instance)
    return (name, _arguments(None, args, kwargs), None) if name else None


def _result_value(instance: Any, result: Any) -> Any:
    """What the tool returned: smolagents' Agent* output types as their raw value."""
    to_raw = getattr(result, "to_raw", None)
    if callable(to_raw) and type(result).__module__.startswith("smolagents"):
        return to_raw()
    return result


# one explicit tool span where the tool runs; its step's kind from what ran (`_step_kind`)
tool_wrapper = tool_wrapper_for(_describe_tool, _result_value, "smolagents.tool", after=_step_kind)
managed_agent_wrapper = tool_wrapper_for(_describe_managed_agent, where="smolagents.managed agent")


# --- threads --------------------------------------------------------------------------------------
def timeout_wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    """`local_python_executor.timeout(seconds)`: the decorator that runs a CodeAgent's code in a
    fresh `ThreadPoolExecutor` worker, without the caller's context. Ours runs the code in a copy
    of the context of the thread that called it, so the tools the code calls find their run."""
    decorator = wrapped(*args, **kwargs)

    def in_callers_context(func: Any) -> Any:
        @functools.wraps(func)
        def call(*call_args: Any, **call_kwargs: Any) -> Any:
            context = contextvars.copy_context()
            return decorator(functools.partial(context.run, func))(*call_args, **call_kwargs)

        return call

    return in_callers_context


# module -> ((target, wrapper), ...): what the instrumentor patches when the module is imported
PATCHES = {
    "smolagents.agents": (("MultiStepAgent.run", run_wrapper), ("MultiStepAgent.__call__", managed_agent_wrapper)),
    "smolagents.tools": (("Tool.__call__", tool_wrapper),),
    "smolagents.local_python_executor": (("timeout", timeout_wrapper),),
}
INTEGRATION = Integration("smolagents", tuple(Patch(module, target, wrapper) for module, targets in PATCHES.items()
                                      for target, wrapper in targets))
