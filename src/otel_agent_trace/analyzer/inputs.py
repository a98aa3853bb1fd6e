"""Reading the inputs: files (named, in directories, by glob) and remote sources, every span into
a `TraceStore`, with a progress bar; what could not be read goes to the input's `InputReport`."""

from __future__ import annotations

import gc
import glob
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from otel_agent_trace.analyzer.readers.otlp_json import read_file
from otel_agent_trace.analyzer.readers.sources import UnreadableInput
from otel_agent_trace.analyzer.readers.spill import TraceStore
from otel_agent_trace.analyzer.settings import AnalyzerSettings
from otel_agent_trace.analyzer.spans import InputReport, Span


def read_error(exc: Exception) -> str:
    """Why a whole input could not be read, for `inputs[].error`."""
    if isinstance(exc, UnreadableInput):
        return f"cannot read: {exc}"
    if isinstance(exc, OSError):
        return f"cannot read: {exc.strerror or exc}"
    return f"cannot read: {type(exc).__name__}: {exc}"


@dataclass
class Remote:
    """A fetch over HTTP: `jaeger` (url, service, lookback) or `tempo` (url, traceql, lookback)."""

    kind: str
    url: str
    service: str | None = None
    traceql: str | None = None
    lookback: str | None = None
    limit: int = 100


def expand(paths: Iterable[str]) -> list[str]:
    """Files named, files of directories named (sorted, recursively), and glob patterns."""
    out: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            for folder, dirs, files in os.walk(path):
                dirs.sort()
                out.extend(os.path.join(folder, n) for n in sorted(files) if not n.startswith("."))
        elif any(c in path for c in "*?[") and not os.path.exists(path):
            out.extend(sorted(p for p in glob.glob(path, recursive=True) if os.path.isfile(p)) or [path])
        else:
            out.append(path)
    return out


class Progress:
    """A one-line progress bar on stderr, shown only on a terminal and after `delay` seconds."""

    def __init__(self, total: int, stream=None, delay: float = 2.0, enabled: bool | None = None):
        self.stream = stream or sys.stderr
        self.total = max(total, 1)
        self.done = 0
        self.base = 0
        self.start = time.monotonic()
        self.delay = delay
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.shown = False
        self.label = ""

    def file(self, label: str, base: int) -> Callable[[int], None]:
        self.label, self.base = label, base
        return self.update

    def update(self, position: int) -> None:
        self.done = self.base + position
        elapsed = time.monotonic() - self.start
        if not self.enabled or elapsed < self.delay:
            return
        self.shown = True
        share = min(self.done / self.total, 1.0)
        bar = "#" * int(share * 30)
        rate = self.done / elapsed / 1e6
        self.stream.write(f"\r[{bar:<30}] {share:6.1%} {self.done / 1e6:,.0f}/{self.total / 1e6:,.0f} MB "
                          f"{rate:,.0f} MB/s {os.path.basename(self.label)[:30]:<30}")
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * 110 + "\r")
            self.stream.flush()


def read_into(store: TraceStore, inputs: list[InputReport], paths: Iterable[str], remotes: Iterable[Remote] = (),
              progress: Progress | None = None, consume: Callable | None = None,
              settings: AnalyzerSettings | None = None) -> None:
    """Read every input into `store`, one InputReport per input appended to `inputs`.

    `consume(store, report, spans)`: how spans reach the store (default `_consume`: all of them);
    `settings`: the analysis's (None: the environment's now)."""
    consume = _consume if consume is None else consume
    settings = AnalyzerSettings.from_env() if settings is None else settings
    files = expand(paths)
    if progress is None:
        progress = Progress(sum(file_size(p) for p in files))
    base = 0
    try:
        with no_gc():
            for path in files:
                report = InputReport(path)
                inputs.append(report)
                consume(store, report, lambda: read_file(path, report, progress.file(path, base), settings=settings))
                base += file_size(path)
            for remote in remotes:
                report = InputReport(remote.url)
                inputs.append(report)
                consume(store, report, lambda: _fetch(remote, report))
    finally:
        progress.close()


@contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic collector off while spans and runs are built: they hold no cycles, and each
    collection would rescan every object still held (a full one, ~0.1 s, whenever it is turned
    back on between chunks). Nested uses keep it off; the state before is restored."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _fetch(remote: Remote, report: InputReport) -> Iterator[Span]:
    from otel_agent_trace.analyzer.readers.remote import fetch_jaeger, fetch_tempo

    if remote.kind == "jaeger":
        return fetch_jaeger(remote.url, remote.service or "", remote.lookback or "1h", remote.limit, report)
    return fetch_tempo(remote.url, remote.traceql or "{}", remote.limit, remote.lookback, report)


def file_size(path: str) -> int:
    """Bytes of a file, 0 when it cannot be read (the reading reports why)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _consume(store: TraceStore, report: InputReport, spans: Callable[[], Iterator[Span]],
             trace_prefix: str | None = None) -> None:
    """Every span into `store` (only those of traces whose id starts with `trace_prefix`, if given)."""
    add = store.add
    last = 0
    step = max(1, min(store.budget // 8, 1 << 20))  # how often the budget is checked, in bytes read
    try:
        for span in spans():
            if trace_prefix is None or span.trace_id.startswith(trace_prefix):
                add(span)
            if report.bytes_read - last > step:
                store.account(report.bytes_read - last)
                last = report.bytes_read
        store.account(report.bytes_read - last)
    except Exception as exc:  # noqa: BLE001 - one bad input never stops the others
        report.error = read_error(exc)
