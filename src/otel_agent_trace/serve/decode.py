"""OTLP/HTTP request bodies to the analyzer's spans, through the same record reader `analyze`
uses for a file's line (`readers/otlp_json.read_record`): one decoding of a span, whatever the
transport. A protobuf body is first mapped to protobuf's JSON form (base64 ids, which the reader
accepts as it accepts them in a file)."""

from __future__ import annotations

import zlib

import orjson

from otel_agent_trace.analyzer.readers.otlp_json import read_record
from otel_agent_trace.analyzer.spans import InputReport, Span

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
SOURCE = "serve"  # the `path` of every span received (its line: the request's number)


class BadRequest(ValueError):
    """A body that cannot be read: the HTTP 400 (or 415) and the reason sent back."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.status = status


def inflate(body: bytes, encoding: str, limit: int) -> bytes:
    """The body without its `Content-Encoding` (gzip or none), refused past `limit` bytes."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise BadRequest(f"unsupported Content-Encoding {encoding!r} (gzip or none)", 415)
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise BadRequest(f"bad gzip body: {exc}") from None
    if len(out) > limit:
        raise BadRequest(f"body inflates past {limit} bytes", 413)
    return out


def media_type(content_type: str) -> str:
    """`application/json` of `application/json; charset=utf-8`."""
    return content_type.split(";", 1)[0].strip().lower()


def spans_of(body: bytes, kind: str, number: int, report: InputReport) -> list[Span]:
    """The spans of one ExportTraceServiceRequest; what is wrong in it goes to `report`."""
    if kind == PROTOBUF:
        return read_record(protobuf_as_json(body), number, SOURCE, report)
    if kind == JSON:
        return read_record(body, number, SOURCE, report)
    raise BadRequest(f"unsupported Content-Type {kind!r} ({PROTOBUF} or {JSON})", 415)


def protobuf_as_json(body: bytes) -> bytes:
    """An ExportTraceServiceRequest in protobuf, as OTLP JSON bytes (protobuf's JSON mapping)."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        request = ExportTraceServiceRequest.FromString(body)
    except DecodeError as exc:
        raise BadRequest(f"not an ExportTraceServiceRequest: {exc}") from None
    return message_as_json(request)


def message_as_json(request: object) -> bytes:
    """A decoded ExportTraceServiceRequest (HTTP or gRPC) as OTLP JSON bytes."""
    from google.protobuf.json_format import MessageToDict

    return orjson.dumps(MessageToDict(request, use_integers_for_enums=True))
