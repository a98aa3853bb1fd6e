"""The reader's typed path (msgspec Structs, `otlp_typed`) and its orjson path read every record
alike: the same spans, value types included, and the same reports. The typed path takes only the
common shape and hands the rest to the orjson path, so generated records mix well-formed spans
with odd values (wrong types, enum names, snake_case, base64 ids, several AnyValue kinds ...).
The generated records are read by every path in one test each (test_reader_native.py:
`test_odd_records_read_alike_by_every_path`, `test_well_formed_records_are_read_by_every_path`):
the strategies are here, the hand-written edge cases below."""

from __future__ import annotations

import base64
import copy

import pytest
from hypothesis import strategies as st

from otel_agent_trace.analyzer.readers import otlp_json, otlp_values
from otel_agent_trace.analyzer.spans import InputReport

_TRACE = "5464ecc280b0c08bc77024208aa4248c"
_SPAN = "da45e18ac2216b02"


def _ids(size: int) -> st.SearchStrategy:
    raw = st.binary(min_size=size, max_size=size)
    return st.one_of(raw.map(bytes.hex), raw.map(bytes.hex), raw.map(lambda b: b.hex().upper()),
                     raw.map(lambda b: base64.b64encode(b).decode()))


# well-formed records (the typed path's shape) ...
_short = st.text(max_size=8)
_text = st.one_of(_short, _short, _short, st.text(min_size=9, max_size=12))  # MAX_ATTRIBUTE_CHARS is 8 here
_time = st.integers(0, 2**63 - 1).map(str)
_scalar = st.one_of(
    st.builds(lambda s: {"stringValue": s}, _text),
    st.builds(lambda n: {"intValue": str(n)}, st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda n: {"intValue": n}, st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda b: {"boolValue": b}, st.booleans()),
    st.builds(lambda x: {"doubleValue": x}, st.floats(allow_nan=False, allow_infinity=False)),
    st.builds(lambda n: {"doubleValue": n}, st.integers(-(2**70), 2**70)),
)
_value = st.one_of(_scalar, _scalar, st.builds(lambda v: {"arrayValue": {"values": v}}, st.one_of(
    st.lists(_scalar, max_size=3), st.lists(st.builds(lambda s: {"stringValue": s}, _text), max_size=3))),
    st.just({"arrayValue": {}}))
_attributes = st.lists(st.fixed_dictionaries({"key": st.sampled_from("abc"), "value": _value}), max_size=4)
_event = st.fixed_dictionaries({}, optional={"name": _text, "timeUnixNano": _time, "attributes": _attributes})
_link = st.fixed_dictionaries({"traceId": _ids(16), "spanId": _ids(8)},
                              optional={"attributes": _attributes, "traceState": _text})
_span = st.fixed_dictionaries(
    {"traceId": st.one_of(st.just(_TRACE), _ids(16)), "spanId": _ids(8)},
    optional={"parentSpanId": st.one_of(_ids(8), st.just("")), "name": _text, "kind": st.integers(0, 5),
              "startTimeUnixNano": _time, "endTimeUnixNano": _time, "attributes": _attributes,
              "events": st.lists(_event, max_size=2), "links": st.lists(_link, max_size=2),
              "status": st.fixed_dictionaries({}, optional={"code": st.integers(0, 2), "message": _text}),
              "flags": st.integers(0, 512), "traceState": _text, "droppedAttributesCount": st.integers(0, 3)})
_scope_spans = st.fixed_dictionaries({"spans": st.lists(_span, max_size=4)}, optional={
    "scope": st.just({"name": "s", "attributes": [{"key": "k", "value": {"stringValue": "v"}}]}), "schemaUrl": _text})
_resource_spans = st.fixed_dictionaries({"scopeSpans": st.lists(_scope_spans, max_size=2)}, optional={
    "resource": st.fixed_dictionaries({}, optional={"attributes": _attributes, "droppedAttributesCount": st.just(0)}),
    "schemaUrl": _text})
_export = st.fixed_dictionaries({"resourceSpans": st.lists(_resource_spans, min_size=1, max_size=2)})

