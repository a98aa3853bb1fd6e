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
from contextlib import contextmanager
from typing import Iterator

from otel_agent_trace.replay.active import active, current, open_replayer, pop, push, split_target
from otel_agent_trace.replay.errors import ReplayDivergence, ReplayUnavailable
from otel_agent_trace.replay.replayer import Replayer
from otel_agent_trace.semconv import REPLAY_OF


__all__ = ["REPLAY_OF", "ReplayDivergence", "ReplayUnavailable", "Replayer", "active", "current", "open_replayer",
           "replay", "split_target"]


@contextmanager
def replay(path: str, trace_id: str | None = None, mode: str = "strict", tools: str = "live") -> Iterator[Replayer]:
    """Inside the block, instrumented LLM clients answer from the recorded run (see module doc).
    Raises `ReplayUnavailable` at once if the recording cannot be replayed."""
    from otel_agent_trace.recorder.handler import get_handler
    from otel_agent_trace.replay.interceptor import inject

    replayer = open_replayer(path, trace_id, mode, tools)
    push(replayer)
    inject(get_handler())
    try:
        yield replayer
    finally:
        pop(replayer)
        inject(get_handler())


class _CallableModule(type(sys)):  # type: ignore[misc]
    """`otel_agent_trace.replay` is this package once imported; calling it is `replay(...)`, so
    `with otel_agent_trace.replay("traces.jsonl"):` works either way."""

    def __call__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return replay(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
