"""OpenAI Agents SDK (`openai-agents`): each agent's run is a run, each model turn a step, each
function tool an `execute_tool` span recorded where the SDK runs it; a handoff is a sub-run
nested under the step that handed off (a `delegated_to` link); a guardrail trip fails the run.

Two surfaces, because neither alone has everything:
- the SDK's own tracing, through `agents.add_trace_processor` (added beside OpenAI's exporter,
  never replacing it), says when an agent starts and ends and when it hands off. Its callbacks run
  in the runner's own context, so the run set current there is the one the model calls and tools
  (tasks created later) see;
- the SDK's runners, wrapped: the tool runner (`run_internal.tool_execution.
  _invoke_function_tool_with_metadata`) runs each function tool with its call id; a tool exception
  the SDK turns into text for the model is caught where the SDK hands it to its failure formatter;
  `run_internal.guardrails.run_single_{input,output}_guardrail` say which guardrail tripped.
The model calls go through the openai client and are recorded by the providers (one chat span
each). With the SDK's tracing disabled the runs are implicit ones, found by conversation, and the
tools are still recorded where they run.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
from dataclasses import dataclass
from typing import Any, Iterator

from opentelemetry import trace

from otel_agent_trace._failopen import safely
from otel_agent_trace.frameworks.runs import name_run
from otel_agent_trace.recorder.delegation import delegating_span, run_to_join
from otel_agent_trace.recorder.handler import installed_handler
from otel_agent_trace.recorder.invocation import Invocation
from otel_agent_trace.recorder.run import RunInvocation, current_explicit
from otel_agent_trace.frameworks.tool_calls import Failed, tool_wrapper
from otel_agent_trace.integration import ImportHook, Integration, Patch
from otel_agent_trace.semconv import (
    GEN_AI_TOOL_NAME,
    GUARDRAIL_BEHAVIOR,
    GUARDRAIL_EVENT,
    GUARDRAIL_KIND,
    GUARDRAIL_NAME,
)

MODULE = "agents"
TOOL_RUNNER = ("agents.run_internal.tool_execution", "_invoke_function_tool_with_metadata")
FAILURE_FORMATTER = ("agents.tool", "maybe_invoke_function_tool_failure_error_function")

# the exceptions a function tool raised that the SDK turned into text for the model
_handled: contextvars.ContextVar[list[BaseException] | None] = contextvars.ContextVar(
    "agent_trace_agents_handled", default=None)


class AgentsRunError(Exception):
    """The error the SDK recorded on an agent span, when the exception itself is not in flight."""


@dataclass
class _Agent:
    run: RunInvocation
    token: Any  # explicit_run token of the runner's context
    root: bool  # no run was current when it started: it is held open after its answer
    tools: frozenset[str]  # its function tools' names (a handoff's call is the other kind)
    delegator: "_Agent | None" = None  # the agent whose step handed off to this one
    handed_off: bool = False
    joined: bool = False  # it runs in the program's run (an entry point's): ending it ends nothing


@dataclass
class _Delegation:
    agent: _Agent
    step: trace.Span | None
    to_agent: str | None


class AgentsProcessor:
    """The SDK's TracingProcessor interface (mixed into the SDK's base class by `processor()`);
    inert while no instrumentor is installed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._agents: dict[str, _Agent] = {}  # SDK agent span id -> its run
        self._handoffs: dict[str, tuple[_Agent, Invocation | None, trace.Span | None]] = {}
        self._delegations: dict[str, _Delegation] = {}  # SDK trace id -> the handoff awaiting its agent

    # --- the SDK's interface -----------------------------------------------------------------------
    def on_trace_start(self, sdk_trace: Any) -> None:
        pass

    def on_trace_end(self, sdk_trace: Any) -> None:
        with self._lock:
            waiting = self._delegations.pop(getattr(sdk_trace, "trace_id", None), None)
        if waiting is not None:  # a handoff no agent took up: its run ends with the trace
            safely("agents.trace end", self._finish, waiting.agent, None)

    def on_span_start(self, span: Any) -> None:
        kind = getattr(span.span_data, "type", None)
        if kind == "agent":
            safely("agents.agent start", self._agent_start, span)
        elif kind == "handoff":
            safely("agents.handoff start", self._handoff_start, span)

    def on_span_end(self, span: Any) -> None:
        kind = getattr(span.span_data, "type", None)
        if kind == "agent":
            safely("agents.agent end", self._agent_end, span)
        elif kind == "handoff":
            safely("agents.handoff end", self._handoff_end, span)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass

    # --- agents as runs ----------------------------------------------------------------------------
    def _agent_start(self, span: Any) -> None:
        handler = installed_handler()
        if handler is None:
            return
        data = span.span_data
        with self._lock:
            delegation = self._delegations.pop(span.trace_id, None)
        if delegation is not None and delegation.to_agent not in (None, data.name):
            safely("agents.handoff lost", self._finish, delegation.agent, None)
            delegation = None
        joined = run_to_join(handler) if delegation is None and not self._is_agent(current_explicit()) else None
        root = delegation is None and joined is None and current_explicit() is None
        if root:
            handler.implicit.end_answered()  # this thread's previous answered run is over
        if joined is not None:
            name_run(joined, data.name)
            run = joined
        else:
            # a handoff's step, else the tool that runs this agent (`Agent.as_tool`) or the step calling it
            delegated_by = delegation.step if delegation else (None if root else delegating_span(handler))
            run = handler.run(data.name, delegated_by=delegated_by)
        if not isinstance(run, RunInvocation):
            return
        token = run.enter()
        run.activate()
        agent = _Agent(run, token, root, frozenset(data.tools or ()), delegation.agent if delegation else None,
                       joined=joined is not None)
        with self._lock:
            self._agents[span.span_id] = agent

    def _agent_end(self, span: Any) -> None:
        with self._lock:
            agent = self._agents.pop(span.span_id, None)
        if agent is None:
            return
        agent.run.deactivate()
        try:
            agent.run.leave(agent.token)
        except ValueError:  # ended from another context than it started in
            pass
        error = _trips.pop(id(agent.run), None) or _error_of(span)
        if agent.handed_off and error is None:
            return  # it ends with the agent it handed off to
        self._finish(agent, error)

    def _finish(self, agent: _Agent, error: BaseException | None) -> None:
        """End a run and the runs that handed off to it: failed with `error`, or answered (the
        outermost is held open for what the program does with the answer)."""
        while agent is not None:
            if agent.joined:
                pass  # the program's run ends with the program's block
            elif error is not None:
                agent.run.fail(error)
            elif agent.root:
                handler = installed_handler()
                if handler is not None:
                    handler.implicit.linger(agent.run)
                else:
                    agent.run.stop()
            else:
                agent.run.stop()
            agent = agent.delegator  # type: ignore[assignment]

    def _is_agent(self, run: RunInvocation | None) -> bool:
        with self._lock:
            return run is not None and any(a.run is run for a in self._agents.values())

    def _current(self) -> _Agent | None:
        run = current_explicit()
        with self._lock:
            return next((a for a in self._agents.values() if a.run is run), None) if run is not None else None

    # --- handoffs ----------------------------------------------------------------------------------
    def _handoff_start(self, span: Any) -> None:
        """The handoff runs the model's transfer call: recorded as that call's tool span."""
        agent = self._current()
        handler = installed_handler()
        if agent is None or handler is None:
            return
        calls = [p for p in agent.run.open_calls() if p.call.name not in agent.tools]
        tool, step = None, agent.run.open_step.span if agent.run.open_step else None
        if calls:
            call = calls[0]
            step = call.step.span
            tool = handler.tool(call.call.name, call.call.arguments, call_id=call.call.id)
        with self._lock:
            self._handoffs[span.span_id] = (agent, tool, step)

    def _handoff_end(self, span: Any) -> None:
        with self._lock:
            entry = self._handoffs.pop(span.span_id, None)
        if entry is None:
            return
        agent, tool, step = entry
        to_agent = span.span_data.to_agent
        error = _error_of(span)
        if tool is not None:
            if error is not None:
                tool.fail(error)
            else:
                tool.stop({"assistant": to_agent})
        if error is None:
            agent.handed_off = True
            with self._lock:
                self._delegations[span.trace_id] = _Delegation(agent, step, to_agent)


