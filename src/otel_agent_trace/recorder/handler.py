"""The handler: the one recording API every client, framework and tool surface plugs into.

    handler = get_handler()
    with handler.run("support"):                       # RunInvocation (explicit run)
        with handler.chat(request) as chat:            # ChatInvocation: step + chat span
            chat.stop(response)                        # a ChatResponse
        with handler.tool("lookup", {"id": 1}, call_id="c1") as tool:
            tool.stop(result)

Providers translate their wire format into `model.ChatRequest` / `ChatResponse` and call
`chat`; tool surfaces call `tool`. Each invocation owns its span's life (invocation.py). The
handler owns the tracer, the configuration and the open runs.

Implicit runs (no `agent_run`, no entry point) are keyed by conversation, not by a ContextVar
alone: a request that answers a run's pending tool calls, or carries its last model output,
continues that run from any thread, task or context. An implicit run that gave its final
answer stays open until its thread starts another conversation, it has been idle for
`run_idle_seconds`, or the process exits; an uncaught exception that ends the program, a thread
or the asyncio task the run last worked in first (`sys.excepthook`, `threading.excepthook`, the
asyncio loop's handler) marks it failed, phase `critical`.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
import weakref
from typing import Any, Callable, Iterable, Iterator

import contextlib
import orjson
from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_agent_trace import hashing
from otel_agent_trace._failopen import log_once, safely
from otel_agent_trace import config as config_module
from otel_agent_trace.config import AgentTraceConfig
from otel_agent_trace.model import INSTRUMENTATION_SCOPE, ChatRequest
from otel_agent_trace.recorder import guards
from otel_agent_trace.recorder.chat import ChatInvocation, open_chat
from otel_agent_trace.recorder.invocation import Invocation, NoInvocation
from otel_agent_trace.recorder.run import RunInvocation, current_explicit, live
from otel_agent_trace.recorder.state import active_tool, implicit_run, model_call
from otel_agent_trace.recorder.tools import start_tool
from otel_agent_trace.version import __version__

SCOPE = INSTRUMENTATION_SCOPE
_UNLOADED = object()
_MAX_OPEN_IMPLICIT = 1024


class Handler:
    def __init__(self, config: AgentTraceConfig | None = None, tracer_provider: trace.TracerProvider | None = None):
        self.config = config or config_module.current()
        self.tracer = trace.get_tracer(SCOPE, __version__, tracer_provider=tracer_provider)
        self.tracer_provider = tracer_provider
        self.enabled = True
        self._final_schema: object = _UNLOADED
        self._open: dict[int, RunInvocation] = {}  # open implicit runs, oldest first
        self._open_lock = threading.Lock()
        self._sweeper: threading.Thread | None = None

    # --- invocations ----------------------------------------------------------------------------
    def run(self, name: str | None = None, validate: Callable[[str], Any] | None = None,
            delegated_by: trace.Span | None = None) -> Invocation:
        """An explicit run: `with handler.run("name"):` records everything inside as one run.
        `delegated_by`: the step or tool span of another run that handed the work to this one (a
        sub-agent): the run nests under it with a `delegated_to` link."""
        if not self.enabled:
            return NoInvocation()
        run = safely("run.start", RunInvocation, self, name, False, validate, delegated_by)
        return run if run is not None else NoInvocation()

    def chat(self, request: ChatRequest) -> Invocation:
        """One LLM call: finds or opens its run, records the tool results the request carries,
        opens the step and the chat span. May raise `AgentBudgetExceeded` (BUDGET_ACTION=raise)."""
        if not self.enabled or not is_instrumentation_enabled():
            return NoInvocation()
        invocation = safely("chat.start", self._start_chat, request)
        return invocation if invocation is not None else NoInvocation()

    def tool(self, name: str, arguments: Any = None, call_id: str | None = None,
             reads: Iterable[str] = (), writes: Iterable[str] = ()) -> Invocation:
        """One tool execution inside the current run (outside a run, or inside another recorded
        tool, nothing is recorded). `reads` / `writes` name arguments that are resources."""
        if not self.enabled or active_tool.get() is not None:
            return NoInvocation()
        run = self.current_run()
        if run is None:
            return NoInvocation()
        invocation = safely("tool.start", start_tool, self, run, name, arguments, call_id, reads, writes)
        return invocation if invocation is not None else NoInvocation()

    def current_run(self) -> RunInvocation | None:
        """The run the caller is inside: an explicit one, else this context's open implicit one."""
        run = current_explicit()
        if run is not None:
            return run
        run = implicit_run.get()
        return run if live(run) else None

    # --- chat: which run --------------------------------------------------------------------------
    def _start_chat(self, request: ChatRequest) -> ChatInvocation:
        window = model_call.get()
        if window is not None:
            window.claimed = True  # the framework's model call this chat is inside is recorded
        hashes = request.message_hashes
        if hashes is None:
            hashes = request.message_hashes = [hashing.message_hash(m) for m in request.messages]
        run = current_explicit() or self._implicit_for(request, hashes)
        with run.lock:
            exceeded = guards.check_budget(self, run)
            if exceeded is not None:
                if run.implicit:
                    self.end_run(run, exceeded)
                raise exceeded
            run.thread, run.task = threading.get_ident(), _current_task()
            return open_chat(self, run, request, hashes)

    def _implicit_for(self, request: ChatRequest, hashes: list[str]) -> RunInvocation:
        own = implicit_run.get()
        if live(own) and own.answered_ns is None and own.continues(request, hashes):
            return own
        found = self._continued_elsewhere(request, hashes)
        if found is not None:
            implicit_run.set(found)
            return found
        thread = threading.get_ident()
        with self._open_lock:
            stale = self._over(thread, own)
            run = RunInvocation(self, None, True, start_ns=request.started_ns)
            run.thread = thread
            stale += self._keep_open(run)
        for old in stale:
            self.end_run(old)
        implicit_run.set(run)
        return run

    def _keep_open(self, run: RunInvocation) -> list[RunInvocation]:
        """Add `run` to the open runs (call with `_open_lock` held); the oldest beyond the bound,
        to be ended by the caller. Starts the idle sweeper."""
        self._open[id(run)] = run
        stale = []
        while len(self._open) > _MAX_OPEN_IMPLICIT:
            stale.append(self._open.pop(next(iter(self._open))))
        if self._sweeper is None:
            self._sweeper = threading.Thread(target=self._sweep, name="otel-agent-trace-runs", daemon=True)
            self._sweeper.start()
        return stale

    def _over(self, thread: int | None = None, own: RunInvocation | None = None) -> list[RunInvocation]:
        """The open implicit runs the program shows to be over (call with `_open_lock` held): those
        that answered and whose thread starts another conversation or that sat idle
        `run_idle_seconds`; this context's own run when it starts another; any run idle
        `sampler_decision_seconds`."""
        now = time.time_ns()
        idle_answered, idle_any = self.config.run_idle_seconds, self.config.sampler_decision_seconds
        over = []
        for run in self._open.values():
            idle = (now - run.last_active_ns) / 1e9
            if run is own or idle >= idle_any or (
                    run.answered_ns is not None and (run.thread == thread or idle >= idle_answered)):
                over.append(run)
        return over

    def _sweep(self) -> None:
        """A daemon thread: ends implicit runs that went idle while nothing else happened (a
        server between requests). It stops when this handler is replaced or has no open run."""
        period = max(0.2, min(self.config.run_idle_seconds / 2, 5.0))
        while True:
            time.sleep(period)
            with self._open_lock:
                if _active is not self or not self._open:
                    self._sweeper = None
                    return
                over = self._over()
            for run in over:
                safely("run.idle end", self.end_run, run)

    def _continued_elsewhere(self, request: ChatRequest, hashes: list[str]) -> RunInvocation | None:
        """An open implicit run of another context whose conversation this request carries on:
        it answers the run's pending tool calls or repeats its last model output (a prefix alone
        is no proof: concurrent runs of one agent share their first messages)."""
        with self._open_lock:
            candidates = [r for r in reversed(self._open.values()) if r.answered_ns is None and not r.ended]
        if not candidates:
            return None
        call_ids = {m.tool_call_id for m in request.messages if m.role == "tool" and m.tool_call_id}
        present = set(hashes)
        for run in candidates:
            if (call_ids and not call_ids.isdisjoint(run.pending)) or (run.last_output_hash in present):
                return run
        return None

    def linger(self, run: RunInvocation, caller: tuple[int, Any] | None = None) -> None:
        """A framework's agent invocation returned: its run stays open like an answered implicit
        run (ended by the next run of its thread or task, idleness or the program's end), so that
        an exception the program raises about the answer still marks it failed. `caller`: the
        thread and task (`caller()`) that invoked the agent, when it answers elsewhere."""
        self.end_answered_runs()
        now = time.time_ns()
        run.answered_ns = run.answered_ns or now
        run.last_active_ns = now
        run.thread, run.task = caller or self.caller()
        with self._open_lock:
            stale = self._keep_open(run)
        for old in stale:
            self.end_run(old)

    @staticmethod
    def caller() -> tuple[int, Any]:
        """This thread's id and a weak reference to the running asyncio task (None outside one)."""
        return threading.get_ident(), _current_task()

    def end_answered_runs(self) -> None:
        """End the open runs that answered in this thread, or in this asyncio task when called
        from one (its sibling tasks' answered runs stay open for what their task does next; one
        whose task is over ends with it, failed when the task raised): it starts another one."""
        thread, task = threading.get_ident(), _current_task()
        with self._open_lock:
            over = [r for r in self._open.values() if r.thread == thread and r.answered_ns is not None]
        for run in over:
            ended = True if task is None else _task_over(run.task, task)
            if ended is not False:
                self.end_run(run, ended if isinstance(ended, BaseException) else None)

    def end_run(self, run: RunInvocation, exc: BaseException | None = None) -> None:
        """End an implicit run: at its last activity when it ended well, now when it failed."""
        with self._open_lock:
            self._open.pop(id(run), None)
        if exc is None:
            run.end(None, run.last_active_ns)
        else:
            run.end(exc)

    def end_implicit_runs(self) -> None:
        """End every open implicit run (process exit, uninstrument, tests)."""
        with self._open_lock:
            runs = list(self._open.values())
        for run in runs:
            safely("run.end", self.end_run, run)

    def crashed(self, thread: int | None, exc: BaseException, task: Any = None) -> None:
        """An uncaught exception ended `thread` (or the program), or asyncio `task`: the implicit
        run last active there failed with it. A task that no run worked in (a client's `aclose`
        scheduled by the garbage collector, a helper task of a library) ends nothing."""
        with self._open_lock:
            runs = [r for r in self._open.values() if not r.ended]
        if task is not None:
            mine = [r for r in runs if r.task is not None and r.task() is task]
        else:
            mine = [r for r in runs if r.thread == thread] or ([] if thread is not None else runs)
        if mine:
            self.end_run(max(mine, key=lambda r: r.last_active_ns), exc)

    # --- content ----------------------------------------------------------------------------------
    def final_schema(self) -> dict | None:
        """The JSON Schema of `OTEL_AGENT_TRACE_FINAL_SCHEMA`, read once (None when unset or unreadable)."""
        if self._final_schema is _UNLOADED:
            self._final_schema = None
            path = self.config.final_schema
            if path:
                try:
                    with open(path, "rb") as handle:
                        self._final_schema = orjson.loads(handle.read())
                except (OSError, orjson.JSONDecodeError) as exc:
                    log_once(f"final schema {path}", exc)
        return self._final_schema  # type: ignore[return-value]

    def clip(self, text: str | None) -> str | None:
        """Truncate text to `max_attribute_bytes` (UTF-8), marking the cut."""
        if text is None:
            return None
        limit = self.config.max_attribute_bytes
        if limit <= 0 or len(text) <= limit // 4:
            return text
        data = text.encode("utf-8", "replace")
        if len(data) <= limit:
            return text
        return data[: max(0, limit - 20)].decode("utf-8", "ignore") + "...[truncated]"

    def content_json(self, value: object) -> str | None:
        """JSON text of captured content, or None when content capture is off."""
        if not self.config.capture_content:
            return None
        return self.clip(orjson.dumps(value, default=str).decode())


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


