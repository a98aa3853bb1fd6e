"""The reader's two paths agree on attribute values of every shape: the typed path (msgspec
Structs, the common shape) reads a record as the careful orjson path does, reports included;
whatever the typed path refuses, the careful path reads or reports (issue 16 §4: the third,
"fast orjson", path was folded into these two)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_agent_trace.analyzer.readers import otlp_json
from otel_agent_trace.analyzer.spans import InputReport

_scalars = st.one_of(
    st.builds(lambda s: {"stringValue": s}, st.text(max_size=5)),
    st.builds(lambda n: {"intValue": str(n)}, st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda n: {"intValue": n}, st.integers(-5, 5)),
    st.builds(lambda b: {"boolValue": b}, st.booleans()),
    st.builds(lambda x: {"doubleValue": x}, st.floats(allow_nan=False)),
    st.just({}),
    st.just({"stringValue": "a", "intValue": "1"}),  # two kinds: wrong
    st.just({"stringValue": 5}),
    st.just({"weirdValue": 1}),
    st.just("not an object"),
    st.just(None),
)
_arrays = st.builds(lambda values: {"arrayValue": {"values": values}},
                    st.one_of(st.lists(_scalars, max_size=4), st.just([]), st.just({}), st.just("ab"), st.just(None)))
_values = st.one_of(_scalars, _arrays, st.just({"arrayValue": {}}), st.just({"arrayValue": []}))
_items = st.lists(st.builds(lambda k, v: {"key": k, "value": v}, st.sampled_from("abcd"), _values), max_size=6)


def _record(attributes: list) -> bytes:
    span = {"traceId": "0" * 31 + "1", "spanId": "0" * 15 + "2", "name": "s", "startTimeUnixNano": "1",
            "endTimeUnixNano": "2", "attributes": attributes}
    return json.dumps({"resourceSpans": [{"resource": {"attributes": attributes},
                                          "scopeSpans": [{"spans": [span]}]}]}).encode()


@settings(max_examples=400, deadline=None)
@given(_items)
def test_typed_attributes_are_the_careful_ones(raw):
    record = _record(raw)
    typed, careful = InputReport("x"), InputReport("x")
    spans = otlp_json.read_record(record, 1, "x", typed)
    careful.bytes_read += len(record)
    spans_careful = otlp_json._read_record_orjson(record, 1, "x", careful)
    assert repr((spans, typed)) == repr((spans_careful, careful))


def test_arrays_of_strings():
    raw = [{"key": "one", "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}}},
           {"key": "two", "value": {"arrayValue": {"values": [{"stringValue": "a"}, {"stringValue": "b"}]}}},
           {"key": "none", "value": {"arrayValue": {}}}]
    [span] = otlp_json.read_record(_record(raw), 1, "x", InputReport("x"))
    assert span.attributes == {"one": ["stop"], "two": ["a", "b"], "none": []}
