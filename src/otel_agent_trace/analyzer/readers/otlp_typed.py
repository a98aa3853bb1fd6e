"""The common shape of an OTLP JSON trace export as msgspec Structs, for the reader's fast path
(`otlp_json.read_record`): decoding into these costs about what `orjson.loads` does, and skips
building a dict (and key strings) per key/value wrapper.

The schema accepts only input that the orjson path reads to the same values, and rejects the rest
(`msgspec.DecodeError`, whose subclass is `ValidationError`), which the orjson path then reads or
reports: snake_case or unknown span fields and unknown AnyValue kinds (`forbid_unknown_fields`),
`null` where a value is expected (no field is Optional: the `None` defaults only mean "absent"),
enum names as strings and out-of-range enums, bools or floats for ints, ints outside int64
(orjson reads them as floats), nested arrays, kvlists and bytes (rare: left to the orjson path).
Fields that the reader ignores are declared `Raw` so that their names are known but not decoded.
Strict mode: `strict=False` would read "3" as span kind 3, where the orjson path warns.
"""

from __future__ import annotations

from typing import Annotated, Union

import msgspec
from msgspec import Raw, Struct

_Int64 = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
_IntOrText = Union[_Int64, str]  # int64 fields: JSON strings in OTLP JSON; `int()` reads both
# a span id of 16 characters, checked for hex digits per record (`otlp_json._typed_spans`); other
# lengths (base64, or a bad id) go to the orjson path, which reads or reports them
_SpanId = Annotated[str, msgspec.Meta(min_length=16, max_length=16)]


class Scalar(Struct, forbid_unknown_fields=True, gc=False):
    """An AnyValue inside an array (no nesting); exactly one field is set in a valid one."""

    stringValue: str = None  # type: ignore[assignment]
    intValue: _IntOrText = None  # type: ignore[assignment]
    doubleValue: float = None  # type: ignore[assignment]
    boolValue: bool = None  # type: ignore[assignment]


class Array(Struct, gc=False):
    values: list[Scalar] = ()  # type: ignore[assignment]


class Value(Scalar, forbid_unknown_fields=True, gc=False):
    """An AnyValue of an attribute."""

    arrayValue: Array = None  # type: ignore[assignment]


class KeyValue(Struct, gc=False):
    key: str
    value: Value


class Status(Struct, gc=False):
    code: Annotated[int, msgspec.Meta(ge=0, le=2)] = 0
    message: str = ""


class Event(Struct, gc=False):
    name: str = ""
    timeUnixNano: _IntOrText = 0
    attributes: list[KeyValue] = ()  # type: ignore[assignment]


class Link(Struct, gc=False):
    traceId: str
    spanId: str
    attributes: list[KeyValue] = ()  # type: ignore[assignment]


class Span(Struct, forbid_unknown_fields=True, gc=False):
    """Unknown fields are refused: the orjson path reads snake_case ones (`start_time_unix_nano`)."""

    traceId: str
    spanId: _SpanId
    name: str = ""
    kind: Annotated[int, msgspec.Meta(ge=0, le=5)] = 0
    startTimeUnixNano: _IntOrText = 0
    endTimeUnixNano: _IntOrText = 0
    parentSpanId: str = ""
    attributes: list[KeyValue] = ()  # type: ignore[assignment]
    events: list[Event] = ()  # type: ignore[assignment]
    links: list[Link] = ()  # type: ignore[assignment]
    status: Status = None  # type: ignore[assignment]
    traceState: Raw = None  # type: ignore[assignment]
    flags: Raw = None  # type: ignore[assignment]
    droppedAttributesCount: Raw = None  # type: ignore[assignment]
    droppedEventsCount: Raw = None  # type: ignore[assignment]
    droppedLinksCount: Raw = None  # type: ignore[assignment]


class Resource(Struct, gc=False):
    attributes: list[KeyValue] = ()  # type: ignore[assignment]


class Scope(Struct, gc=False):
    name: str = ""


class ScopeSpans(Struct, gc=False):
    spans: list[Span]
    scope: Scope = None  # type: ignore[assignment]
    instrumentationLibrary: Raw = None  # type: ignore[assignment]  # the old name of `scope`


class ResourceSpans(Struct, gc=False):
    scopeSpans: list[ScopeSpans]
    resource: Resource = None  # type: ignore[assignment]


class Export(Struct, gc=False):
    """An ExportTraceServiceRequest: one JSON Lines record."""

    resourceSpans: list[ResourceSpans]


decode_export = msgspec.json.Decoder(Export).decode
decode_ints = msgspec.json.Decoder(list[int]).decode  # `otlp_json._times`
DecodeError = msgspec.DecodeError
