"""Inputs from files: JSON Lines spread over lines and rotated files, gzip, zstd (plain and the
Collector's length-prefixed frames), single documents, directories and globs, Jaeger JSON, the
backends' OTLP wrappers, and streaming with spills (same answer as in memory)."""

from __future__ import annotations

import gzip
import json

import pytest
from inputs_support import doc, failing_run, ids, line

from otel_agent_trace.analyzer.analysis import analyze
from otel_agent_trace.cli import main as cli_main

zstandard = pytest.importorskip("zstandard")


def origins(analysis) -> dict[str, str | None]:
    return {f.run.trace_id: (f.origin.span_id if f.origin else None) for f in analysis.findings}


def expected(n: int) -> dict[str, str]:
    return {f"{k + 1:032x}": ids(k)["tool"] for k in range(n)}


def spread(n: int) -> list[str]:
    """n runs, their spans interleaved one span per line (a trace over many lines)."""
    runs = [failing_run(k) for k in range(n)]
    return [line([r[i]]) for i in range(4) for r in runs]


def test_trace_spread_over_lines_and_rotated_files(tmp_path):
    lines = spread(6)
    (tmp_path / "traces-2026-11-30T10-00-00.000.json").write_text("".join(lines[:9]))
    (tmp_path / "traces.json").write_text("".join(lines[9:]))
    analysis = analyze([str(tmp_path)])
    assert origins(analysis) == expected(6)
    assert analysis.bad_lines == 0 and all(f.failed for f in analysis.findings)


def test_gzip_zstd_stream_and_collector_frames(tmp_path):
    lines = spread(3)
    with gzip.open(tmp_path / "a.jsonl.gz", "wt") as handle:
        handle.write("".join(lines[:4]))
    (tmp_path / "b.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress("".join(lines[4:8]).encode()))
    framed = b""
    for text in lines[8:]:
        frame = zstandard.ZstdCompressor().compress(text.encode())
        framed += len(frame).to_bytes(4, "big") + frame
    (tmp_path / "c").write_bytes(framed)  # no suffix: recognised by magic bytes
    analysis = analyze([str(tmp_path / "*")])
    assert [i.spans for i in analysis.inputs] == [4, 4, 4]
    assert origins(analysis) == expected(3)


def test_truncated_compressed_inputs_keep_what_was_read(tmp_path):
    data = gzip.compress("".join(spread(2)).encode())
    (tmp_path / "t.jsonl.gz").write_bytes(data[: len(data) // 2])
    framed = zstandard.ZstdCompressor().compress(line(failing_run(0)).encode())
    (tmp_path / "f.zst").write_bytes(len(framed).to_bytes(4, "big") + framed + (999).to_bytes(4, "big") + b"\x28\xb5\x2f\xfd")
    analysis = analyze([str(tmp_path / "t.jsonl.gz"), str(tmp_path / "f.zst")])
    gz, frames = analysis.inputs
    assert gz.error is None and gz.bad_lines and "unreadable after line" in gz.bad_lines[-1].reason
    assert [(b.line, b.reason) for b in frames.bad_lines] == [(2, "truncated frame: 4 of 999 bytes")]
    assert origins(analysis)[f"{1:032x}"] == ids(0)["tool"]


def test_single_documents_jaeger_and_backend_wrappers(tmp_path):
    spans = failing_run(0)
    (tmp_path / "pretty.json").write_text(json.dumps(doc(spans[:2]), indent=2))
    (tmp_path / "v3.json").write_text(json.dumps({"result": doc(spans[2:3])}))
    (tmp_path / "tempo.json").write_text(json.dumps({"batches": doc(spans[3:])["resourceSpans"]}))
    analysis = analyze([str(tmp_path)])
    assert analysis.bad_lines == 0 and origins(analysis) == expected(1)


def jaeger_trace(n: int) -> dict:
    """failing_run(n) as the Jaeger UI downloads it (ids without leading zeros, typed tags)."""
    spans = []
    for s in failing_run(n):
        tags = []
        for a in s["attributes"]:
            v = a["value"]
            if "intValue" in v:
                tags.append({"key": a["key"], "type": "int64", "value": int(v["intValue"])})
            elif "arrayValue" in v:
                tags.append({"key": a["key"], "type": "string",
                             "value": json.dumps([x["stringValue"] for x in v["arrayValue"]["values"]])})
            else:
                tags.append({"key": a["key"], "type": "string", "value": v["stringValue"]})
        if s["status"]["code"] == 2:
            tags += [{"key": "otel.status_code", "type": "string", "value": "ERROR"},
                     {"key": "error", "type": "bool", "value": True}]
        spans.append({"traceID": s["traceId"].lstrip("0"), "spanID": s["spanId"], "operationName": s["name"],
                      "references": [{"refType": "CHILD_OF", "traceID": s["traceId"].lstrip("0"), "spanID": s["parentSpanId"]}]
                      if "parentSpanId" in s else [],
                      "startTime": int(s["startTimeUnixNano"]) // 1000, "duration": 500, "tags": tags, "logs": [],
                      "processID": "p1"})
    return {"traceID": spans[0]["traceID"], "spans": spans,
            "processes": {"p1": {"serviceName": "support", "tags": []}}}


def test_jaeger_ui_download(tmp_path, capsys):
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps({"data": [jaeger_trace(0), jaeger_trace(1)], "total": 0, "limit": 0, "offset": 0,
                                "errors": None}))
    assert cli_main(["analyze", "--format", "json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {r["trace_id"]: r["origin"]["span_id"] for r in report["runs"]} == expected(2)
    assert report["runs"][0]["chain"][0]["span_name"] == "execute_tool lookup_order"


def test_spilling_gives_the_same_answer_as_memory(tmp_path, monkeypatch):
    from otel_agent_trace.analyzer.readers.spill import TraceStore

    path = tmp_path / "big.jsonl"
    path.write_text("".join(spread(40)))
    in_memory = analyze([str(path)])
    spills = []
    real = TraceStore.spill
    monkeypatch.setattr(TraceStore, "spill", lambda self: (spills.append(1), real(self)))
    spilled = analyze([str(path)], budget_bytes=2000)  # a spill every few lines
    assert len(spills) > 10
    assert origins(spilled) == origins(in_memory) == expected(40)
    assert [f.run.trace_id for f in spilled.findings] == [f.run.trace_id for f in in_memory.findings]


def test_jaeger_parent_written_as_follows_from(tmp_path, capsys):
    """OTLP -> Jaeger writes a parent that a link also targets as FOLLOWS_FROM, first and alone
    (Jaeger v2's translator; our tool spans link their deciding step): it is still the parent."""
    traces = [jaeger_trace(0), jaeger_trace(1)]
    for trace in traces:
        for span in trace["spans"]:
            for ref in span["references"]:
                ref["refType"] = "FOLLOWS_FROM"
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps({"data": traces}))
    assert cli_main(["analyze", "--format", "json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {r["trace_id"]: r["origin"]["span_id"] for r in report["runs"]} == expected(2)
