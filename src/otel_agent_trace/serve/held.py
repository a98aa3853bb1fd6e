"""The traces `serve` holds until they are complete, bounded.

A trace is complete when its root span (no parent) has arrived and `decision_wait` has passed
since then, as the Collector's tail_sampling decides (spans are exported when they end, and a root
ends after its children, so the wait only covers spans still in other exporters' batches). A
trace whose root never comes is taken after `trace_timeout`, and analysed with what arrived.

Bounds: at most `max_traces` traces held and `max_spans` spans per trace. A new trace past the cap
evicts the oldest trace held that has no error span (a trace with an error is what the analysis
is for: it is never evicted); when every trace held has an error, the request is refused (the
receiver answers 429) instead. Spans past a trace's cap, spans of a trace already analysed (late)
and evicted traces are dropped and counted in `stats`."""

from __future__ import annotations

import threading
import time
from typing import Callable

from otel_agent_trace.analyzer.spans import STATUS_ERROR, Span

_RECENT_KEPT = 65536  # ids of analysed traces remembered, to count (and drop) their late spans


class _Held:
    __slots__ = ("spans", "first_seen", "root_seen", "error")

    def __init__(self, now: float) -> None:
        self.spans: list[Span] = []
        self.first_seen = now
        self.root_seen: float | None = None
        self.error = False


class HeldTraces:
    """Spans by trace until complete: `add` (the receivers), `take_ready` / `take_all` (the analyst)."""

    def __init__(self, max_traces: int = 10_000, max_spans: int = 10_000, decision_wait: float = 5.0,
                 trace_timeout: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_traces = max(1, int(max_traces))
        self.max_spans = max(1, int(max_spans))
        self.decision_wait = float(decision_wait)
        self.trace_timeout = max(float(trace_timeout), self.decision_wait)
        self._clock = clock
        self._traces: dict[str, _Held] = {}  # insertion order = age
        self._taken: dict[str, None] = {}  # recently analysed trace ids, oldest first
        self._lock = threading.Lock()
        self.spans_held = 0
        self.stats = {"spans_received": 0, "traces_evicted": 0, "spans_evicted": 0, "spans_over_cap": 0,
                      "late_spans": 0, "requests_refused": 0}

    def __len__(self) -> int:
        return len(self._traces)

    def add(self, spans: list[Span]) -> int | None:
        """Hold `spans` (one request's); the number of them dropped (over a cap, or late), or
        None when the request is refused whole (every trace held has an error and it brings new ones)."""
        if not spans:
            return 0
        now = self._clock()
        dropped = 0
        with self._lock:
            traces = self._traces
            new = {s.trace_id for s in spans if s.trace_id not in traces and s.trace_id not in self._taken}
            excess = len(traces) + len(new) - self.max_traces
            if excess > 0 and not self._evict(excess):
                self.stats["requests_refused"] += 1
                return None
            for span in spans:
                trace_id = span.trace_id
                held = traces.get(trace_id)
                if held is None:
                    if trace_id in self._taken:
                        self.stats["late_spans"] += 1
                        dropped += 1
                        continue
                    held = traces[trace_id] = _Held(now)
                if len(held.spans) >= self.max_spans:
                    self.stats["spans_over_cap"] += 1
                    dropped += 1
                    continue
                held.spans.append(span)
                if not span.parent_id and held.root_seen is None:
                    held.root_seen = now
                if span.status_code == STATUS_ERROR:
                    held.error = True
            self.spans_held += len(spans) - dropped
            self.stats["spans_received"] += len(spans)
        return dropped

    def _evict(self, count: int) -> bool:
        """Drop the `count` oldest traces without an error (lock held); False (nothing dropped)
        when there are not that many."""
        victims = []
        for trace_id, held in self._traces.items():
            if not held.error:
                victims.append(trace_id)
                if len(victims) == count:
                    break
        if len(victims) < count:
            return False
        for trace_id in victims:
            held = self._traces.pop(trace_id)
            self.spans_held -= len(held.spans)
            self.stats["traces_evicted"] += 1
            self.stats["spans_evicted"] += len(held.spans)
            self._remember(trace_id)
        return True

    def _remember(self, trace_id: str) -> None:
        taken = self._taken
        taken[trace_id] = None
        if len(taken) > _RECENT_KEPT:
            for old in list(taken)[: _RECENT_KEPT // 4]:
                del taken[old]

    def take_ready(self) -> list[list[Span]]:
        """The complete traces' spans (oldest first), no longer held."""
        now = self._clock()
        wait, timeout = self.decision_wait, self.trace_timeout
        with self._lock:
            ready = [t for t, h in self._traces.items()
                     if (h.root_seen is not None and now - h.root_seen >= wait) or now - h.first_seen >= timeout]
            return [self._take(t) for t in ready]

    def take_all(self) -> list[list[Span]]:
        """Every trace held, complete or not (shutdown)."""
        with self._lock:
            return [self._take(t) for t in list(self._traces)]

    def _take(self, trace_id: str) -> list[Span]:
        held = self._traces.pop(trace_id)
        self.spans_held -= len(held.spans)
        self._remember(trace_id)
        return held.spans
