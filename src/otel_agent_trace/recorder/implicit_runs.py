"""The open implicit runs of one handler: which run a chat request continues, and when each ends.

Implicit runs (no `agent_run`, no entry point) are keyed by conversation, not by a ContextVar
alone: a request that answers a run's pending tool calls, or carries its last model output,
continues that run from any thread, task or context. An implicit run that gave its final answer
stays open until its thread starts another conversation, it has been idle for
`run_idle_seconds`, or the process exits; an uncaught exception that ends the program, a thread
or the asyncio task the run last worked in first (exit_hooks.py) marks it failed, phase
`critical`. A framework's outermost agent run lingers here the same way once it answered
(recorder/delegation.py); inside asyncio, only its own task starting another run ends it, not a
sibling task of the same thread.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from otel_agent_trace._failopen import safely
from otel_agent_trace.config import AgentTraceConfig
from otel_agent_trace.messages import ChatRequest
from otel_agent_trace.recorder.run import RunInvocation, current_task, live
from otel_agent_trace.recorder.state import implicit_run

MAX_OPEN = 1024


class ImplicitRuns:
    """The registry: open implicit (and lingering) runs, oldest first, and their idle sweeper."""

    def __init__(self, config: AgentTraceConfig, open_run: Callable[[int | None], RunInvocation],
                 in_use: Callable[[], bool]):
        self.config = config
        self._open_run = open_run  # a new implicit run, started at the given time (or now)
        self._in_use = in_use  # is the handler owning this registry still the process's?
        self._open: dict[int, RunInvocation] = {}
        self._lock = threading.Lock()
        self._sweeper: threading.Thread | None = None
        # answered runs a provider flush ended (recorder/flush.py): a later exception of their
        # thread or task still fails them, with a `run_outcome` span; forgotten when it starts another
        self._flushed: dict[int, RunInvocation] = {}

    # --- which run a request continues ----------------------------------------------------------
    def run_for(self, request: ChatRequest, hashes: list[str]) -> RunInvocation:
        """This context's run if the request goes on with it, else an open run of another context
        it continues, else a new implicit run (ending the runs this one shows to be over)."""
        own = implicit_run.get()
        if live(own) and own.answered_ns is None and own.continues(request, hashes):
            return own
        found = self._continued_elsewhere(request, hashes)
        if found is not None:
            implicit_run.set(found)
            return found
        thread = threading.get_ident()
        with self._lock:
            stale = self._over(thread, own)
            run = self._open_run(request.started_ns)
            run.bind_caller()
            stale += self._keep_open(run)
            self._forget_flushed(thread)
        for old in stale:
            self.end_run(old)
        implicit_run.set(run)
        return run

    def _continued_elsewhere(self, request: ChatRequest, hashes: list[str]) -> RunInvocation | None:
        """An open implicit run of another context whose conversation this request carries on:
        it answers the run's pending tool calls or repeats its last model output (a prefix alone
        is no proof: concurrent runs of one agent share their first messages)."""
        with self._lock:
            candidates = [r for r in reversed(self._open.values()) if r.answered_ns is None and not r.ended]
        if not candidates:
            return None
        call_ids = {m.tool_call_id for m in request.messages if m.role == "tool" and m.tool_call_id}
        present = set(hashes)
        for run in candidates:
            if (call_ids and not call_ids.isdisjoint(run.pending)) or (run.last_output_hash in present):
                return run
        return None

    # --- holding runs open ----------------------------------------------------------------------
    def _keep_open(self, run: RunInvocation) -> list[RunInvocation]:
        """Add `run` to the open runs (call with `_lock` held); the oldest beyond the bound, to be
        ended by the caller. Starts the idle sweeper."""
        self._open[id(run)] = run
        stale = []
        while len(self._open) > MAX_OPEN:
            stale.append(self._open.pop(next(iter(self._open))))
        if self._sweeper is None:
            self._sweeper = threading.Thread(target=self._sweep, name="otel-agent-trace-runs", daemon=True)
            self._sweeper.start()
        return stale

    def linger(self, run: RunInvocation, caller: tuple[int, Any] | None = None) -> None:
        """A framework's agent invocation returned: its run stays open like an answered implicit
        run (ended by the next run of its thread or task, idleness, a flush or the program's end),
        so that an exception the program raises about the answer still marks it failed.
        `caller`: the thread and task (`run.caller_of_here()`) that invoked the agent, when it
        answers elsewhere."""
        self.end_answered()
        run.hold_open(caller)
        with self._lock:
            stale = self._keep_open(run)
        for old in stale:
            self.end_run(old)

    def reclaim(self, run: RunInvocation) -> bool:
        """Take a lingering run back from the registry, to go on with it (`RunInvocation.reopen`):
        False when it has ended meanwhile (its thread moved on, idleness, a flush)."""
        with self._lock:
            return self._open.pop(id(run), None) is not None and not run.ended

    # --- ending ---------------------------------------------------------------------------------
    def _over(self, thread: int | None = None, own: RunInvocation | None = None) -> list[RunInvocation]:
        """The open implicit runs the program shows to be over (call with `_lock` held): those
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
        server between requests). It stops when its handler is replaced or has no open run."""
        period = max(0.2, min(self.config.run_idle_seconds / 2, 5.0))
        while True:
            time.sleep(period)
            with self._lock:
                if not self._in_use() or not self._open:
                    self._sweeper = None
                    return
                over = self._over()
            for run in over:
                safely("run.idle end", self.end_run, run)

    def end_answered(self) -> None:
        """End the open runs that answered in this thread, or in this asyncio task when called
        from one (its sibling tasks' answered runs stay open for what their task does next; one
        whose task is over ends with it, failed when the task raised): it starts another one."""
        thread, task = threading.get_ident(), current_task()
        with self._lock:
            over = [r for r in self._open.values() if r.thread == thread and r.answered_ns is not None]
            self._forget_flushed(thread, task)
        for run in over:
            ended = True if task is None else _task_over(run.task, task)
            if ended is not False:
                self.end_run(run, ended if isinstance(ended, BaseException) else None)

    def end_run(self, run: RunInvocation, exc: BaseException | None = None) -> None:
        """End an implicit run: at its last activity when it ended well, now when it failed."""
        with self._lock:
            self._open.pop(id(run), None)
        if exc is None:
            run.end(None, run.last_active_ns)
        else:
            run.end(exc)

    def end_all(self) -> None:
        """End every open implicit run (process exit, uninstrument, tests)."""
        with self._lock:
            runs = list(self._open.values())
        for run in runs:
            safely("run.end", self.end_run, run)

    def crashed(self, thread: int | None, exc: BaseException, task: Any = None) -> None:
        """An uncaught exception ended `thread` (or the program), or asyncio `task`: the implicit
        run last active there failed with it. A task that no run worked in (a client's `aclose`
        scheduled by the garbage collector, a helper task of a library) ends nothing."""
        with self._lock:
            runs = [r for r in self._open.values() if not r.ended]
            flushed = list(self._flushed.values())
        mine = _of(runs, thread, task)
        if mine:
            self.end_run(max(mine, key=lambda r: r.last_active_ns), exc)
            return
        mine = _of(flushed, thread, task)  # a flush already exported it: a `run_outcome` says so
        if mine:
            run = max(mine, key=lambda r: r.last_active_ns)
            with self._lock:
                self._flushed.pop(id(run), None)
            run.report_outcome(exc)

    # --- the tracer provider flushes or shuts down (recorder/flush.py) ---------------------------
    def end_for_flush(self, shutdown: bool) -> None:
        """End every open run that is over (`RunInvocation.over`: answered, or its last model
        call failed; at shutdown: every one), so that the flush exports them whole. A run a flush
        ended stays reachable by `crashed`."""
        with self._lock:
            runs = list(self._open.values())
        if not shutdown:
            runs = [r for r in runs if r.over]  # (`over` takes the run's lock: not under ours)
            with self._lock:
                for run in runs:
                    self._flushed[id(run)] = run
                while len(self._flushed) > MAX_OPEN:
                    self._flushed.pop(next(iter(self._flushed)))
        for run in runs:
            safely("flush: end run", self.end_run, run)

    def _forget_flushed(self, thread: int, task: Any = None) -> None:
        """`thread` (asyncio `task`, when given) starts another run: its flushed runs are over
        (call with `_lock` held); a sibling task's still running are kept."""
        for key in [k for k, r in self._flushed.items()
                    if r.thread == thread and (task is None or _task_over(r.task, task) is not False)]:
            del self._flushed[key]


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


def _of(runs: list[RunInvocation], thread: int | None, task: Any) -> list[RunInvocation]:
    """The runs an uncaught exception of `thread` (None: the program) or asyncio `task` ends."""
    if task is not None:
        return [r for r in runs if r.task is not None and r.task() is task]
    return [r for r in runs if r.thread == thread] or ([] if thread is not None else runs)
