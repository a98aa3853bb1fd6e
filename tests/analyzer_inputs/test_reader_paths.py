"""The reader's fast path (well-formed spans) and careful path (everything else) agree: whatever
the fast path accepts, it reads as the careful path does, with nothing to report."""

from __future__ import annotations

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


@settings(max_examples=400, deadline=None)
@given(_items)
def test_fast_attributes_are_the_careful_ones_or_raise(raw):
    report = InputReport("x")
    careful = otlp_json._attributes_careful(raw, 1, report, "span")
    try:
        fast = otlp_json.attributes_of(raw)
    except Exception:  # noqa: BLE001 - the careful path takes over
        return
    assert fast == careful
    assert [type(v) for v in fast.values()] == [type(v) for v in careful.values()]
    assert not report.bad_lines


def test_arrays_of_strings_fast():
    raw = [{"key": "one", "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}}},
           {"key": "two", "value": {"arrayValue": {"values": [{"stringValue": "a"}, {"stringValue": "b"}]}}},
           {"key": "none", "value": {"arrayValue": {}}}]
    assert otlp_json.attributes_of(raw) == {"one": ["stop"], "two": ["a", "b"], "none": []}
