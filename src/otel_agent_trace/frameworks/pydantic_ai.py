"""pydantic-ai: each agent run is one `invoke_agent {agent.name}` run; each tool executes inside
an explicit `execute_tool` span with the model's call id.

`Agent.iter` (which `run`, `run_sync` and `run_stream` go through) is wrapped in an async context
manager that opens the run; the model calls go through the openai client underneath and are
recorded by its wrapper (one chat span each, with the tool definitions pydantic-ai sends).
`ToolManager.execute_tool_call` is where a validated tool call really runs: its span holds the
exact timing, the result or the exception. A `ToolRetryError` (the tool raised `ModelRetry`, or
its arguments failed validation: pydantic-ai sends the model a retry prompt, the legacy
`RetryPromptPart`) fails the span with the error that caused it, so the model's next call of the
same tool is its `retry_of` and, when it works, `recovered`. A deferral (`CallDeferred`,
`ApprovalRequired`) is control flow: the span ends ok, marked deferred.
"""

from __future__ import annotations

from typing import Any

from otel_agent_trace._failopen import safely
from otel_agent_trace.frameworks.runs import name_run, open_agent_run, run_of
from otel_agent_trace.frameworks.tool_calls import tool_wrapper
from otel_agent_trace.integration import Integration, Patch
from otel_agent_trace.recorder.invocation import Invocation, NoInvocation

_DEFERRALS = ("CallDeferred", "ApprovalRequired")


# --- runs -----------------------------------------------------------------------------------------
def iter_wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    """`Agent.iter(...)` returns an async context manager: ours opens the run around it."""
    return _RunScope(wrapped(*args, **kwargs), instance)


class _RunScope:
    """The agent run's async context manager, inside one of our runs (fail-open)."""

    def __init__(self, inner: Any, agent: Any):
        self._inner, self._agent = inner, agent
        self._run: Invocation = NoInvocation()

    async def __aenter__(self) -> Any:
        self._run = safely("pydantic_ai.run", _open_run, self._agent) or NoInvocation()
        self._run.__enter__()
        try:
            value = await self._inner.__aenter__()
        except BaseException as exc:
            self._run.__exit__(type(exc), exc, exc.__traceback__)
            raise
        safely("pydantic_ai.run name", _name_run, self._run, self._agent)  # pydantic-ai infers it on entry
        return value

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        try:
            suppressed = await self._inner.__aexit__(exc_type, exc, tb)
        except BaseException as raised:
            self._run.__exit__(type(raised), raised, raised.__traceback__)
            raise
        if suppressed:
            self._run.__exit__(None, None, None)
        else:
            self._run.__exit__(exc_type, exc, tb)
        return suppressed

    def __getattr__(self, name: str) -> Any:  # anything else the context manager offers
        return getattr(self._inner, name)


def _open_run(agent: Any) -> Invocation:
    return open_agent_run(getattr(agent, "name", None))


def _name_run(invocation: Invocation, agent: Any) -> None:
    name, run = getattr(agent, "name", None), run_of(invocation)
    if run is not None and name:
        name_run(run, name)


# --- tools ----------------------------------------------------------------------------------------
def _describe_tool(instance: Any, args: tuple, kwargs: dict) -> tuple[str, Any, str | None] | None:
    """`ToolManager.execute_tool_call(validated)`: the validated call's tool, arguments and id."""
    validated = args[0] if args else kwargs.get("validated")
    if validated is None:
        return None
    call = validated.call
    arguments = validated.validated_args if validated.validated_args is not None else call.args
    return call.tool_name, arguments, call.tool_call_id


def _cause(exc: BaseException) -> BaseException | str:
    """What the tool span fails with: the `ModelRetry` / `ValidationError` / `ToolFailed` behind
    pydantic-ai's wrapper errors, the exception itself otherwise; a deferral (the tool did not
    run, nothing failed) stops it with a note."""
    name = type(exc).__name__
    if name in _DEFERRALS:
        return f"deferred: {name}"
    if name in ("ToolRetryError", "ToolFailedError") and exc.__cause__ is not None:
        return exc.__cause__
    return exc


def _result_value(instance: Any, result: Any) -> Any:
    """The value the model is shown: a `ToolReturn`'s return value, a pydantic model as JSON data."""
    if type(result).__name__ == "ToolReturn" and hasattr(result, "return_value"):
        result = result.return_value
    dump = getattr(result, "model_dump", None)
    if callable(dump) and not isinstance(result, type):
        return dump(mode="json")
    return result


# `ToolManager.execute_tool_call(validated)`: one explicit tool span per call
execute_wrapper = tool_wrapper(_describe_tool, _result_value, "pydantic_ai.tool", raised=_cause)


# module -> ((target, wrapper), ...): what the instrumentor patches when the module is imported
PATCHES = {
    "pydantic_ai.agent": (("Agent.iter", iter_wrapper),),
    "pydantic_ai.tool_manager": (("ToolManager.execute_tool_call", execute_wrapper),),
}
INTEGRATION = Integration("pydantic_ai", tuple(Patch(module, target, wrapper) for module, targets in PATCHES.items()
                                      for target, wrapper in targets))
