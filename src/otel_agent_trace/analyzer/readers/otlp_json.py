"""OTLP JSON reader: JSON Lines (one ExportTraceServiceRequest per line, as the Collector's file
exporter and `agent_trace_file` write), a single OTLP JSON document (pretty-printed too), the
Collector's zstd frames, and the wrappers backends put around OTLP JSON: Jaeger v2's
`/api/v3/traces` (`{"result": {...}}`), Tempo's `/api/traces/<id>` (`{"batches": [...]}`) and
`/api/v2/traces/<id>` (`{"trace": {...}}`). A Jaeger JSON document (`{"data": [...]}`) found in
the same input is handed to `jaeger_json`, an OTLP logs export (`{"resourceLogs": [...]}`) to
`otlp_logs` (its evaluation results, as carrier spans).

Robustness (the analyzer never crashes on input): a record that cannot be read is reported with
its number and reason and skipped; a span with a wrong type in a required field is dropped and
reported; a wrong attribute is dropped and reported, the span kept; bytes that are not UTF-8 are
replaced (U+FFFD) and reported; a string attribute over `MAX_ATTRIBUTE_CHARS` is truncated and
reported; an unknown enum value (status code, span kind) is read as unset and noted as a warning.
Ids may be hex (OTLP JSON) or base64 (protobuf JSON mapping).

Speed (NOTES.md: object creation, not disk, is the bound): where the optional native reader is
built and the analysis's settings allow it (`native_reader`: native/, Rust), it reads a record
of the common shape straight into the spans `_typed_spans` would make, and declines (None)
anything else, which the paths below read.
Otherwise a record is first decoded with msgspec
into the typed Structs of `otlp_typed` (the common shape only: no dict per key/value wrapper),
then read by `_typed_spans`. Anything that shape refuses, or that `_typed_spans` would read
differently, goes to the careful path: `orjson.loads`, then each span read field by field,
reporting what is wrong and keeping what is usable. Both paths build the same spans
(tests/analyzer_inputs/test_reader_typed.py, test_reader_paths.py). (A third path, orjson with a
"fast" reader of well-formed spans, was folded into the careful one: the typed path reads every
well-formed record, so it only ever saw the uncommon shapes.)
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator

import orjson

from otel_agent_trace.analyzer.readers import otlp_logs, otlp_typed, otlp_values
from otel_agent_trace.analyzer.readers.sources import BAD_RECORD, GZIP_MAGIC, ZSTD_MAGIC, records
from otel_agent_trace.analyzer.readers.otlp_values import (any_value, attributes_careful, enum_field,
                                                           hex_id, int_field, short)
from otel_agent_trace.analyzer.settings import AnalyzerSettings
from otel_agent_trace.analyzer.spans import Event, InputReport, Link, Span

_DOC_PROBE = 200  # a first line shorter than this that does not parse may start a pretty-printed document
_STATUS_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2, "UNSET": 0, "OK": 1, "ERROR": 2}
_KIND_NAMES = {"SPAN_KIND_UNSPECIFIED": 0, "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3,
               "SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5}
_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError
_decode_export = otlp_typed.decode_export
_decode_ints = otlp_typed.decode_ints
# what the typed path raises on input it leaves to the orjson path (int(), ids, `_value_typed`)
_NOT_TYPED = (otlp_typed.DecodeError, ValueError, TypeError)


def read_file(path: str, report: InputReport, progress: Callable[[int], None] | None = None, start: int = 0,
              end: int | None = None, offsets: dict[int, int] | None = None,
              settings: AnalyzerSettings | None = None) -> Iterator[Span]:
    """Spans of one file (or of its lines in `start`..`end`, see `splittable`); problems go to
    `report` (file-level errors raise OSError); `offsets`: see `sources.records`; `settings`: the
    analysis's (None: the environment's now)."""
    for batch in read_batches(path, report, progress, start, end, offsets, settings):
        yield from batch


def read_batches(path: str, report: InputReport, progress: Callable[[int], None] | None = None, start: int = 0,
                 end: int | None = None, offsets: dict[int, int] | None = None,
                 settings: AnalyzerSettings | None = None) -> Iterator[Record]:
    """`read_file`, one `Record` per record (no generator frame per span: the hot loop)."""
    native = native_reader((AnalyzerSettings.from_env() if settings is None else settings).native)
    source = records(path, progress, start, end, offsets)
    number = 0
    try:
        for number, raw in source:
            if number == 1 and _starts_document(raw):
                yield from map(_grouped, _document(raw, source, path, report, native))
                return
            yield _grouped(read_record(raw, number, path, report, native))
    except (EOFError, OSError, ValueError) as exc:
        # a truncated or corrupt compressed stream: what was read so far is kept
        if isinstance(exc, OSError) and not _is_stream_error(exc):
            raise
        report.bad(number + 1, f"unreadable after line {number}: {type(exc).__name__}: {exc}")


def splittable(path: str) -> bool:
    """Can the file be read in byte ranges (plain JSON Lines, not compressed, not a single
    pretty-printed document)?"""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(_DOC_PROBE)
    except OSError:
        return False
    if first.startswith((GZIP_MAGIC, ZSTD_MAGIC)) or first[4:8] == ZSTD_MAGIC:
        return False
    return not _starts_document(first)


def is_document(path: str) -> bool:
    """Is the input read as one document (its records are not lines of JSON)?"""
    try:
        for _, first in records(path):
            return _starts_document(first)
    except (EOFError, OSError, ValueError):
        return False
    return False


def _starts_document(first: bytes) -> bool:
    """The rule `read_batches` applies to the first record: a short first line that does not
    parse may start a pretty-printed document."""
    text = first.strip()
    return text[:1] in (b"{", b"[") and len(text) < _DOC_PROBE and _unparsable(text)


def _is_stream_error(exc: OSError) -> bool:
    return type(exc).__name__ in ("BadGzipFile", "ZstdError") or "compressed" in str(exc).lower()


def _unparsable(text: bytes) -> bool:
    try:
        _loads(text)
    except _JSONDecodeError:
        return True
    return False


def _document(first: bytes, rest: Iterator[tuple[int, bytes]], path: str, report: InputReport,
              native: NativeRead | None) -> Iterator[list[Span]]:
    """A pretty-printed single document, or JSON Lines whose short first line is broken."""
    lines = [first] + [raw for _, raw in rest]
    try:
        doc = _loads(b"".join(lines))
    except _JSONDecodeError:
        for number, raw in enumerate(lines, start=1):
            yield read_record(raw, number, path, report, native)
        return
    report.bytes_read += sum(map(len, lines))
    yield spans_of_doc(doc, path, 1, report)


class Record(list):
    """One record's spans in record order (a list, as `read_file` and `reread` take them), and the
    same spans by trace for the chunk stream, which then works per trace, not per span: `traces`
    (trace id -> its spans in this record, in order, in order of first appearance), `rooted` (the
    trace ids of its roots) and `line` (the record's number)."""

    __slots__ = ("line", "traces", "rooted")


NativeRead = Callable[[bytes, str, int], "Record | None"]  # the native reader's `read(raw, path, line)`


def _grouped(spans: list[Span]) -> Record:
    """The spans of a record as a `Record` (the typed path makes one as it reads)."""
    return spans if spans.__class__ is Record else _by_trace(spans)


def _by_trace(spans: list[Span]) -> Record:
    """A `Record` of spans that were not grouped as they were read (the careful and Jaeger paths)."""
    record = spans if spans.__class__ is Record else Record(spans)
    traces: dict[str, list[Span]] = {}
    for span in spans:
        group = traces.get(span.trace_id)
        if group is None:
            group = traces[span.trace_id] = []
        group.append(span)
    record.traces = traces
    record.rooted = [span.trace_id for span in spans if not span.parent_id]
    record.line = spans[0].source[1] if spans and spans[0].source else 0
    return record


def read_record(raw: bytes, number: int, path: str, report: InputReport,
                native: NativeRead | None = None) -> list[Span]:
    """Spans of one record (a JSON Lines line or a decompressed frame); `native`: the native
    reader's `read` (`native_reader`), else None (the Python paths)."""
    report.bytes_read += len(raw)
    spans = _read_native(native, raw, path, number) if native is not None else None
    if spans is None:
        try:
            export = _decode_export(raw)
            if len(raw) > otlp_values.MAX_ATTRIBUTE_CHARS:  # a decoded string is never longer than the record's bytes
                _refuse_long_strings(export)
            spans = _typed_spans(export, path, number, report)
        except _NOT_TYPED:  # not the common shape (or a `BAD_RECORD`): the orjson path reads or reports it
            return _read_record_orjson(raw, number, path, report)
    report.spans += len(spans)
    if not raw.isascii():  # the typed path skips the fields it ignores (`Raw`) without checking them
        bad_at = _first_bad_utf8(raw)
        if bad_at >= 0:
            report.bad(number, f"not valid UTF-8 at byte {bad_at}, in a field the analyzer does not read")
    return spans


def _read_native(native: NativeRead, raw: bytes, path: str, number: int) -> Record | None:
    """The native reader's `Record` of the record (what `_typed_spans` makes of it), or None where
    it declines (any shape it does not read exactly as the typed path does), or fails: fail-open,
    the Python paths then read the record."""
    if len(raw) > otlp_values.MAX_ATTRIBUTE_CHARS:  # it does not check the length of strings
        return None
    try:
        return native(raw, path, number)
    except Exception:
        return None


def _read_record_orjson(raw: bytes, number: int, path: str, report: InputReport) -> list[Span]:
    """`read_record` for any record: orjson, then `spans_of_doc`."""
    if raw.startswith(BAD_RECORD):
        report.bad(number, raw[len(BAD_RECORD):].decode("utf-8", "replace"))
        return []
    try:
        doc = _loads(raw)
    except _JSONDecodeError as exc:
        if not raw.strip():
            return []
        message = str(exc)
        if "UTF-8" not in message:
            report.bad(number, f"invalid JSON ({_describe_break(raw, message)}): {message}")
            return []
        try:
            doc = _loads(raw.decode("utf-8", "replace").encode("utf-8", "replace"))
        except _JSONDecodeError as again:
            report.bad(number, f"not valid UTF-8 and invalid JSON: {again}")
            return []
        report.bad(number, f"not valid UTF-8 at byte {_first_bad_utf8(raw)}: read with U+FFFD replacements")
    return spans_of_doc(doc, path, number, report)


def _describe_break(raw: bytes, message: str) -> str:
    return "truncated line" if "end of data" in message or "EOF" in message else f"{len(raw)} bytes"


def _first_bad_utf8(raw: bytes) -> int:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return -1


def spans_of_doc(doc: Any, path: str, line: int, report: InputReport) -> list[Span]:
    """Spans of one parsed document, whatever known wrapper it has."""
    if isinstance(doc, dict):
        if otlp_logs.is_logs(doc):  # a logs export (the Collector's file exporter writes both)
            return otlp_logs.spans_of_logs(doc, path, line, report)
        resource_spans = doc.get("resourceSpans")
        if resource_spans is None:
            resource_spans = doc.get("resource_spans", doc.get("batches"))
        if resource_spans is None:
            inner = doc.get("result", doc.get("trace"))
            if isinstance(inner, dict):  # Jaeger v2 /api/v3/traces, Tempo /api/v2/traces/<id>
                return spans_of_doc(inner, path, line, report)
            if "data" in doc or ("traceID" in doc and "spans" in doc):
                from otel_agent_trace.analyzer.readers.jaeger_json import spans_of_jaeger

                return list(spans_of_jaeger(doc, path, line, report))
            if not doc:  # `{}`: an empty export (Tempo answers a missing trace so)
                return []
        if isinstance(resource_spans, list):
            return _resource_spans(resource_spans, path, line, report)
    elif isinstance(doc, list) and doc and all(isinstance(d, dict) for d in doc):
        out = []
        for item in doc:  # an array of exports or of Jaeger traces
            out.extend(spans_of_doc(item, path, line, report))
        return out
    report.bad(line, "not an OTLP trace export (no resourceSpans list)")
    return []


def _resource_spans(resource_spans: list, path: str, line: int, report: InputReport) -> list[Span]:
    source = (path, line)
    out: list[Span] = []
    append = out.append
    for rs in resource_spans:
        if not isinstance(rs, dict):
            report.bad(line, "resourceSpans entry is not an object")
            continue
        resource = attributes_careful((rs.get("resource") or {}).get("attributes") if isinstance(rs.get("resource"), dict)
                                       else None, line, report, "resource")
        scope_spans = rs.get("scopeSpans")
        if scope_spans is None:
            scope_spans = rs.get("scope_spans", rs.get("instrumentationLibrarySpans"))
        if not isinstance(scope_spans, list):
            if scope_spans is not None:
                report.bad(line, f"scopeSpans is {type(scope_spans).__name__}, not a list")
            continue
        for ss in scope_spans:
            spans = ss.get("spans") if isinstance(ss, dict) else None
            if not isinstance(spans, list):
                if spans is not None or not isinstance(ss, dict):
                    report.bad(line, "scopeSpans entry without a spans list")
                continue
            scope = ss.get("scope", ss.get("instrumentationLibrary"))
            scope = scope.get("name") if isinstance(scope, dict) else None
            scope = scope if isinstance(scope, str) else ""
            for raw in spans:
                span = _span_careful(raw, resource, line, report)
                if span is not None:
                    span.source = source
                    span.scope = scope
                    append(span)
    report.spans += len(out)
    return out


def _typed_spans(export: otlp_typed.Export, path: str, line: int, report: InputReport) -> Record:
    """`_resource_spans` for a record decoded into `otlp_typed` Structs (raises ValueError or
    TypeError where the orjson path would report something: it reads the record), grouped by trace
    on the way (`Record`). Strings are not checked against `MAX_ATTRIBUTE_CHARS` here
    (`read_record` does it for records that long)."""
    source = (path, line)
    out = Record()
    append = out.append
    here: dict[str, tuple[str, list[Span]]] = {}  # trace id as read -> (lowercase hex, its spans here)
    here_get = here.get
    rooted = []
    for rs in export.resourceSpans:
        resource = _attributes_typed(rs.resource.attributes) if rs.resource is not None else {}
        for ss in rs.scopeSpans:
            if ss.scope is not None:
                scope = ss.scope.name
            elif ss.instrumentationLibrary is None:
                scope = ""
            else:  # the old name of `scope`: the orjson path reads it
                raise ValueError("instrumentationLibrary")
            for raw in ss.spans:
                trace_id = raw.traceId
                entry = here_get(trace_id)
                if entry is None:
                    entry = here[trace_id] = (_traces_get(trace_id) or _hex(trace_id, 32, _traces), [])
                trace_id, group = entry
                parent = raw.parentSpanId
                if parent:
                    parent = _spans_get(parent) or _hex(parent, 16, _spans)
                else:
                    parent = None
                    rooted.append(trace_id)
                status = raw.status
                events = raw.events
                links = raw.links
                span = Span(
                    trace_id, raw.spanId, parent, raw.name,  # span ids: see `_lower_hex_ids`
                    raw.startTimeUnixNano, raw.endTimeUnixNano,  # see `_times`
                    0 if status is None else status.code, "" if status is None else status.message,
                    _attributes_typed(raw.attributes),
                    [Event(e.name, int(e.timeUnixNano or 0), _attributes_typed(e.attributes)) for e in events]
                    if events else _NONE,
                    [Link(_traces_get(k.traceId) or _hex(k.traceId, 32, _traces),
                          _spans_get(k.spanId) or _hex(k.spanId, 16, _spans), _attributes_typed(k.attributes))
                     for k in links]
                    if links else _NONE,
                    resource, source, raw.kind, scope,
                )
                append(span)
                group.append(span)
    _lower_hex_ids(out)
    _times(out)
    traces = out.traces = dict(here.values())
    if len(traces) != len(here):  # one trace id written in two cases: group span by span
        return _by_trace(out)
    out.line = line
    out.rooted = rooted
    return out


def _lower_hex_ids(spans: list[Span]) -> None:
    """`_hex_fresh` for the span ids of a record (16 characters each, `otlp_typed`), in one go:
    a call per span costs more than the check. Raises ValueError unless all are hex digits (the
    orjson path reads base64 ids and reports bad ones)."""
    ids = "".join([span.span_id for span in spans])
    if len(_fromhex(ids)) << 1 != len(ids):  # fromhex skips whitespace
        raise ValueError("span id")
    if ids != ids.lower():
        for span in spans:
            span.span_id = span.span_id.lower()


def _times(spans: list[Span]) -> None:
    """Start and end times of a record's spans as read (int64 as JSON strings, or numbers) made
    ints, all in one parse: `int()` of a 19-digit string costs ~3 times its share of one
    `[t1,t2,...]` parse. A batch that does not parse as exactly one JSON integer per value (a
    number, an empty or odd string) is read value by value (`int()`, raising ValueError as the
    orjson path reports)."""
    starts = [span.start_ns for span in spans]
    ends = [span.end_ns for span in spans]
    try:
        values = _decode_ints("[%s,%s]" % (",".join(starts), ",".join(ends))) if spans else []
    except (TypeError, otlp_typed.DecodeError):  # TypeError: a number among the strings
        values = ()
    if len(values) != len(spans) << 1:  # a comma inside a string adds a value
        values = [int(value or 0) for value in starts] + [int(value or 0) for value in ends]
    for span, start, end in zip(spans, values, values[len(spans):]):
        span.start_ns = start
        span.end_ns = end


def _refuse_long_strings(export: otlp_typed.Export) -> None:
    """Raises ValueError if an attribute is a string over `MAX_ATTRIBUTE_CHARS` (the orjson
    path truncates and reports it; `_attributes_typed` does not check)."""
    for rs in export.resourceSpans:
        lists = [rs.resource.attributes] if rs.resource is not None else []
        for ss in rs.scopeSpans:
            for span in ss.spans:
                lists.append(span.attributes)
                lists.extend([item.attributes for item in span.events])
                lists.extend([item.attributes for item in span.links])
        for items in lists:
            for item in items:
                text = item.value.stringValue
                if text is not None and len(text) > otlp_values.MAX_ATTRIBUTE_CHARS:
                    raise ValueError("long string")


def _attributes_typed(items: list[otlp_typed.KeyValue]) -> dict[str, Any]:
    """Attributes of decoded KeyValues. A valid AnyValue has exactly one field set: the checks of
    the other fields stand for the careful path's."""
    out = {}
    for item in items:
        value = item.value
        text = value.stringValue
        if text is not None:  # strings, int64-as-string and arrays of strings inline (most values)
            if value.intValue is None and value.doubleValue is None and value.boolValue is None and value.arrayValue is None:
                out[item.key] = text
                continue
        elif value.doubleValue is None and value.boolValue is None:
            number = value.intValue
            array = value.arrayValue
            if array is None:
                if number is not None:
                    out[item.key] = int(number)
                    continue
            elif number is None:
                strings = []
                for element in array.values:
                    text = element.stringValue
                    if (text is None or element.intValue is not None or element.doubleValue is not None
                            or element.boolValue is not None):
                        break
                    strings.append(text)
                else:
                    out[item.key] = strings
                    continue
                out[item.key] = [_value_typed(element, None) for element in array.values]
                continue
        out[item.key] = _value_typed(value, value.arrayValue)
    return out


def _value_typed(value: otlp_typed.Scalar, array: otlp_typed.Array | None) -> Any:
    """A decoded AnyValue's plain value (`array`: its arrayValue; array elements have none):
    raises ValueError unless exactly one field is set, or on a string the orjson path truncates."""
    text, number, real, flag = value.stringValue, value.intValue, value.doubleValue, value.boolValue
    if array is None:
        if text is not None:
            if number is None and real is None and flag is None and len(text) <= otlp_values.MAX_ATTRIBUTE_CHARS:
                return text
        elif number is not None:
            if real is None and flag is None:
                return int(number)
        elif real is not None:
            if flag is None:
                return real
        elif flag is not None:
            return flag
    elif text is None and number is None and real is None and flag is None:
        return [_value_typed(element, None) for element in array.values]
    raise ValueError("AnyValue")


def _hex(value: Any, chars: int, known: dict[Any, str]) -> str:
    """`_hex_fresh`, remembered in `known` (one dict per id size, so a hit needs no check and
    costs one `get` in `_typed_spans`): a batch names each trace id and parent id many times."""
    text = _hex_fresh(value, chars)
    if len(known) > 1 << 14:
        known.clear()
    known[value] = text
    return text


def _hex_fresh(value: Any, chars: int) -> str:
    """Lowercase hex of an id (span ids are unique: not worth remembering)."""
    if value.__class__ is str and len(value) == chars:
        try:  # bytes.fromhex: hex digits (and spaces, which the length check rules out), in C
            if len(_fromhex(value)) << 1 == chars:
                return value.lower()
        except ValueError:
            pass
    return hex_id(value, chars // 2)


_traces: dict[Any, str] = {}  # trace id as read -> lowercase hex (bounded)
_traces_get = _traces.get
_spans: dict[Any, str] = {}  # span id as read (parents, links) -> lowercase hex (bounded)
_spans_get = _spans.get


_fromhex = bytes.fromhex


class _NoItems(list):
    """The events or links of a span that has none, one list shared by all such spans of the typed
    path (two fewer objects per span): it equals `[]`, and refuses to grow (the analysis only reads
    `Span.events` and `Span.links`; code that adds to them must give the span a list of its own)."""

    __slots__ = ()

    def _refuse(self, *args: Any) -> None:
        raise TypeError("a span's shared empty events/links list: give the span a new list")

    append = extend = insert = __setitem__ = __iadd__ = _refuse  # type: ignore[assignment]


_NONE = _NoItems()


def native_reader(enabled: bool = True) -> NativeRead | None:
    """`read(raw, path, line)` of the native reader (native/: an optional Rust extension that reads
    the common shape straight into a `Record`, about twice as fast as the typed path), or None when it was
    not built, or `enabled` is false (`AnalyzerSettings.native`: `OTEL_AGENT_TRACE_NATIVE=0`)."""
    if not enabled:
        return None
    try:
        from otel_agent_trace.analyzer.readers import _native  # type: ignore[attr-defined]

        return _native.Reader(Span, Event, Link, Record, _NONE).read
    except Exception:  # not built (ImportError), or built from other sources: the Python paths read
        return None


# --- the careful path: say what is wrong, keep what is usable (values: otlp_values.py) --------
def _span_careful(raw: Any, resource: dict[str, Any], line: int, report: InputReport) -> Span | None:
    if not isinstance(raw, dict):
        report.bad(line, f"span is {type(raw).__name__}, not an object; dropped")
        return None
    try:
        trace_id = hex_id(raw.get("traceId", raw.get("trace_id")), 16)
        span_id = hex_id(raw.get("spanId", raw.get("span_id")), 8)
        if not trace_id or not span_id:
            raise ValueError("missing traceId or spanId")
    except (TypeError, ValueError) as exc:
        report.bad(line, f"span dropped: {exc}")
        return None
    where = f"span {span_id}"
    try:
        parent = hex_id(raw.get("parentSpanId", raw.get("parent_span_id")), 8) or None
    except (TypeError, ValueError) as exc:
        report.bad(line, f"{where}: parentSpanId unreadable ({exc}); read as a root")
        parent = None
    start = int_field(raw, ("startTimeUnixNano", "start_time_unix_nano"), line, report, where)
    end = int_field(raw, ("endTimeUnixNano", "end_time_unix_nano"), line, report, where)
    status = raw.get("status") if isinstance(raw.get("status"), dict) else {}
    if raw.get("status") not in (None, {}) and not isinstance(raw.get("status"), dict):
        report.bad(line, f"{where}: status is {type(raw.get('status')).__name__}; read as unset")
    code = enum_field(status.get("code", 0), _STATUS_NAMES, 2, line, report, where, "status code")
    kind = enum_field(raw.get("kind", 0), _KIND_NAMES, 5, line, report, where, "span kind")
    events = []
    for e in raw.get("events") or () if isinstance(raw.get("events"), list) else ():
        if not isinstance(e, dict):
            report.bad(line, f"{where}: event is not an object; dropped")
            continue
        events.append(Event(str(e.get("name", "")), int_field(e, ("timeUnixNano",), line, report, where),
                            attributes_careful(e.get("attributes"), line, report, f"{where} event")))
    links = []
    for k in raw.get("links") or () if isinstance(raw.get("links"), list) else ():
        try:
            links.append(Link(hex_id(k.get("traceId"), 16), hex_id(k.get("spanId"), 8),
                              attributes_careful(k.get("attributes"), line, report, f"{where} link")))
        except (TypeError, ValueError, AttributeError) as exc:
            report.bad(line, f"{where}: link dropped: {exc}")
    return Span(trace_id, span_id, parent, str(raw.get("name", "")), start, end, code,
                str(status.get("message") or ""),
                attributes_careful(raw.get("attributes"), line, report, where), events, links, resource, None, kind)
