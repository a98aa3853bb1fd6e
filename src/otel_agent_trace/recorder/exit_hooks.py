"""The program's end: what ends the open runs when the program, a thread or a task dies or exits.

An uncaught exception that ends the program, a thread, or the asyncio task an implicit run last
worked in marks that run failed (phase `critical`); the program's normal exit ends the open runs
well. Installed by the instrumentor, removed by uninstrument; each hook is chained to what was
there before and asks the process's active handler (handler.py) at the time it fires.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from typing import Any

from opentelemetry import trace

from otel_agent_trace._failopen import safely
from otel_agent_trace.recorder.handler import active_handler


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
            handler = active_handler()
            if isinstance(exc, BaseException) and task is not None and handler is not None:
                safely("asyncio exception hook", handler.implicit.crashed, None, exc, task)
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
        handler = active_handler()
        if handler is not None:
            safely("SIGTERM: end runs", handler.implicit.end_all)
        providers = {id(p): p for p in (handler.tracer_provider if handler else None, trace.get_tracer_provider())
                     if p is not None and hasattr(p, "force_flush")}
        for provider in providers.values():
            safely("SIGTERM: flush", provider.force_flush, int(ExitHooks.FLUSH_SECONDS * 1000))

    def _sys_hook(self, exc_type: Any, exc: BaseException, tb: Any) -> None:
        handler = active_handler()
        if handler is not None:
            safely("sys.excepthook", handler.implicit.crashed, threading.main_thread().ident, exc)
        self._sys(exc_type, exc, tb)

    def _thread_hook(self, args: Any) -> None:
        handler = active_handler()
        if handler is not None and args.exc_value is not None:
            thread = args.thread.ident if args.thread is not None else None
            safely("threading.excepthook", handler.implicit.crashed, thread, args.exc_value)
        self._threading(args)

    @staticmethod
    def _at_exit() -> None:
        handler = active_handler()
        if handler is not None:
            safely("atexit", handler.implicit.end_all)


EXIT_HOOKS = ExitHooks()