def _error_of(span: Any) -> BaseException | None:
    """The exception that ended an SDK span: the one in flight when the SDK finishes it from its
    handler (`sys.exc_info`), else one made of the error the SDK recorded."""
    error = span.error
    if error is None:
        return None
    in_flight = sys.exc_info()[1]
    if isinstance(in_flight, Exception):
        return in_flight
    data = error.get("data") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else str(error)
    return AgentsRunError(f"{message} {data}" if data else str(message))


def processor(module: Any) -> Any:
    """An `AgentsProcessor` that is also the SDK's `TracingProcessor`."""
    base = module.TracingProcessor
    return type("AgentTraceProcessor", (AgentsProcessor, base), {})()


# --- the tool runner -------------------------------------------------------------------------------
def _describe_tool(instance: Any, args: Any, kwargs: dict[str, Any]) -> tuple[str, Any, str | None]:
    """The SDK's function-tool invocation: the tool, its arguments and the model's call id."""
    function_tool, context = kwargs.get("function_tool"), kwargs.get("context")
    return str(getattr(function_tool, "name", "tool")), kwargs.get("arguments"), getattr(context, "tool_call_id", None)


def _tool_result(instance: Any, result: Any) -> Any:
    """The tool's output, or its exception when the SDK turned it into text for the model."""
    handled = _handled.get()
    return Failed(handled[-1]) if handled else getattr(result, "output", result)


