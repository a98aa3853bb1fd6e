"""Deterministic replay: the patched LLM clients answer from a recorded run instead of the provider.

`with otel_agent_trace.replay("traces.jsonl", trace_id=...)` in code, or
`OTEL_AGENT_TRACE_REPLAY=traces.jsonl[#trace_id]` (with `replay_mode`, `replay_tools`) for a
whole process. While replay is on, the handler holds the replay interceptor (interceptor.py),
which the recorder's chat wrapper and tool decorator ask before each call; it asks `current()`
for the replayer, and the provider builds its SDK's response object from the recorded answer.
See docs/replay.md.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from typing import Iterator

from otel_agent_trace.replay.errors import ReplayDivergence, ReplayUnavailable
from otel_agent_trace.replay.replayer import Replayer
from otel_agent_trace.semconv import REPLAY_OF


__all__ = ["REPLAY_OF", "ReplayDivergence", "ReplayUnavailable", "Replayer", "current", "replay"]

_lock = threading.Lock()
_stack: list[Replayer] = []
_from_config: dict[str, Replayer] = {}


def split_target(target: str) -> tuple[str, str | None]:
    """`traces.jsonl#trace_id` → (path, trace id or None)."""
    path, _, trace_id = target.partition("#")
    return path, (trace_id or None)


def open_replayer(path: str, trace_id: str | None = None, mode: str = "strict", tools: str = "live") -> Replayer:
    from otel_agent_trace.replay.recording import load

    return Replayer(load(path, trace_id), mode, tools)


@contextmanager
def replay(path: str, trace_id: str | None = None, mode: str = "strict", tools: str = "live") -> Iterator[Replayer]:
    """Inside the block, instrumented LLM clients answer from the recorded run (see module doc).
    Raises `ReplayUnavailable` at once if the recording cannot be replayed."""
    from otel_agent_trace.recorder.handler import get_handler
    from otel_agent_trace.replay.interceptor import inject

    replayer = open_replayer(path, trace_id, mode, tools)
    with _lock:
        _stack.append(replayer)
    inject(get_handler())
    try:
        yield replayer
    finally:
        with _lock:
            _stack.remove(replayer)
        inject(get_handler())


def active() -> bool:
    """Is a `replay()` block open?"""
    return bool(_stack)


def current() -> Replayer | None:
    """The replayer of the innermost `replay()` block, else the configuration's, else None.

    A configured recording that cannot be replayed stops the process with its reason (exit 2):
    going on live would call the provider the user meant to leave alone."""
    if _stack:
        return _stack[-1]
    from otel_agent_trace import config

    settings = config.current()
    if not settings.replay:
        return None
    key = f"{settings.replay}|{settings.replay_mode}|{settings.replay_tools}"
    with _lock:
        found = _from_config.get(key)
        if found is None:
            try:
                found = _from_config[key] = open_replayer(*split_target(settings.replay), settings.replay_mode,
                                                          settings.replay_tools)
            except ReplayUnavailable as exc:
                print(f"otel-agent-trace replay: {exc}", file=sys.stderr)
                raise SystemExit(2) from None
        return found


class _CallableModule(type(sys)):  # type: ignore[misc]
    """`otel_agent_trace.replay` is this package once imported; calling it is `replay(...)`, so
    `with otel_agent_trace.replay("traces.jsonl"):` works either way."""

    def __call__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return replay(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
