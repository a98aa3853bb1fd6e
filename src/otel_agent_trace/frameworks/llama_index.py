"""llama-index agents and tools, with no code change.

* `FunctionTool.call` / `acall` (what `FunctionAgent`, `ReActAgent`, `CodeActAgent`,
  `AgentWorkflow` and `llm.predict_and_call` run a tool through): an explicit `execute_tool` span
  where the function runs, matched to the model's tool call by name and arguments (the agent does
  not pass the call id down), so its result is never inferred again. The span records what the
  function returned (`ToolOutput.raw_output`) and fails with what it raised, although the agent
  then hands the model the exception's text as an error result.
* `BaseWorkflowAgent.run` / `AgentWorkflow.run`: one run named after the agent (the root agent of
  an `AgentWorkflow`), or the program's run it is the body of, or a sub-agent's run when an agent
  calls it (frameworks/runs.py, recorder/delegation.py).
  `run()` only schedules the workflow and returns a handler: the run is made current in the
  context the workflow's tasks are created from (a copy of the caller's, so the caller's own
  context is left as it was), and ends when the handler's result is settled.

Model calls are not wrapped here: llama-index's LLMs call a client we patch (litellm, openai,
anthropic), so each model call is exactly one chat span whose request carries the agent's tool
schemas (`gen_ai.tool.definitions`); a step is the interval between two of them.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

from otel_agent_trace._failopen import safely
from otel_agent_trace.frameworks.tool_calls import tool_wrapper
from otel_agent_trace.frameworks.runs import open_agent_run
from otel_agent_trace.recorder.invocation import Invocation, NoInvocation
from otel_agent_trace.tool_decorator import describe_call
from otel_agent_trace.integration import Integration, Patch

TOOLS_MODULE = "llama_index.core.tools.function_tool"
AGENT_MODULE = "llama_index.core.agent.workflow.base_agent"
WORKFLOW_MODULE = "llama_index.core.agent.workflow.multi_agent_workflow"


# --- tools ----------------------------------------------------------------------------------------
def _describe(instance: Any, args: tuple, kwargs: dict) -> tuple[str, Any, None]:
    name = instance.metadata.get_name()
    _, arguments, _ = describe_call(instance.real_fn, name, args, kwargs)
    ctx_param = getattr(instance, "ctx_param_name", None)
    if ctx_param and isinstance(arguments, dict):
        arguments.pop(ctx_param, None)  # the workflow Context the agent injects is no argument
    return name, arguments, None


def _result(instance: Any, output: Any) -> Any:
    """What the function returned (a `[]` stays an empty result); a callback's override otherwise."""
    raw = getattr(output, "raw_output", None)
    return raw if raw is not None else getattr(output, "content", output)


tool = tool_wrapper(_describe, _result, "llama_index tool")


# --- agents ---------------------------------------------------------------------------------------
def _agent_name(instance: Any) -> str:
    return getattr(instance, "root_agent", None) or getattr(instance, "name", None) or type(instance).__name__


def _resumes(args: tuple, kwargs: dict) -> bool:
    """`run(ctx=...)` of a workflow already running sends it events: it is no new run."""
    ctx = kwargs.get("ctx", args[0] if args else None)
    return bool(getattr(ctx, "is_running", False))


def _settle(invocation: Invocation, handle: Any) -> bool:
    """End the run when the workflow's result is settled."""
    task = getattr(handle, "_result_task", None)  # the WorkflowHandler's own future
    if not isinstance(task, asyncio.Future):
        task = asyncio.ensure_future(handle.stop_event_result())

    def done(future: asyncio.Future) -> None:
        if future.cancelled():
            invocation.fail(asyncio.CancelledError())
        elif future.exception() is not None:
            invocation.fail(future.exception())  # type: ignore[arg-type]
        else:
            invocation.stop()

    task.add_done_callback(done)
    return True


def _start(invocation: Invocation, wrapped: Any, args: tuple, kwargs: dict) -> Any:
    """Inside the copied context: the run current, then the workflow scheduled from here."""
    safely("llama_index run.activate", invocation.activate)
    return wrapped(*args, **kwargs)


def agent(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    """`agent.run(...)` / `workflow.run(...)`: one run for the workflow it schedules."""
    if _resumes(args, kwargs):
        return wrapped(*args, **kwargs)
    invocation = safely("llama_index run.begin", open_agent_run, _agent_name(instance))
    if invocation is None or isinstance(invocation, NoInvocation):
        return wrapped(*args, **kwargs)
    try:
        handle = contextvars.copy_context().run(_start, invocation, wrapped, args, kwargs)
    except BaseException as exc:
        invocation.fail(exc)
        raise
    if not safely("llama_index run.settle", _settle, invocation, handle):
        invocation.stop()  # never left open: the run ends with the call that scheduled it
    return handle


TARGETS = {
    TOOLS_MODULE: {"FunctionTool.call": tool, "FunctionTool.acall": tool},
    AGENT_MODULE: {"BaseWorkflowAgent.run": agent},
    WORKFLOW_MODULE: {"AgentWorkflow.run": agent},
}
INTEGRATION = Integration("llama_index", tuple(Patch(module, target, wrapper) for module, targets in TARGETS.items()
                                      for target, wrapper in targets.items()))
