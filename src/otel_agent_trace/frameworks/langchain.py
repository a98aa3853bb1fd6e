"""LangChain tools and LangGraph graphs, with no code change.

* `BaseTool.run` / `arun` (what `tool.invoke(tool_call)`, LangGraph's `ToolNode` and
  `create_react_agent` / `create_agent` call): an explicit `execute_tool` span where the tool
  really runs, with the `tool_call_id` LangChain passes, so the result is never inferred again.
  A tool error LangChain turns into an `error` ToolMessage (`handle_tool_error`) fails the span
  with a `ToolException` carrying that message.
* `Pregel.invoke` / `ainvoke` / `stream` / `astream` (every compiled LangGraph graph): one run
  named after the graph (`name=` of `create_react_agent` or `compile`), so `gen_ai.agent.name`
  is the agent's. A graph invoked while another run is current (a sub-agent called as a tool or
  as a node of a supervisor graph) is that run's sub-agent: nested and linked `delegated_to`
  (recorder/delegation.py).

Model calls: `langchain-openai` (and anthropic, litellm) call the client we already patch, so
each model call is that client's one chat span, and the request's tool definitions are the bound
tools' schemas. A chat model on any other backend is recorded by our callback handler
(langchain_callbacks.py), only when no patched client recorded the call. A LangGraph model node
is the step its chat call opens.
"""

from __future__ import annotations

import contextvars
from typing import Any

from otel_agent_trace._failopen import safely
from otel_agent_trace.frameworks import langchain_callbacks, langgraph_threads
from otel_agent_trace.frameworks.runs import open_agent_run, run_of
from otel_agent_trace.frameworks.tool_calls import Failed, tool_wrapper
from otel_agent_trace.recorder.delegation import AgentRun, continue_run, resume
from otel_agent_trace.recorder.handler import installed_handler
from otel_agent_trace.recorder.invocation import Invocation, NoInvocation
from otel_agent_trace.integration import Integration, Patch

TOOLS_MODULE = "langchain_core.tools.base"
GRAPH_MODULE = "langgraph.pregel.main"

# the graph whose run this context is inside: its own invoke -> stream is not a second run
_graph: contextvars.ContextVar[Any] = contextvars.ContextVar("agent_trace_langgraph", default=None)


# --- tools ----------------------------------------------------------------------------------------
def _describe_tool(instance: Any, args: tuple, kwargs: dict) -> tuple[str, Any, str | None]:
    tool_input = args[0] if args else kwargs.get("tool_input")
    return getattr(instance, "name", None) or type(instance).__name__, tool_input, kwargs.get("tool_call_id")


def _text(content: Any) -> Any:
    """A message's content as text: content blocks' text joined (other blocks as they are)."""
    if isinstance(content, list) and all(isinstance(b, (str, dict)) for b in content):
        parts = [b if isinstance(b, str) else b.get("text") for b in content]
        if all(isinstance(p, str) for p in parts):
            return "\n".join(parts)  # type: ignore[arg-type]
    return content


def _tool_result(instance: Any, output: Any) -> Any:
    """The tool's output as text; a `ToolMessage` with status `error` is a failed result."""
    status = getattr(output, "status", None)
    content = getattr(output, "content", output) if hasattr(output, "tool_call_id") else output
    if status == "error":
        from langchain_core.tools import ToolException

        return Failed(ToolException(_text(content)))
    return _text(content)


tool_run = tool_arun = tool_wrapper(_describe_tool, _tool_result, "langchain tool")


# --- graphs ---------------------------------------------------------------------------------------
def _graph_run(instance: Any, args: tuple, kwargs: dict) -> Invocation | None:
    """The run of this graph invocation, or None when it is already the run of this context. A
    resume (`Command(resume=...)`, or no input) of a checkpointed thread whose last run still
    lingers goes on in that run; once that run has ended, the resume's run links to it
    (`resumes`, frameworks/langgraph_threads.py)."""
    if _graph.get() is instance:
        return None
    checkpointer = getattr(instance, "checkpointer", None)
    thread = safely("langgraph thread", _thread_of, checkpointer, args, kwargs)
    resumes = thread is not None and _resumes_thread(args, kwargs)
    if resumes:
        continued = safely("langgraph resume", continue_run, installed_handler(), langgraph_threads.lingering(thread))
        if continued is not None:
            return continued
    invocation = open_agent_run(getattr(instance, "name", None) or type(instance).__name__)
    if thread is not None:
        safely("langgraph thread.remember", _remember, thread, checkpointer, invocation, resumes)
    return invocation


def _remember(thread: tuple[int, str], checkpointer: Any, invocation: Invocation, resumes: bool) -> None:
    """The thread's run remembered (lingering when its own); a resume's run linked to the earlier one."""
    run = run_of(invocation)
    if run is None:
        return
    earlier = langgraph_threads.earlier(thread, checkpointer) if resumes else None
    if earlier is not None:
        run.link_resumed(earlier)
    own = isinstance(invocation, AgentRun) and not invocation.nested
    langgraph_threads.remember(thread, checkpointer, run, own)


