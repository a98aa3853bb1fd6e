"""Benchmarks in smoke mode, the analyzer's (tests/bench_smoke.py says how they run; the
recorder's and the processor's are in test_bench_smoke.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from bench_smoke import ROOT, smoke


def test_analyzer_throughput_smoke(tmp_path):
    out = smoke("bench_analyzer_throughput.py", str(tmp_path / "throughput.jsonl")).stdout
    phases = re.findall(r"^(read|group|analyze|cli1)\s+[\d.]+ MB/s", out, re.M)
    assert phases == ["read", "group", "analyze", "cli1"], out


def test_minimize_smoke():
    out = smoke("bench_minimize.py").stdout
    assert "| wordcount |" in out and "| strict+closure | 1/1 | 1/1 |" in out, out


def test_gen_otlp_file_smoke(tmp_path):
    path = tmp_path / "generated.jsonl"
    out = smoke("gen_otlp_file.py", str(path)).stdout
    runs = int(re.search(r": (\d+) runs$", out.strip()).group(1))
    lines = path.read_bytes().splitlines()
    assert runs > 0 and lines and all(json.loads(ln)["resourceSpans"] for ln in lines)
    report = subprocess.run([str(Path(sys.executable).with_name("otel-agent-trace")), "analyze", "--format", "json",
                             str(path)], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert report.returncode == 0 and len(json.loads(report.stdout)["runs"]) == runs, report.stderr[-2000:]


def test_trail_smoke():
    out = smoke("bench_trail.py").stdout
    if out.startswith("smoke: skipped"):
        pytest.skip(out.strip())
    head = re.match(r"TRAIL GAIA: (\d+) traces, (\d+) analysed, (\d+) runs", out)
    assert head and head.group(1) == head.group(2) and int(head.group(3)) >= int(head.group(1)), out
    rows = [ln for ln in out.splitlines() if ln.startswith("| ") and "/" in ln]
    assert len(rows) >= 6 and all(ln.count("|") == 8 for ln in rows), out


def test_check_report_identity_smoke(tmp_path):
    reference = tmp_path / "reference"
    smoke("check_report_identity.py", "save", str(reference))
    out = smoke("check_report_identity.py", "compare", str(reference)).stdout
    said = re.findall(r"^(\S+): (identical|DIFFERENT) \(\d+ / \d+ bytes\)$", out, re.M)
    assert [name for name, _ in said] == ["shape20.json", "shape20.txt", "shape20-jobs2.json", "trail.json"], out
    assert all(verdict == "identical" for _, verdict in said), out  # the same tree twice: byte-identical


def test_cli_pairs_smoke(tmp_path):
    path = tmp_path / "pairs.jsonl"
    smoke("gen_otlp_file.py", str(path))
    out = smoke("bench_cli_pairs.py", str(path)).stdout
    assert re.findall(r"^(raw|now|now1)\s+CPU\s+[\d.]+ s  wall", out, re.M) == ["raw", "now", "now1"], out
    assert "now/raw: CPU" in out and "now1/raw: CPU" in out


def test_instructions_smoke():
    out = smoke("bench_instructions.py").stdout
    if out.startswith("smoke: skipped"):
        pytest.skip(out.strip())
    assert re.findall(r"^(raw|read)\s+[\d.]+ M instructions per MB", out, re.M) == ["raw", "read"], out


WHOWHEN = "/work/shared/benchmarks/whowhen-ag"


@pytest.mark.skipif(not os.path.exists(os.path.join(WHOWHEN, "traces.jsonl.gz")), reason="Who&When corpus not here")
def test_whowhen_smoke():
    """The same check as tests/test_bench_whowhen.py, listed here with the others."""
    out = smoke("bench_whowhen.py", "--dir", WHOWHEN).stdout
    assert "| **analyze --all-failed (no judge)** |" in out and "6 traces, 6 runs, 6 failed" in out


@pytest.mark.skipif(not os.path.exists(os.path.join(WHOWHEN, "traces.jsonl.gz")), reason="Who&When corpus not here")
def test_judge_whowhen_smoke():
    """Every judge strategy against the scripted oracle judge on bench_whowhen's 6-log sample."""
    out = smoke("bench_judge_whowhen.py", "--dir", WHOWHEN).stdout
    assert "Who&When AG, 6 logs" in out and out.rstrip().endswith("smoke: OK")
    assert all(re.search(rf"^{name}\s+[\d.]+% \(\d/6\)", out, re.M) for name in ("no judge", "all-at-once", "binary-search"))


def test_silent_smoke():
    """The silent-failure corpus (every fourth case, the openai client) through `analyze --expected`:
    one row per kind of mistake, the built-on and held-out cases, and the total; every run failed."""
    out = smoke("bench_silent.py").stdout
    n = int(re.match(r"silent-failure corpus: (\d+) cases x 1 clients = \1 runs", out).group(1))
    rows = [ln for ln in out.splitlines() if ln.startswith("| ") and "/" in ln.split("|")[2]]
    assert len(rows) == 7 and rows[-1].startswith(f"| **all** | {n}/{n} |"), out


def test_dask_smoke():
    """`analyze --engine dask` (1 and 2 workers) gives the local engine's report byte for byte."""
    out = smoke("bench_dask.py").stdout
    assert "reports byte-identical: True" in out and out.rstrip().endswith("smoke: OK")
    assert all(name in out for name in ("local --jobs 1", "dask 1 worker", "dask 2 workers"))
