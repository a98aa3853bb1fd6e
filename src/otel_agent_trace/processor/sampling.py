"""In-process tail sampling: buffer each trace's spans, decide for the whole trace, bounded memory.

Decision (when the trace's local root ends, or `decision_seconds` after its first span):
- keep if any span failed: status ERROR, `agent_trace.lifecycle.phase` origin/critical, or
  `agent_trace.error.type` loop_detected/budget_exceeded;
- else keep when the low 64 bits of the trace id fall under `ratio * 2**64`: the SDK's
  `TraceIdRatioBased` rule, so every process of a distributed trace decides alike.
Kept traces get `agent_trace.sampling.ratio` on every span of ours (1.0 for failing ones, `ratio` for
sampled ones) when ratio < 1, so counts can be re-weighted by 1/ratio.

Overflow policy (more than `max_spans` spans or `max_bytes` of span text buffered): the oldest
undecided traces are decided early (forced flush) by the same rule; a trace already known to be
failing is exported, never dropped. A span that ends after its trace was decided follows the
decision, except a failing span, which is always exported (counted in `late_failing_kept`).
A trace seen again after its decision left the bounded decision memory is decided afresh.

Spans whose parent is remote are decided by the same rule in this process; a decision that needs
the spans of several processes belongs to the Collector's tail_sampling processor
(deploy/collector-config.yaml).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from otel_agent_trace import semconv, vocabulary
from otel_agent_trace.processor.redaction import is_ours, plain, with_attributes
from otel_agent_trace.semconv import SAMPLING_RATIO

_FAIL_PHASES = frozenset({vocabulary.Phase.ORIGIN.value, vocabulary.Phase.CRITICAL.value})
_STOP_ERRORS = frozenset({vocabulary.ErrorType.LOOP_DETECTED.value, vocabulary.ErrorType.BUDGET_EXCEEDED.value})
_MAX_ID = (1 << 64) - 1
_DECISIONS_KEPT = 65536


def _raw(span: ReadableSpan) -> tuple[Any, Any]:
    # the SDK's `attributes`/`events` properties wrap in a new MappingProxy/tuple per call
    # (~1 us each); read the stored values when the span is an SDK ReadableSpan
    try:
        return plain(span._attributes), span._events
    except AttributeError:
        return span.attributes, span.events


def is_failing(span: ReadableSpan, attrs: Any = None, events: Any = None) -> bool:
    """Does this span make its trace one to keep whatever the ratio?"""
    if span.status.status_code is StatusCode.ERROR:
        return True
    if attrs is None and events is None:
        attrs, events = _raw(span)
    if attrs and (attrs.get(semconv.LIFECYCLE_PHASE) in _FAIL_PHASES or attrs.get(semconv.ERROR_TYPE) in _STOP_ERRORS):
        return True
    for event in events or ():
        ea = event.attributes
        if ea and (ea.get(semconv.LIFECYCLE_PHASE) in _FAIL_PHASES or ea.get(semconv.ERROR_TYPE) in _STOP_ERRORS):
            return True
    return False


def ratio_keeps(trace_id: int, ratio: float) -> bool:
    """Deterministic from the trace id: the same answer in every process."""
    if ratio >= 1.0:
        return True
    if ratio <= 0.0:
        return False
    return (trace_id & _MAX_ID) < round(ratio * (_MAX_ID + 1))


def span_size(span: ReadableSpan, attrs: Any = None, events: Any = None) -> int:
    """Rough bytes a buffered span holds: fixed overhead plus its text."""
    size = 400
    if attrs is None and events is None:
        attrs, events = _raw(span)
    if attrs:
        for v in attrs.values():
            if isinstance(v, str):
                size += len(v)
            elif isinstance(v, (list, tuple)):
                size += 16 * len(v) + sum(len(x) for x in v if isinstance(x, str))
            else:
                size += 16
    if events:
        for e in events:
            size += 200
            if e.attributes:
                size += sum(len(v) if isinstance(v, str) else 16 for v in e.attributes.values())
    return size


class _Trace:
    __slots__ = ("failing", "first_seen", "size", "spans")

    def __init__(self, now: float) -> None:
        self.spans: list[ReadableSpan] = []
        self.size = 0
        self.failing = False
        self.first_seen = now


class TailSampler:
    """Buffers spans per trace and hands the kept ones to `export` (a callable taking a span)."""

    def __init__(
        self,
        export: Callable[[ReadableSpan], Any],
        ratio: float = 1.0,
        max_spans: int = 100_000,
        max_bytes: int = 64 * 1024 * 1024,
        decision_seconds: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        sweep: bool = True,
        prepare: Callable[[ReadableSpan], ReadableSpan | None] | None = None,
    ) -> None:
        self._export = export
        # applied to each kept span before it is stamped and exported (the processor's redaction:
        # a dropped trace is never redacted); None from it drops the span
        self._prepare = prepare
        self.ratio = float(ratio)
        self.max_spans = max(1, int(max_spans))
        self.max_bytes = max(1, int(max_bytes))
        self.decision_seconds = float(decision_seconds)
        self._clock = clock
        self._traces: dict[int, _Trace] = {}  # insertion order = age
        self._decided: dict[int, float] = {}  # trace id -> weight of a kept trace, 0.0 = dropped
        self._spans = 0
        self._bytes = 0
        self._lock = threading.Lock()
        self.stats = {
            "traces_kept": 0, "traces_dropped": 0, "spans_kept": 0, "spans_dropped": 0,
            "forced_flushes": 0, "timeouts": 0, "late_spans": 0, "late_failing_kept": 0,
            "max_buffered_spans": 0, "max_buffered_bytes": 0,
        }
        self._stop = threading.Event()
        self._sweeper: threading.Thread | None = None
        self._want_sweeper = sweep
        if hasattr(os, "register_at_fork"):
            ref = weakref.WeakMethod(self._after_fork)
            os.register_at_fork(after_in_child=lambda: (m := ref()) is not None and m())

    def _after_fork(self) -> None:
        # the child starts empty: the parent still owns (and exports) what it had buffered
        self._lock = threading.Lock()
        self._traces.clear()
        self._spans = self._bytes = 0
        self._stop = threading.Event()
        self._sweeper = None

    # --- intake -------------------------------------------------------------------------------
    def on_end(self, span: ReadableSpan) -> None:
        ctx = span.context
        tid = ctx.trace_id
        parent = span.parent
        local_root = parent is None or parent.is_remote
        attrs, events = _raw(span)
        failing = is_failing(span, attrs, events)
        out: list[tuple[ReadableSpan, float]] = []
        with self._lock:
            decided = self._decided.get(tid)
            if decided is not None and tid not in self._traces:
                self.stats["late_spans"] += 1
                if decided or failing:
                    if not decided:
                        self.stats["late_failing_kept"] += 1
                    out.append((span, decided or 1.0))
                    self.stats["spans_kept"] += 1
                else:
                    self.stats["spans_dropped"] += 1
            else:
                trace = self._traces.get(tid)
                if trace is None:
                    now = self._clock()
                    trace = self._traces[tid] = _Trace(now)
                    self._expire(now, out)
                    if self._want_sweeper and self._sweeper is None:
                        self._start_sweeper()
                size = span_size(span, attrs, events)
                trace.spans.append(span)
                trace.size += size
                trace.failing = trace.failing or failing
                self._spans += 1
                self._bytes += size
                if local_root:
                    self._decide(tid, out)
                elif self._spans > self.max_spans or self._bytes > self.max_bytes:
                    self._overflow(out)
                self.stats["max_buffered_spans"] = max(self.stats["max_buffered_spans"], self._spans)
                self.stats["max_buffered_bytes"] = max(self.stats["max_buffered_bytes"], self._bytes)
        self._emit(out)

    def _emit(self, out: list[tuple[ReadableSpan, float]]) -> None:
        """Prepare, stamp and export kept spans: outside the lock."""
        prepare = self._prepare
        for span, weight in out:
            if prepare is not None:
                span = prepare(span)  # type: ignore[assignment]
                if span is None:
                    continue
            self._export(self._mark(span, weight))

    # --- decisions (lock held) ----------------------------------------------------------------
    def _decide(self, tid: int, out: list[tuple[ReadableSpan, float]]) -> None:
        trace = self._traces.pop(tid)
        self._spans -= len(trace.spans)
        self._bytes -= trace.size
        keep = trace.failing or ratio_keeps(tid, self.ratio)
        weight = (1.0 if trace.failing else self.ratio) if keep else 0.0
        self._decided[tid] = weight
        if len(self._decided) > _DECISIONS_KEPT:
            for old in list(self._decided)[: _DECISIONS_KEPT // 4]:
                del self._decided[old]
        if keep:
            self.stats["traces_kept"] += 1
            self.stats["spans_kept"] += len(trace.spans)
            out.extend((s, weight) for s in trace.spans)
        else:
            self.stats["traces_dropped"] += 1
            self.stats["spans_dropped"] += len(trace.spans)

    def _mark(self, span: ReadableSpan, weight: float) -> ReadableSpan:
        if self.ratio >= 1.0 or not is_ours(span):  # foreign spans are kept or dropped alike, not stamped
            return span
        return with_attributes(span, {SAMPLING_RATIO: weight})

    def _overflow(self, out: list[tuple[ReadableSpan, float]]) -> None:
        # oldest first; known-failing traces are exported (kept), never dropped
        while self._traces and (self._spans > self.max_spans or self._bytes > self.max_bytes):
            self.stats["forced_flushes"] += 1
            self._decide(next(iter(self._traces)), out)

    def _expire(self, now: float, out: list[tuple[ReadableSpan, float]]) -> None:
        limit = now - self.decision_seconds
        while self._traces:
            tid, trace = next(iter(self._traces.items()))
            if trace.first_seen > limit:
                break
            self.stats["timeouts"] += 1
            self._decide(tid, out)

    # --- flushing -----------------------------------------------------------------------------
    def flush(self) -> None:
        """Decide every pending trace now (force_flush, shutdown): nothing stays buffered."""
        out: list[tuple[ReadableSpan, float]] = []
        with self._lock:
            while self._traces:
                self._decide(next(iter(self._traces)), out)
        self._emit(out)

    def sweep(self) -> None:
        """Decide traces older than `decision_seconds` (also run by a daemon thread)."""
        out: list[tuple[ReadableSpan, float]] = []
        with self._lock:
            self._expire(self._clock(), out)
        self._emit(out)

    def _start_sweeper(self) -> None:
        period = max(0.05, min(self.decision_seconds / 2, 5.0))

        def loop() -> None:
            while not self._stop.wait(period):
                try:
                    self.sweep()
                except Exception:  # noqa: BLE001,S110 # pragma: no cover - never kill the host over a sweep
                    pass

        self._sweeper = threading.Thread(target=loop, name="agent-trace-sampler", daemon=True)
        self._sweeper.start()

    def shutdown(self) -> None:
        self._stop.set()
        self.flush()

    @property
    def buffered(self) -> tuple[int, int]:
        """(spans, bytes) currently buffered."""
        return self._spans, self._bytes
