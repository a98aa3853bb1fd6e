"""`analyze --engine dask`: the report is byte-identical to the local engine's, on traces whose
spans are spread over several files (as the Collector's rotated files hold them), with a bad line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from demo_traces import record_demo_tickets  # noqa: E402

from otel_agent_trace import cli  # noqa: E402


def _split(trace_file: Path, folder: Path, parts: int) -> list[Path]:
    """Every span of `trace_file` as its own record, dealt round-robin over `parts` files: each
    trace ends up split across all of them."""
    files = [folder / f"part-{i}.jsonl" for i in range(parts)]
    lines: list[list[str]] = [[] for _ in range(parts)]
    n = 0
    for raw in trace_file.read_text().splitlines():
        for rs in json.loads(raw)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    record = {"resourceSpans": [{**rs, "scopeSpans": [{**ss, "spans": [span]}]}]}
                    lines[n % parts].append(json.dumps(record))
                    n += 1
    lines[1].insert(2, '{"resourceSpans": [ not json')
    for path, content in zip(files, lines):
        path.write_text("\n".join(content) + "\n")
    return files


@pytest.mark.parametrize("form", ["json", "text"])
def test_dask_report_is_byte_identical_to_local(tmp_path: Path, demo_server, form: str) -> None:
    trace = record_demo_tickets(tmp_path / "traces.jsonl", demo_server.base_url)
    files = [str(p) for p in _split(trace, tmp_path, 3)]
    local, dask = tmp_path / f"local.{form}", tmp_path / f"dask.{form}"
    assert cli.main(["analyze", *files, "--format", form, "--jobs", "1", "-o", str(local)]) == 1  # the bad line
    assert cli.main(["analyze", *files, "--format", form, "--engine", "dask", "--jobs", "2", "-o", str(dask)]) == 1
    assert dask.read_bytes() == local.read_bytes()
    if form == "json":
        report = json.loads(local.read_bytes())
        assert len(report["runs"]) == 4 and report["summary"]["failed_runs"] >= 1
        assert report["inputs"][1]["bad_lines"], "the bad line is reported, with its file and line"


def test_dask_on_a_running_scheduler(tmp_path: Path, demo_server) -> None:
    """--scheduler ADDRESS: the cluster is the user's (here a LocalCluster started beforehand)."""
    from distributed import LocalCluster

    trace = record_demo_tickets(tmp_path / "traces.jsonl", demo_server.base_url)
    files = [str(p) for p in _split(trace, tmp_path, 2)]
    local, dask = tmp_path / "local.json", tmp_path / "dask.json"
    assert cli.main(["analyze", *files, "--format", "json", "--jobs", "1", "-o", str(local)]) == 1
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster:
        assert cli.main(["analyze", *files, "--format", "json", "--engine", "dask", "--scheduler",
                         cluster.scheduler_address, "-o", str(dask)]) == 1
    assert dask.read_bytes() == local.read_bytes()
