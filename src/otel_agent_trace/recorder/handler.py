"""The handler: the one recording API every client, framework and tool surface plugs into.

    handler = get_handler()
    with handler.run("support"):                       # RunInvocation (explicit run)
        with handler.chat(request) as chat:            # ChatInvocation: step + chat span
            chat.stop(response)                        # a ChatResponse
        with handler.tool("lookup", {"id": 1}, call_id="c1") as tool:
            tool.stop(result)

Providers translate their wire format into `model.ChatRequest` / `ChatResponse` and call
`chat`; tool surfaces call `tool`. Like util-genai's `TelemetryHandler`, the handler is a thin
factory of invocations: it holds the tracer, the configuration, the content policy
(content.py), the replay interceptor when replay is on, and the open implicit runs
(implicit_runs.py); each invocation owns its span's life (invocation.py) and the run owns its
state (run.py). The process's handler, and the public `agent_run` / `record_chat` /
`record_tool`, are at the end of this module; the hooks at the program's end in exit_hooks.py.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import weakref
from typing import Any, Callable, Iterable, Iterator

from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_agent_trace import config as config_module
from otel_agent_trace import hashing
from otel_agent_trace._failopen import logger, safely
from otel_agent_trace.config import AgentTraceConfig
from otel_agent_trace.errors import AgentBudgetExceeded
from otel_agent_trace.messages import ChatRequest
from otel_agent_trace.semconv import INSTRUMENTATION_SCOPE
from otel_agent_trace.recorder.chat import ChatInvocation, open_chat
from otel_agent_trace.recorder.content import ContentPolicy
from otel_agent_trace.recorder.implicit_runs import ImplicitRuns
from otel_agent_trace.recorder.interceptor import Interceptor
from otel_agent_trace.recorder.invocation import Invocation, NoInvocation
from otel_agent_trace.recorder.run import RunInvocation, current_explicit, live
from otel_agent_trace.recorder.state import active_tool, implicit_run, model_call
from otel_agent_trace.recorder.tool_spans import start_tool
from otel_agent_trace.version import __version__

SCOPE = INSTRUMENTATION_SCOPE


class Handler:
    def __init__(self, config: AgentTraceConfig | None = None, tracer_provider: trace.TracerProvider | None = None):
        self.config = config or config_module.current()
        self.tracer = trace.get_tracer(SCOPE, __version__, tracer_provider=tracer_provider)
        self.tracer_provider = tracer_provider
        self.content = ContentPolicy(self.config)
        self.interceptor: Interceptor | None = None  # answers calls in place of the real ones (replay)
        self.enabled = True
        self.implicit = ImplicitRuns(self.config, self._implicit_run, lambda: _active is self)
        self.explicit_runs: weakref.WeakSet[RunInvocation] = weakref.WeakSet()  # live agent_run / entry points
        self.shut_down = False  # its tracer provider shut down: nothing more is recorded
        self.refused = 0  # invocations not recorded since

    # --- invocations ----------------------------------------------------------------------------
    def run(self, name: str | None = None, validate: Callable[[str], Any] | None = None,
            delegated_by: trace.Span | None = None) -> Invocation:
        """An explicit run: `with handler.run("name"):` records everything inside as one run.
        `delegated_by`: the step or tool span of another run that handed the work to this one (a
        sub-agent): the run nests under it with a `delegated_to` link."""
        if not self.enabled or self.shut_down and self.refuse("run"):
            return NoInvocation()
        run = safely("run.start", self.new_run, name, validate, delegated_by)
        return run if run is not None else NoInvocation()

    def new_run(self, name: str | None, validate: Callable[[str], Any] | None = None,
                delegated_by: trace.Span | None = None) -> RunInvocation:
        """An explicit run, remembered so that a provider shutdown ends it first."""
        run = RunInvocation(self.tracer, self.config, self.content, name, False, validate, delegated_by)
        self.explicit_runs.add(run)
        return run

    def _implicit_run(self, start_ns: int | None) -> RunInvocation:
        return RunInvocation(self.tracer, self.config, self.content, None, True, start_ns=start_ns)

    def chat(self, request: ChatRequest) -> Invocation:
        """One LLM call: finds or opens its run, records the tool results the request carries,
        opens the step and the chat span. May raise `AgentBudgetExceeded` (BUDGET_ACTION=raise)."""
        if not self.enabled or not is_instrumentation_enabled() or self.shut_down and self.refuse("chat"):
            return NoInvocation()
        invocation = safely("chat.start", self._start_chat, request)
        return invocation if invocation is not None else NoInvocation()

    def tool(self, name: str, arguments: Any = None, call_id: str | None = None,
             reads: Iterable[str] = (), writes: Iterable[str] = ()) -> Invocation:
        """One tool execution inside the current run (outside a run, or inside another recorded
        tool, nothing is recorded). `reads` / `writes` name arguments that are resources."""
        if not self.enabled or active_tool.get() is not None or self.shut_down and self.refuse("tool"):
            return NoInvocation()
        run = self.current_run()
        if run is None:
            return NoInvocation()
        invocation = safely("tool.start", start_tool, run, name, arguments, call_id, reads, writes)
        return invocation if invocation is not None else NoInvocation()

    def current_run(self) -> RunInvocation | None:
        """The run the caller is inside: an explicit one, else this context's open implicit one."""
        run = current_explicit()
        if run is not None:
            return run
        run = implicit_run.get()
        return run if live(run) else None

    def end_implicit_runs(self) -> None:
        """End every open implicit run (process exit, uninstrument, tests)."""
        self.implicit.end_all()

    # --- the tracer provider flushes or shuts down (recorder/flush.py) ---------------------------
    def end_for_flush(self, shutdown: bool) -> None:
        """End the lingering runs that are over (at shutdown: every run, explicit ones too, marked
        `ended_by=provider_shutdown` when they had not ended by themselves), so that the flush
        exports them whole."""
        self.implicit.end_for_flush(shutdown)
        if shutdown:
            for run in list(self.explicit_runs):
                safely("shutdown: end run", run.end_by_shutdown)
            self.shut_down = True

    def refuse(self, kind: str) -> bool:
        """An invocation after the provider shut down: counted, logged once, not recorded."""
        self.refused += 1
        if self.refused == 1:
            logger.warning("otel-agent-trace: the tracer provider was shut down; this %s and everything after it "
                           "are not recorded (counted in the handler's `refused`)", kind)
        return True

    # --- chat: which run ------------------------------------------------------------------------
    def _start_chat(self, request: ChatRequest) -> ChatInvocation:
        window = model_call.get()
        if window is not None:
            window.claimed = True  # the framework's model call this chat is inside is recorded
        hashes = request.message_hashes
        if hashes is None:
            hashes = request.message_hashes = [hashing.message_hash(m) for m in request.messages]
        run = current_explicit() or self.implicit.run_for(request, hashes)
        try:
            return run.begin_chat(open_chat, request, hashes)
        except AgentBudgetExceeded as exc:
            if run.implicit:
                self.implicit.end_run(run, exc)
            raise


