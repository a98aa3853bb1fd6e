"""The msgspec typed fast path reads exactly what the orjson path reads (spans and reported
problems), for well-formed records and for every oddity that must fall back."""

from __future__ import annotations

import json

import pytest
from inputs_support import doc, failing_run, line, span

from otel_agent_trace.analyzer.readers import otlp_json
from otel_agent_trace.analyzer.spans import InputReport

pytestmark = pytest.mark.skipif(otlp_json._typed_decode is None, reason="msgspec not installed")
T = f"{3:032x}"


def _odd_lines() -> list[bytes]:
    base = span(T, "00000003000000a1", None, "odd", 1, {"s": "x", "n": 3, "f": 1.5, "b": True, "l": ["a", 2]})
    variants = []
    for attr in ({"key": "two", "value": {"stringValue": "a", "intValue": "1"}},
                 {"key": "kv", "value": {"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}}},
                 {"key": "bytes", "value": {"bytesValue": "AAE="}},
                 {"key": "nan", "value": {"doubleValue": "NaN"}},
                 {"key": "intf", "value": {"intValue": 1.0}},
                 {"key": "int_bad", "value": {"intValue": "abc"}},
                 {"key": "empty", "value": {}},
                 {"key": "unknown", "value": {"fooValue": 1}},
                 {"key": 5, "value": {"stringValue": "int key"}},
                 {"key": "dint", "value": {"doubleValue": 2}},
                 {"key": "arr_extra", "value": {"arrayValue": {"values": [{"stringValue": "a"}], "x": 1}}}):
        variants.append(dict(base, attributes=base["attributes"] + [attr]))
    snake = {"trace_id": T, "span_id": "00000003000000b1", "name": "snake", "start_time_unix_nano": "5",
             "end_time_unix_nano": "6"}
    no_times = {k: v for k, v in base.items() if "Time" not in k}
    lines = [line(failing_run(0)).encode(), line(variants).encode(), line([snake]).encode(), line([no_times]).encode(),
             line([dict(base, status={"code": "STATUS_CODE_ERROR", "message": "boom"}, kind="SPAN_KIND_CLIENT")]).encode(),
             line([dict(base, spanId="AAAAAwAAAKE=", traceId="AAAAAAAAAAAAAAAAAAAAAw==")]).encode(),
             line([dict(base, events=[{"name": "exception", "timeUnixNano": "7",
                                       "attributes": [{"key": "exception.type", "value": {"stringValue": "E"}}]}],
                        links=[{"traceId": T, "spanId": "00000003000000a9"}])]).encode(),
             json.dumps({"resource_spans": doc([base])["resourceSpans"]}).encode(),
             json.dumps({"result": doc([base])}).encode(),
             line([base]).encode().replace(b'"odd"', b'"caf\xe9"'),
             b'{"resourceSpans": [{"scopeSpans": [{"spans": [42, {"traceId": 5}]}]}]}',
             b'{"resourceSpans": [{"resource": {"attributes": {"x": 1}}, "scopeSpans": [{"spans": []}]}]}']
    return [raw if raw.endswith(b"\n") else raw + b"\n" for raw in lines]


def _read(path: str) -> tuple[list, InputReport]:
    report = InputReport(path)
    return list(otlp_json.read_file(path, report)), report


def test_typed_path_reads_what_the_orjson_path_reads(tmp_path, monkeypatch):
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b"".join(_odd_lines()))
    typed_spans, typed_report = _read(str(path))
    monkeypatch.setattr(otlp_json, "_typed_decode", None)
    plain_spans, plain_report = _read(str(path))
    assert repr(typed_spans) == repr(plain_spans)  # repr: NaN is never equal to itself
    assert typed_report == plain_report
    assert typed_report.bad_lines  # the odd records were reported, by the orjson path
