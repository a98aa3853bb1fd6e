"""The file the exporter writes, read back by the analyzer: origins, chains, contract, exit codes."""

from __future__ import annotations

import gzip
import json

import pytest

from client_helpers import instrumented_run
from demo_traces import record_demo_tickets

from otel_agent_trace.cli import main as cli_main



@pytest.fixture
def demo_file(tmp_path, demo_server):
    """All four demo tickets through the real SDK, batch processor and agent_trace_file."""
    return record_demo_tickets(tmp_path / "traces.jsonl", demo_server.base_url)


def analyze_json(capsys, *args):
    code = cli_main(["analyze", "--format", "json", *map(str, args)])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def test_exporter_writes_collector_style_otlp_json_lines(demo_file):
    lines = demo_file.read_text().splitlines()
    assert lines
    span = json.loads(lines[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == 32 and span["traceId"] == span["traceId"].lower()
    assert len(span["spanId"]) == 16
    assert isinstance(span["kind"], int)
    assert isinstance(span["startTimeUnixNano"], str)
    ints = [a["value"]["intValue"] for a in span["attributes"] if "intValue" in a["value"]]
    assert all(isinstance(v, str) for v in ints)


def test_origin_chain_and_contract(demo_file, capsys):
    code, report, _ = analyze_json(capsys, demo_file)
    assert code == 0
    assert set(report) >= {"runs", "inputs", "summary"}
    assert report["inputs"] == [{"path": str(demo_file), "spans": report["inputs"][0]["spans"], "bad_lines": [], "warnings": []}]
    assert report["summary"]["runs"] == 4 and report["summary"]["failed_runs"] == 2
    assert report["summary"]["avg_steps_per_run"] == pytest.approx((3 + 3 + 3 + 6) / 4)
    healthy, malformed, recovered, loop = report["runs"]
    for run in report["runs"]:
        assert set(run) >= {"trace_id", "run_span_id", "agent", "status", "steps", "critical", "origin", "chain", "bug_class"}
        assert len(run["trace_id"]) == 32 and len(run["run_span_id"]) == 16
        assert run["agent"] == "handle_ticket"

    assert healthy["status"] == "ok" and healthy["origin"] is None and healthy["chain"] == []
    assert recovered["status"] == "ok" and recovered["critical"] is None
    assert len(recovered["recovered"]) == 1

    assert malformed["status"] == "failed"
    assert set(malformed["critical"]) >= {"span_id", "step_index", "error_type", "description"}
    assert malformed["critical"]["span_id"] == malformed["run_span_id"]
    assert malformed["critical"]["error_type"] == "run_exception"
    assert "MissingRefundAmount" in malformed["critical"]["description"]
    origin = malformed["origin"]
    assert {k: origin[k] for k in ("step_index", "tool", "error_type")} == {
        "step_index": 0, "tool": "lookup_order", "error_type": "tool_empty_result"}
    assert [(h["span_name"], h["phase"]) for h in malformed["chain"]] == [
        ("execute_tool lookup_order", "origin"),
        ("agent_step 1", "propagate"),
        ("execute_tool calculate_refund", "propagate"),
        ("agent_step 2", "propagate"),
        ("invoke_agent handle_ticket", "critical"),
    ]
    assert malformed["chain"][0]["span_id"] == origin["span_id"]
    assert [h["relation"] for h in malformed["chain"]] == ["consumes", "decided_by", "consumes", "result_of", None]
    assert malformed["bug_class"] == "tool"

    assert loop["status"] == "failed"
    assert loop["origin"]["error_type"] == "loop_detected" and loop["origin"]["tool"] is None
    assert loop["bug_class"] == "model_decision"


def test_text_report_names_origin_and_chain(demo_file, capsys):
    assert cli_main(["analyze", str(demo_file)]) == 0
    out = capsys.readouterr().out
    assert "4 run(s), 2 failed" in out
    assert "origin   : step 0 execute_tool lookup_order  tool_empty_result" in out
    assert "bug class: tool" in out


def test_bad_lines_are_reported_and_the_rest_analysed(demo_file, tmp_path, capsys):
    good = demo_file.read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(['{"truncated": ', good[0], "[1, 2]", '{"resourceSpans": 5}', *good[1:]]) + "\n")
    code, report, err = analyze_json(capsys, broken)
    assert code == 1
    bad = report["inputs"][0]["bad_lines"]
    assert [b["line"] for b in bad] == [1, 3, 4]
    assert "invalid JSON" in bad[0]["reason"]
    assert f"{broken}:1: invalid JSON" in err
    assert report["summary"]["failed_runs"] == 2  # every readable trace still analysed


def test_unreadable_file_exit_2_and_others_still_read(demo_file, tmp_path, capsys):
    code, report, err = analyze_json(capsys, tmp_path / "missing.jsonl", demo_file)
    assert code == 2
    assert "cannot read" in report["inputs"][0]["error"]
    assert report["summary"]["runs"] == 4
    assert "missing.jsonl" in err


def test_usage_error_exit_2(capsys):
    assert cli_main(["analyze"]) == 2
    assert cli_main(["analyze", "x", "--format", "yaml"]) == 2


def test_gzip_directory_and_single_document_inputs(demo_file, tmp_path, capsys):
    folder = tmp_path / "in"
    folder.mkdir()
    lines = demo_file.read_text().splitlines()
    with gzip.open(folder / "a.jsonl.gz", "wt") as handle:
        handle.write(lines[0] + "\n")
    for i, line in enumerate(lines[1:]):
        (folder / f"b{i}.json").write_text(json.dumps(json.loads(line), indent=2))
    code, report, _ = analyze_json(capsys, folder)
    assert code == 0
    assert report["summary"]["runs"] == 4 and report["summary"]["failed_runs"] == 2


def _context_hashes(path):
    hashes = []
    for line in path.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    for a in span.get("attributes", ()):
                        if a["key"] == "agent_trace.context.hash":
                            hashes.append(a["value"]["stringValue"])
    return sorted(hashes)


def test_demo_under_opentelemetry_instrument(tmp_path, demo_file):
    """The real entry points: opentelemetry-instrument finds our instrumentor and exporter."""
    traces, data = instrumented_run(tmp_path, "support_agent", OTEL_SERVICE_NAME="support-agent")
    assert [r["status"] for r in data["runs"]] == ["ok", "failed", "ok", "failed"]
    assert data["runs"][1]["origin"]["tool"] == "lookup_order"
    # the same contexts hash alike in another process
    assert _context_hashes(traces) == _context_hashes(demo_file) and len(_context_hashes(traces)) == 15