def set_handler(handler: Handler | None, installed: bool = False) -> None:
    """Install `handler` (None: forget it); the one it replaces ends its open implicit runs."""
    global _active, _installed
    with _lock:
        previous, _active = _active, handler
        _installed = installed and handler is not None
    if previous is not None and previous is not handler:
        previous.end_implicit_runs()


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


def _current_task() -> Any:
    """A weak reference to the running asyncio task, if any (no import of asyncio, no raise)."""
    asyncio = sys.modules.get("asyncio")
    loop = asyncio._get_running_loop() if asyncio is not None else None
    task = asyncio.current_task(loop) if loop is not None else None
    return weakref.ref(task) if task is not None else None


def _task_over(ran_in: Any, task: Any) -> bool | BaseException:
    """Is a run that worked in task `ran_in` over now that `task` starts another (weak references):
    the same task, or no task: True; a task that is done: True, or the exception it raised (read
    without marking it retrieved: asyncio still reports it); a task still running: False."""
    earlier = ran_in() if ran_in is not None else None
    if earlier is None or earlier is task():
        return True
    if not earlier.done():
        return False
    exc = None if earlier.cancelled() else getattr(earlier, "_exception", None)
    return exc if isinstance(exc, BaseException) else True


# --- the program's end ----------------------------------------------------------------------------
class ExitHooks:
    """`sys.excepthook`, `threading.excepthook`, the asyncio loop's default handler and atexit,
    chained to what was there before; installed by the instrumentor, removed by uninstrument.

    SIGTERM: Python's default action ends the process without atexit, so the spans still queued
    in a batch processor would be lost. When the program has no SIGTERM handler of its own, ours
    ends the open runs, flushes the providers (bounded), then re-raises the default action: the
    exit status stays "killed by SIGTERM". A handler the program installs later replaces ours."""

    FLUSH_SECONDS = 5.0

    def __init__(self) -> None:
        self._installed = False
        self._sys: Any = None
        self._threading: Any = None
        self._asyncio: Any = None
        self._sigterm = False

    def install(self) -> None:
        if self._installed:
            return
        self._installed = True
        self._sys, sys.excepthook = sys.excepthook, self._sys_hook
        self._threading, threading.excepthook = threading.excepthook, self._thread_hook
        import asyncio.base_events as base_events

        self._asyncio = base_events.BaseEventLoop.default_exception_handler
        hooks = self

        def default_exception_handler(loop: Any, context: dict[str, Any]) -> Any:
            # only a task's unretrieved exception ends a run, and only the run that worked in it
            exc, task = context.get("exception"), context.get("future")
            if isinstance(exc, BaseException) and task is not None and _active is not None:
                safely("asyncio exception hook", _active.crashed, None, exc, task)
            return hooks._asyncio(loop, context)

        base_events.BaseEventLoop.default_exception_handler = default_exception_handler  # type: ignore[method-assign]
        atexit.register(self._at_exit)
        safely("install SIGTERM flush", self._install_sigterm)

    def uninstall(self) -> None:
        if not self._installed:
            return
        self._installed = False
        if sys.excepthook == self._sys_hook:
            sys.excepthook = self._sys
        if threading.excepthook == self._thread_hook:
            threading.excepthook = self._threading
        import asyncio.base_events as base_events

        base_events.BaseEventLoop.default_exception_handler = self._asyncio  # type: ignore[method-assign]
        atexit.unregister(self._at_exit)
        if self._sigterm:
            self._sigterm = False
            safely("remove SIGTERM flush", self._remove_sigterm)

    def _install_sigterm(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, self._on_sigterm)
            self._sigterm = True

    def _remove_sigterm(self) -> None:
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == self._on_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        # flush on a helper thread, bounded: the main thread may hold a lock the export needs
        flusher = threading.Thread(target=self._flush_for_exit, name="otel-agent-trace-sigterm", daemon=True)
        flusher.start()
        flusher.join(self.FLUSH_SECONDS)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    @staticmethod
    def _flush_for_exit() -> None:
        handler = _active
        if handler is not None:
            safely("SIGTERM: end runs", handler.end_implicit_runs)
        providers = {id(p): p for p in (handler.tracer_provider if handler else None, trace.get_tracer_provider())
                     if p is not None and hasattr(p, "force_flush")}
        for provider in providers.values():
            safely("SIGTERM: flush", provider.force_flush, int(ExitHooks.FLUSH_SECONDS * 1000))

    def _sys_hook(self, exc_type: Any, exc: BaseException, tb: Any) -> None:
        if _active is not None:
            safely("sys.excepthook", _active.crashed, threading.main_thread().ident, exc)
        self._sys(exc_type, exc, tb)

    def _thread_hook(self, args: Any) -> None:
        if _active is not None and args.exc_value is not None:
            thread = args.thread.ident if args.thread is not None else None
            safely("threading.excepthook", _active.crashed, thread, args.exc_value)
        self._threading(args)

    @staticmethod
    def _at_exit() -> None:
        if _active is not None:
            safely("atexit", _active.end_implicit_runs)


EXIT_HOOKS = ExitHooks()
