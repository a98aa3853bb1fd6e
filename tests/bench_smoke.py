"""Benchmarks in smoke mode (issue 31): each runs as a user runs it, as a subprocess with this
interpreter, on a few iterations; its test checks the shape of its output, never a timing, so a
benchmark that breaks fails the suite. The tests are in two modules (the recorder's and
processor's benchmarks, the analyzer's) that pytest-xdist runs on different workers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMOKE_MODULES = ("test_bench_smoke.py", "test_bench_smoke_analyzer.py")


def smoke(script: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), "--smoke", *args], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done