# --- the process's handler ------------------------------------------------------------------------
_lock = threading.Lock()
_active: Handler | None = None


def get_handler() -> Handler:
    """The active handler (made from the environment on first use, so `agent_run`, `@tool` and
    `record_chat` also work without the instrumentor)."""
    global _active
    if _active is None:
        with _lock:
            if _active is None:
                _active = Handler()
    return _active


def installed_handler() -> Handler | None:
    """The handler the instrumentor installed, if any (patched calls record only then)."""
    return _active if _installed else None


_installed = False


def active_handler() -> Handler | None:
    """The process's handler if one was made or installed (None: nothing was recorded)."""
    return _active


def set_handler(handler: Handler | None, installed: bool = False) -> None:
    """Install `handler` (None: forget it); the one it replaces ends its open implicit runs."""
    global _active, _installed
    with _lock:
        previous, _active = _active, handler
        _installed = installed and handler is not None
    if previous is not None and previous is not handler:
        previous.implicit.end_all()


# --- public API -----------------------------------------------------------------------------------
@contextlib.contextmanager
def agent_run(name: str | None = None, validate: Callable[[str], Any] | None = None) -> Iterator[RunInvocation | None]:
    """`with agent_run("support"):` records everything inside as one run.

    An exception leaving the block marks the run failed (status ERROR, phase `critical`,
    `agent_trace.error.type=run_exception`) and is re-raised unchanged. `validate(final_answer)`
    judges the model's final answers: returning False or a reason string, or raising, marks the
    run critical with `final_answer_invalid`; None or True accepts.
    """
    run = get_handler().run(name, validate)
    with run:
        yield run if isinstance(run, RunInvocation) else None


def record_chat(request: ChatRequest) -> Invocation:
    """Record one LLM call of a client we do not patch: `with record_chat(request) as chat: ...;
    chat.stop(response)` (see docs/architecture.md, "Extension API")."""
    return get_handler().chat(request)


def record_tool(name: str, arguments: Any = None, call_id: str | None = None,
                reads: Iterable[str] = (), writes: Iterable[str] = ()) -> Invocation:
    """Record one tool execution: `with record_tool("lookup", args, call_id) as t: t.stop(result)`."""
    return get_handler().tool(name, arguments, call_id, reads, writes)


_RUN_MARK = "__agent_trace_run__"


def wrap_as_run(func: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
    """Wrap a function (sync or async) so each call is one agent run (`OTEL_AGENT_TRACE_ENTRYPOINTS`);
    idempotent."""
    if getattr(func, _RUN_MARK, False):
        return func
    run_name = name or getattr(func, "__qualname__", getattr(func, "__name__", "agent"))
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_runner(*args: Any, **kwargs: Any) -> Any:
            with agent_run(run_name):
                return await func(*args, **kwargs)

        setattr(async_runner, _RUN_MARK, True)
        return async_runner

    @functools.wraps(func)
    def runner(*args: Any, **kwargs: Any) -> Any:
        with agent_run(run_name):
            return func(*args, **kwargs)

    setattr(runner, _RUN_MARK, True)
    return runner