def _thread_of(checkpointer: Any, args: tuple, kwargs: dict) -> tuple[int, str] | None:
    config = kwargs.get("config", args[1] if len(args) > 1 else None)
    return langgraph_threads.thread_of(checkpointer, ((config or {}).get("configurable") or {}).get("thread_id"))


def _resumes_thread(args: tuple, kwargs: dict) -> bool:
    """The input resumes an interrupted thread: a `Command` carrying `resume`, or no input."""
    value = kwargs.get("input", args[0] if args else None)
    return value is None or (type(value).__name__ == "Command" and getattr(value, "resume", None) is not None)


class _Inside:
    """The graph's run current, and the graph marked, while its code runs."""

    def __init__(self, invocation: Invocation, instance: Any):
        self.invocation, self.instance = invocation, instance
        self._tokens: list[Any] = []

    def __enter__(self) -> None:
        self._tokens.append(_graph.set(self.instance))
        self._resume = resume(self.invocation)
        self._resume.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._resume.__exit__(None, None, None)
        _graph.reset(self._tokens.pop())


class _Settles:
    """The graph's run settled by what leaves the block: stopped when it returns, or when the
    caller stops reading the graph's `stream` (GeneratorExit: the stream is closed first, awaited
    under `async with`); failed by anything else, which goes on to the caller unchanged."""

    def __init__(self, invocation: Invocation, stream: Any = None):
        self.invocation, self.stream = invocation, stream

    def _stopped_reading(self, exc: BaseException | None) -> bool:
        return self.stream is not None and isinstance(exc, GeneratorExit)

    def _settle(self, exc: BaseException | None) -> None:
        if exc is None or self._stopped_reading(exc):
            self.invocation.stop()
        else:
            self.invocation.fail(exc)

    def __enter__(self) -> None:
        return None

    def __exit__(self, _type: Any, exc: BaseException | None, _tb: Any) -> None:
        if self._stopped_reading(exc):
            self.stream.close()
        self._settle(exc)

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, _type: Any, exc: BaseException | None, _tb: Any) -> None:
        if self._stopped_reading(exc):
            await self.stream.aclose()
        self._settle(exc)


class _Resumed:
    """The graph's stream (sync or async) with its run current around each resumption only, never
    across the caller's read: one `_Inside` per item."""

    def __init__(self, invocation: Invocation, instance: Any, stream: Any):
        self.invocation, self.instance, self.stream = invocation, instance, stream

    def __iter__(self) -> "_Resumed":
        return self

    def __next__(self) -> Any:
        with _Inside(self.invocation, self.instance):
            return next(self.stream)

    def __aiter__(self) -> "_Resumed":
        return self

    async def __anext__(self) -> Any:
        with _Inside(self.invocation, self.instance):
            return await self.stream.__anext__()


def graph_invoke(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    invocation = _graph_run(instance, args, kwargs)
    if invocation is None:
        return wrapped(*args, **kwargs)
    with _Settles(invocation), _Inside(invocation, instance):
        return wrapped(*args, **kwargs)


async def graph_ainvoke(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    invocation = _graph_run(instance, args, kwargs)
    if invocation is None:
        return await wrapped(*args, **kwargs)
    with _Settles(invocation), _Inside(invocation, instance):
        return await wrapped(*args, **kwargs)


def graph_stream(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    invocation = _graph_run(instance, args, kwargs)
    if invocation is None:
        return wrapped(*args, **kwargs)
    return _streamed(invocation, instance, wrapped(*args, **kwargs))


def graph_astream(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    invocation = _graph_run(instance, args, kwargs)
    if invocation is None:
        return wrapped(*args, **kwargs)
    return _astreamed(invocation, instance, wrapped(*args, **kwargs))


def _streamed(invocation: Invocation, instance: Any, stream: Any) -> Any:
    """The graph's stream as a generator (what `Pregel.stream` returns), its run settled with it."""
    with _Settles(invocation, stream):
        for item in _Resumed(invocation, instance, stream):
            yield item


async def _astreamed(invocation: Invocation, instance: Any, stream: Any) -> Any:
    async with _Settles(invocation, stream):
        async for item in _Resumed(invocation, instance, stream):
            yield item


TARGETS = {
    TOOLS_MODULE: {"BaseTool.run": tool_run, "BaseTool.arun": tool_arun},
    langchain_callbacks.MODULE: {"BaseCallbackManager.__init__": langchain_callbacks.manager_init},
    GRAPH_MODULE: {"Pregel.invoke": graph_invoke, "Pregel.ainvoke": graph_ainvoke,
                   "Pregel.stream": graph_stream, "Pregel.astream": graph_astream},
}
INTEGRATION = Integration("langchain", tuple(Patch(module, target, wrapper) for module, targets in TARGETS.items()
                                      for target, wrapper in targets.items()))
