"""bench/bench_whowhen.py in smoke mode with `--expected` (each task's answer told to the CLI, the
paper's with-ground-truth setting): a few Who&When logs through the CLI with `--all-failed
--expected`, the report's shape asserted by the bench itself (every run failed, places named with
their agent). tests/test_bench_smoke_analyzer.py runs it without the answers."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = "/work/shared/benchmarks/whowhen-ag"


@pytest.mark.skipif(not os.path.exists(os.path.join(DATA, "traces.jsonl.gz")), reason="Who&When corpus not here")
def test_bench_whowhen_smoke():
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "bench_whowhen.py"), "--smoke", "--dir", DATA,
                           "--expected"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "src")})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| **analyze --all-failed --expected (no judge)** |" in done.stdout
    assert "6 traces, 6 runs, 6 failed" in done.stdout
