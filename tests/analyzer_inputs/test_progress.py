"""The progress bar: drawn on a terminal (or when forced) while inputs are read, by the main
process whether the chunks are analysed here or in workers; cleared at the end; never drawn
into a pipe unless asked."""

from __future__ import annotations

import io

import pytest
from inputs_support import failing_run, line

from otel_agent_trace.analyzer.analysis import Progress
from otel_agent_trace.analyzer.report.reduce import analyze_reduced
from otel_agent_trace.analyzer.report.json_report import to_dict


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _file(tmp_path) -> tuple[str, int]:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(line(failing_run(n)) for n in range(300)))
    return str(path), path.stat().st_size


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_bar_is_drawn_and_cleared_on_a_terminal(tmp_path, jobs):
    path, size = _file(tmp_path)
    stream = _Terminal()
    reduced = analyze_reduced([path], progress=Progress(size, stream=stream, delay=0.0), jobs=jobs,
                              min_chunk_bytes=size // 4)
    drawn = stream.getvalue()
    assert "\r[" in drawn and "MB/s" in drawn and "t.jsonl" in drawn
    assert "100.0%" in drawn  # it reached the end of the input
    assert drawn.endswith("\r" + " " * 110 + "\r")  # and left the line clean for the report
    assert len(to_dict(reduced)["runs"]) == 300


def test_no_bar_in_a_pipe_or_before_the_delay(tmp_path):
    path, size = _file(tmp_path)
    pipe = io.StringIO()
    analyze_reduced([path], progress=Progress(size, stream=pipe, delay=0.0))
    slow = _Terminal()
    analyze_reduced([path], progress=Progress(size, stream=slow, delay=3600.0))
    assert pipe.getvalue() == "" and slow.getvalue() == ""