# ... and odd values to put anywhere in them
_ODD = st.one_of(st.sampled_from([
    None, True, False, 1.5, -1, 0, 6, 2**64, -(2**64), "", "x", [], {}, "1e3", "3", " 5", "007", "-0", "123456789",
    "1,2", " 7\t", "[1]", "1.0", "9223372036854775808", "\u0661",  # odd times too: `_times` parses them in one batch
    "SPAN_KIND_SERVER", "STATUS_CODE_ERROR", "NaN", "zz" * 8, "ab", [{}], [None],
    {"stringValue": "a", "intValue": "1"}, {"boolValue": True, "doubleValue": 1.0}, {"weirdValue": 1},
    {"stringValue": None}, {"bytesValue": "AAE="}, {"kvlistValue": {"values": [{"key": "k", "value": {"intValue": "3"}}]}},
    {"arrayValue": {"values": [{"arrayValue": {"values": [{"stringValue": "nested"}]}}]}},
    {"arrayValue": None}, {"arrayValue": {"values": None}}, {"arrayValue": []}, {"doubleValue": "Infinity"},
    {"key": "a"}, {"value": {"stringValue": "a"}}]), _scalar, _value)
_RENAMES = {"traceId": "trace_id", "spanId": "span_id", "parentSpanId": "parent_span_id",
            "startTimeUnixNano": "start_time_unix_nano", "resourceSpans": "resource_spans", "scopeSpans": "scope_spans",
            "stringValue": "string_value", "name": "unknownField", "scope": "instrumentationLibrary"}


