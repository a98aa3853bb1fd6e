"""Group spans by trace over many inputs with bounded memory.

Spans are kept in memory per trace until the JSON read since the last spill exceeds the budget;
then every trace held in memory is appended to a temporary SQLite file (stdlib; one row per
trace and spill, the spans pickled) and memory is freed. At the end each trace is assembled from
its rows plus what is still in memory, one trace at a time, so memory is bounded by the budget
plus the largest trace. Inputs whose traces fit the budget never touch the disk.
"""

from __future__ import annotations

import os
import pickle
from collections import defaultdict
from typing import TYPE_CHECKING, Iterator

from otel_agent_trace.analyzer.spans import Span

if TYPE_CHECKING:
    import sqlite3

DEFAULT_BUDGET_BYTES = 256 * 1024 * 1024  # JSON bytes read between spills (~3-5x that in objects)


class TraceStore:
    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES, directory: str | None = None):
        self.budget = budget_bytes
        self.directory = directory
        self.memory: dict[str, list[Span]] = defaultdict(list)
        self.pending_bytes = 0
        self.spills = 0
        self.spilled_traces: set[str] = set()
        self._db: sqlite3.Connection | None = None
        self._path: str | None = None

    def add(self, span: Span) -> None:
        self.memory[span.trace_id].append(span)

    def account(self, nbytes: int) -> None:
        """Count JSON bytes read; spill when the budget is exceeded."""
        self.pending_bytes += nbytes
        if self.pending_bytes > self.budget and self.memory:
            self.spill()

    def spill(self) -> None:
        if self._db is None:
            import sqlite3  # (here: most inputs never spill, and the import costs a start ~10 ms)
            import tempfile

            fd, self._path = tempfile.mkstemp(prefix="otel-agent-trace-", suffix=".sqlite", dir=self.directory)
            os.close(fd)
            self._db = sqlite3.connect(self._path)
            self._db.execute("PRAGMA journal_mode=OFF")
            self._db.execute("PRAGMA synchronous=OFF")
            self._db.execute("CREATE TABLE chunks (trace_id TEXT, data BLOB)")
        rows = ((trace_id, pickle.dumps(spans, protocol=pickle.HIGHEST_PROTOCOL)) for trace_id, spans in self.memory.items())
        with self._db:
            self._db.executemany("INSERT INTO chunks VALUES (?, ?)", rows)
        self.spilled_traces.update(self.memory)
        self.memory = defaultdict(list)
        self.pending_bytes = 0
        self.spills += 1

    def traces(self) -> Iterator[list[Span]]:
        """Each trace's spans, complete, one trace at a time (memory-only traces first)."""
        memory = self.memory
        self.memory = defaultdict(list)
        for trace_id in [t for t in memory if t not in self.spilled_traces]:
            yield memory.pop(trace_id)
        if self._db is None:
            return
        self._db.execute("CREATE INDEX chunks_trace ON chunks (trace_id)")
        for trace_id in sorted(self.spilled_traces):
            spans: list[Span] = []
            for (data,) in self._db.execute("SELECT data FROM chunks WHERE trace_id = ? ORDER BY rowid", (trace_id,)):
                spans.extend(pickle.loads(data))
            spans.extend(memory.pop(trace_id, ()))
            yield spans

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._path:
            try:
                os.unlink(self._path)
            except OSError:
                pass
            self._path = None

    def __enter__(self) -> "TraceStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
