"""The analyzer's view of a span: plain values, whatever format it was read from.

Span, Event and Link are msgspec Structs, not dataclasses: the reader makes one per span, and a
Struct's constructor runs in C (~70 ns; a slots dataclass's generated `__init__`: ~210 ns). They
are not tracked by the garbage collector (`gc=False`): they hold plain values, never each other
or anything that points back, so they make no cycles, and millions of them would otherwise be
traversed by every collection while a file is read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
from otel_agent_trace.semconv import NORMALIZED_FROM


STATUS_ERROR = 2  # OTLP status code of a span that failed (`Span.status_code`)


class Link(msgspec.Struct, gc=False):
    trace_id: str
    span_id: str
    attributes: dict[str, Any] = msgspec.field(default_factory=dict)


class Event(msgspec.Struct, gc=False):
    name: str
    time_ns: int
    attributes: dict[str, Any] = msgspec.field(default_factory=dict)


class Span(msgspec.Struct, gc=False):
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    status_code: int = 0  # 0 unset, 1 ok, 2 error (OTLP)
    status_message: str = ""
    attributes: dict[str, Any] = msgspec.field(default_factory=dict)
    events: list[Event] = msgspec.field(default_factory=list)
    links: list[Link] = msgspec.field(default_factory=list)
    resource: dict[str, Any] = msgspec.field(default_factory=dict)
    source: tuple[str, int] | None = None  # (path, line) it was read from
    kind: int = 0  # OTLP SpanKind: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer
    scope: str = ""  # instrumentation scope name ("" when the format has none, e.g. Jaeger)

    def attr(self, key: str, default: Any = None) -> Any:
        return self.attributes.get(key, default)


@dataclass
class BadLine:
    line: int
    reason: str


@dataclass
class InputReport:
    path: str
    spans: int = 0
    bad_lines: list[BadLine] = field(default_factory=list)
    error: str | None = None  # the whole input was unreadable
    bytes_read: int = 0  # decompressed JSON bytes read so far
    # kept as read but odd (unknown enum values, orphans, link cycles): reported, not counted as bad
    warnings: list[BadLine] = field(default_factory=list)

    def bad(self, line: int, reason: str) -> None:
        self.bad_lines.append(BadLine(line, reason))

    def warn(self, line: int, reason: str) -> None:
        self.warnings.append(BadLine(line, reason))


# Set on spans the analyzer rewrote from a foreign convention (value: `openinference`,
# `openllmetry`, `genai`); spans of our own instrumentation never carry it.
