#!/usr/bin/env python3
"""Set up a local virtualenv and run the project's jobs, with nothing but Python 3.10+ and pip.

    python3 tasks.py demo    # the demo agent under opentelemetry-instrument, then the analyzer's report
    python3 tasks.py test    # the test suite
    python3 tasks.py setup   # only (re)create .venv

The venv is reinstalled only when pyproject.toml or constraints.txt changed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".installed"
TRACES = os.environ.get("OTEL_AGENT_TRACE_FILE", str(ROOT / "agent-traces.jsonl"))


def _fingerprint() -> str:
    digest = hashlib.sha256()
    for name in ("pyproject.toml", "constraints.txt"):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def setup() -> None:
    if STAMP.exists() and STAMP.read_text() == _fingerprint():
        return
    if not (BIN / "python").exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    pip = [str(BIN / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run(pip + ["-c", str(ROOT / "constraints.txt"), "-e", f"{ROOT}[test]"], check=True)
    STAMP.write_text(_fingerprint())


def demo() -> int:
    setup()
    if os.path.exists(TRACES):
        os.remove(TRACES)
    env = dict(os.environ)
    env.update({
        "OTEL_SERVICE_NAME": env.get("OTEL_SERVICE_NAME", "support-agent"),
        "OTEL_TRACES_EXPORTER": "agent_trace_file",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_AGENT_TRACE_FILE": TRACES,
        "OTEL_AGENT_TRACE_ENTRYPOINTS": "support_agent:handle_ticket",
    })
    print("$ opentelemetry-instrument python examples/support_agent.py", flush=True)
    subprocess.run([str(BIN / "opentelemetry-instrument"), str(BIN / "python"), str(ROOT / "examples" / "support_agent.py")],
                   env=env, check=True)
    print(f"\n$ otel-agent-trace analyze {os.path.relpath(TRACES)}", flush=True)
    return subprocess.run([str(BIN / "otel-agent-trace"), "analyze", TRACES]).returncode


def test(extra: list[str]) -> int:
    setup()
    return subprocess.run([str(BIN / "python"), "-m", "pytest", *extra], cwd=ROOT).returncode


def main(argv: list[str]) -> int:
    job = argv[0] if argv else "demo"
    if job == "setup":
        setup()
        return 0
    if job == "demo":
        return demo()
    if job == "test":
        return test(argv[1:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