@contextlib.contextmanager
def _handling() -> Iterator[None]:
    """Around one tool: collects the exceptions the SDK's failure formatter sees (`note_handled`)."""
    token = _handled.set([])
    try:
        yield
    finally:
        _handled.reset(token)


# the SDK's function-tool invocation: one explicit tool span with the call id
run_tool = tool_wrapper(_describe_tool, _tool_result, "agents.tool", scope=_handling)


def note_handled(wrapped: Any, instance: Any, args: Any, kwargs: dict[str, Any]) -> Any:
    """Wrapper of the SDK's failure formatter: the tool's exception, before it becomes text."""
    handled = _handled.get()
    if handled is not None and isinstance(kwargs.get("error"), BaseException):
        handled.append(kwargs["error"])
    return wrapped(*args, **kwargs)


# --- guardrails ------------------------------------------------------------------------------------
# run id -> the tripwire exception the SDK raises for the guardrail that tripped in it
_trips: dict[int, BaseException] = {}


def _guardrail(kind: str) -> Any:
    async def run_guardrail(wrapped: Any, instance: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        """Wrapper of one guardrail check: a trip is an event on the run, and the run fails with
        the SDK's tripwire exception (phase critical) when its agent ends."""
        result = await wrapped(*args, **kwargs)
        safely("agents.guardrail", _tripped, kind, result)
        return result
    return run_guardrail


def _tripped(kind: str, result: Any) -> None:
    if not result.output.tripwire_triggered:
        return
    run = current_explicit()
    if run is None:
        return
    from agents import exceptions

    name = result.guardrail.get_name()
    run.span.add_event(GUARDRAIL_EVENT, {GUARDRAIL_NAME: str(name), GUARDRAIL_KIND: kind})
    error_class = exceptions.InputGuardrailTripwireTriggered if kind == "input" else \
        exceptions.OutputGuardrailTripwireTriggered
    _trips.setdefault(id(run), error_class(result))


def _tool_guardrails(kind: str, results_key: str) -> Any:
    async def run_tool_guardrails(wrapped: Any, instance: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        """Wrapper of a function tool's input or output guardrails: each one that tripped (the
        call rejected, or the run stopped with the SDK's exception) is an event on the run."""
        results = kwargs.get(results_key)
        before = len(results) if isinstance(results, list) else 0
        try:
            return await wrapped(*args, **kwargs)
        finally:
            safely("agents.tool guardrail", _tool_tripped, kind, results, before, kwargs.get("func_tool"))
    return run_tool_guardrails


def _tool_tripped(kind: str, results: Any, before: int, tool: Any) -> None:
    run = current_explicit()
    if run is None or not isinstance(results, list):
        return
    for result in results[before:]:
        behavior = (getattr(result.output, "behavior", None) or {}).get("type")
        if behavior in (None, "allow"):
            continue
        run.span.add_event(GUARDRAIL_EVENT, {
            GUARDRAIL_NAME: str(result.guardrail.get_name()), GUARDRAIL_KIND: kind,
            GUARDRAIL_BEHAVIOR: str(behavior), GEN_AI_TOOL_NAME: str(getattr(tool, "name", ""))})


GUARDRAILS = "agents.run_internal.guardrails"
TOOL_EXECUTION = "agents.run_internal.tool_execution"
WRAPPERS = {TOOL_RUNNER: run_tool, FAILURE_FORMATTER: note_handled,
            (GUARDRAILS, "run_single_input_guardrail"): _guardrail("input"),
            (GUARDRAILS, "run_single_output_guardrail"): _guardrail("output"),
            (TOOL_EXECUTION, "_execute_tool_input_guardrails"):
                _tool_guardrails("tool_input", "tool_input_guardrail_results"),
            (TOOL_EXECUTION, "_execute_tool_output_guardrails"):
                _tool_guardrails("tool_output", "tool_output_guardrail_results")}

_registered = False


def register(module: Any) -> bool:
    """Add our processor to the SDK's tracing once per process (it stays inert when
    uninstrumented); False when `module` is not the SDK."""
    global _registered
    if not hasattr(module, "add_trace_processor"):
        return False
    if not _registered:
        module.add_trace_processor(processor(module))
        _registered = True
    return True


INTEGRATION = Integration("openai_agents", tuple(Patch(module, target, wrapper)
                                                 for (module, target), wrapper in WRAPPERS.items()),
                          ImportHook(MODULE, register))
