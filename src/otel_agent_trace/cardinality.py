"""Metric attribute values with bounded cardinality: the first `limit` distinct values of an
attribute are kept as they are, every later one is reported as `other`.

Why: a metric's series multiply by every attribute value, and a backend bills (and slows) per
series. Tool and agent names come from the user's code, so they are few in practice, but a tool
named after its arguments, or a generated agent name, must not explode a dashboard. Ids and free
text are never used as metric attributes at all (docs/attributes.md, "Metrics")."""

from __future__ import annotations

import threading

OTHER = "other"
DEFAULT_LIMIT = 50


class CappedValues:
    """`capped(value)`: `value` while fewer than `limit` distinct values were seen, else `other`."""

    __slots__ = ("limit", "_seen", "_lock")

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = max(int(limit), 0)
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str | None) -> str:
        if not value:
            return ""
        if value in self._seen:
            return value
        with self._lock:
            if len(self._seen) < self.limit:
                self._seen.add(value)
                return value
        return OTHER
