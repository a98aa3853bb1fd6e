"""Which recording answers now: the innermost `replay()` block's, else the configuration's
(`OTEL_AGENT_TRACE_REPLAY`). Held apart from the package so the interceptor can ask without
importing the package that injects it."""

from __future__ import annotations

import sys
import threading

from otel_agent_trace.replay.errors import ReplayUnavailable
from otel_agent_trace.replay.replayer import Replayer

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


def push(replayer: Replayer) -> None:
    with _lock:
        _stack.append(replayer)


def pop(replayer: Replayer) -> None:
    with _lock:
        _stack.remove(replayer)


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