def _spots(node, out):
    """Every (container, key) of a JSON value."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, inner in items:
        out.append((node, key))
        _spots(inner, out)
    return out


@st.composite
def _odd_exports(draw):
    """A well-formed export with up to three odd spots: a value replaced, a key renamed or dropped."""
    doc = copy.deepcopy(draw(_export))  # `st.just` values are shared between examples
    for _ in range(draw(st.integers(0, 3))):
        spots = _spots(doc, [])
        if not spots:
            break
        node, key = draw(st.sampled_from(spots))
        how = draw(st.sampled_from(["value", "value", "rename", "drop"]))
        if how == "value":
            node[key] = copy.deepcopy(draw(_ODD))  # later spots may be inside it
        elif isinstance(node, dict) and how == "rename":
            node[_RENAMES.get(key, key + "X")] = node.pop(key)
        elif isinstance(node, dict):
            del node[key]
    if draw(st.integers(0, 9)) == 0:
        doc = draw(st.sampled_from([{"result": doc}, [doc, doc], {"batches": doc.get("resourceSpans")}]))
    return doc


def _both(raw: bytes) -> tuple[str, str]:
    """What each path reads from one record: spans and reports, as reprs (1, 1.0 and True differ)."""
    typed, plain = InputReport("f"), InputReport("f")
    spans = otlp_json.read_record(raw, 7, "f", typed)
    plain.bytes_read += len(raw)
    spans_plain = otlp_json._read_record_orjson(raw, 7, "f", plain)
    return repr((spans, typed)), repr((spans_plain, plain))


def _typed_reads(raw: bytes) -> bool:
    try:
        otlp_json._typed_spans(otlp_json._decode_export(raw), "f", 7, InputReport("f"))
    except otlp_json._NOT_TYPED:
        return False
    return True


@pytest.fixture(autouse=True)
def _short_max(monkeypatch):
    monkeypatch.setattr(otlp_values, "MAX_ATTRIBUTE_CHARS", 8)  # long strings without megabytes


_ONE = ('{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%s","spanId":"%s","startTimeUnixNano":"5",'
        '"attributes":[{"key":"a","value":%s}]}]}]}]}')


@pytest.mark.parametrize("value", [
    '{"stringValue":"a","stringValue":"b"}', '{"stringValue":"a","intValue":"1"}', '{"intValue":18446744073709551615}',
    '{"intValue":18446744073709551616}', '{"intValue":-9223372036854775809}', '{"doubleValue":-0}',
    '{"doubleValue":12345678901234567890123}', '{"doubleValue":1e400}', '{"doubleValue":NaN}', '{"stringValue":"\\ud800"}',
    '{"stringValue":"\\ud83d\\ude00"}', '{"stringValue":"\udcff"}', '{"stringValue":"123456789"}', '{"intValue":"1_0"}',
    '{"arrayValue":{"values":[{"stringValue":"123456789"}]}}', '{"arrayValue":{"values":[{"intValue":"1"},{}]}}',
    '{"arrayValue":{"values":[{"stringValue":"a"},{"doubleValue":2}]}}', '{"bytesValue":"AAE="}', ' {"stringValue" : "a"} ',
])
def test_odd_records_read_alike(value):
    raw = (_ONE % (_TRACE, _SPAN, value)).encode("utf-8", "surrogateescape")
    typed, plain = _both(raw)
    assert typed == plain


@pytest.mark.parametrize("span_ids", [
    ["DA45E18AC2216B02"], [_SPAN, "Da45e18ac2216b0F"], ["0123456789012345", _SPAN], ["0123456789012345"],
    [_SPAN, "da45e18ac2216b0g"], [_SPAN, "da45e18a c2216b0"], ["da45e18ac2216b0\u0663"], ["da45e18ac2216b0\u00e9"],
    [_SPAN, "2kXhisIhawI="], [_SPAN, "2kXhisIhawIA2kXh"], [_SPAN, ""], [_SPAN, "da45e18ac2216b02a"], [_SPAN, _SPAN],
])
def test_span_ids_read_alike(span_ids):
    """Span ids are checked per record (`_lower_hex_ids`): one odd id sends the record to the orjson path."""
    spans = ",".join('{"traceId":"%s","spanId":"%s","startTimeUnixNano":"5"}' % (_TRACE, i) for i in span_ids)
    raw = ('{"resourceSpans":[{"scopeSpans":[{"spans":[%s]}]}]}' % spans).encode()
    typed, plain = _both(raw)
    assert typed == plain


@pytest.mark.parametrize("times", [
    ['"5"', '"6"'], ['"1,2"', '"3"'], ['"1,2"', '""'], ['" 7\\t"', '"8"'], ['""', '"8"'], ['5', '"8"'], ['"007"', '"8"'],
    ['"1e3"', '"8"'], ['"1.0"', '"8"'], ['"9223372036854775808"', '"99999999999999999999999"'], ['"-0"', '"-5"'],
    ['"[1]"', '"8"'], ['"1]"', '"[2"'], ['"\\u0661"', '"8"'], ['"1_0"', '"8"'], ['"8"', '"1 2"'],
])
def test_times_read_alike(times):
    """A record's start and end times are parsed in one batch (`_times`): one odd value must not shift the others."""
    spans = ",".join('{"traceId":"%s","spanId":"%s","startTimeUnixNano":%s,"endTimeUnixNano":%s}' % (_TRACE, span, *t)
                     for span, t in [(_SPAN, times), ("0123456789abcdef", ['"11"', '"12"']), ("0123456789abcdee", times[::-1])])
    raw = ('{"resourceSpans":[{"scopeSpans":[{"spans":[%s]}]}]}' % spans).encode()
    typed, plain = _both(raw)
    assert typed == plain


@pytest.mark.parametrize("scope", ['"instrumentationLibrary":{"name":"lib"}',
                                   '"scope":{"name":"s"},"instrumentationLibrary":{"name":"lib"}'])
def test_old_scope_name_read_alike(scope):
    """`instrumentationLibrary`, the old name of `scope`, is read when `scope` is absent."""
    raw = ('{"resourceSpans":[{"scopeSpans":[{%s,"spans":[{"traceId":"%s","spanId":"%s"}]}]}]}'
           % (scope, _TRACE, _SPAN)).encode()
    typed, plain = _both(raw)
    assert typed == plain


@pytest.mark.parametrize("raw", [b"", b"\n", b"\x00bad-record:gone", b"\xef\xbb\xbf{}", b"{}", b"[]", b"null",
                                 b'{"resourceSpans":[]} x', b'{"resourceSpans":[]}\r\n', b'{"batches":[]}'])
def test_non_records_read_alike(raw):
    typed, plain = _both(raw)
    assert typed == plain
