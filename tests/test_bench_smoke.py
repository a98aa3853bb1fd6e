"""Benchmarks in smoke mode (issue 31): each runs as a user runs it, as a subprocess with this
interpreter, on a few iterations; the test checks the shape of its output, never a timing, so a
benchmark that breaks fails the suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def smoke(script: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), "--smoke", *args], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done


def test_trace_volume_smoke():
    """Both sides (ours, the official openai-v2 instrumentation) send identical requests; our
    trace alone rebuilds every step's context (context hashes only once per message, a shared
    prefix per step); the table has one row per size."""
    done = smoke("bench_trace_volume.py")
    assert "smoke: OK (3 steps" in done.stdout and ", 5 steps" in done.stdout
    rows = [ln for ln in done.stdout.splitlines() if ln.startswith("| 3 |") or ln.startswith("| 5 |")]
    assert len(rows) == 2 and all(ln.count("|") == 10 for ln in rows), done.stdout
    assert "context of all 5 steps rebuilt from our trace" in done.stderr


def test_national_ids_smoke():
    """Recall and false positives of the US SSN detector, both scan paths, as JSON and prose."""
    done = smoke("bench_national_ids.py")
    results = json.loads(next(ln for ln in done.stdout.splitlines() if ln.startswith("{")))
    assert "find_all" in results and done.stdout.rstrip().endswith("smoke: OK")
    for figures in results.values():
        assert figures["n"] == 500 and figures["recall"] == 1.0 and figures["false_positive_rate"] == 0.0
