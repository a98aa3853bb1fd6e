"""`sources.line_base` counts the newlines before a byte, whatever the line lengths (it finds
long lines' newlines and counts short ones)."""

from __future__ import annotations

import io

import pytest

from otel_agent_trace.analyzer.readers.sources import line_base


@pytest.mark.parametrize("lengths", [[], [0], [5] * 200, [70_000] * 3 + [3] * 100 + [50_000], [1] * 63, [1] * 64,
                                     [1] * 65, [2_000_000] * 5])
def test_line_base_counts_newlines_before_start(lengths):
    data = b"".join(b"x" * n + b"\n" for n in lengths) + b"tail"
    for start in sorted({0, 1, len(data) // 3, len(data) // 2, len(data) - 4, len(data), len(data) + 10}):
        assert line_base(io.BytesIO(data), start) == data.count(b"\n", 0, start)
