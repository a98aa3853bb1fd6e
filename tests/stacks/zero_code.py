"""Run an agent script as a user would: `opentelemetry-instrument python agent.py` with the
`agent_trace_file` exporter, then `otel-agent-trace analyze --format json` over the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run_instrumented(script: str, tmp_path: Path, python: Path | None = None,
                     **env_extra: str) -> tuple[subprocess.CompletedProcess, Path]:
    """`python` (default: this venv's): the interpreter of another venv, whose
    `opentelemetry-instrument` is run."""
    agent = tmp_path / "agent.py"
    agent.write_text(script)
    traces = tmp_path / "traces.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env.update({
        "OTEL_SERVICE_NAME": "stack-test",
        "OTEL_TRACES_EXPORTER": "agent_trace_file",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_AGENT_TRACE_FILE": str(traces),
        # this checkout's sources first (the venv's editable install may be another checkout's)
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "examples"), str(ROOT / "tests"),
                                       *filter(None, [os.environ.get("PYTHONPATH")])]),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    })
    env.update(env_extra)
    python = python or Path(sys.executable)
    proc = subprocess.run([str(python.parent / "opentelemetry-instrument"), str(python), str(agent)], env=env,
                          capture_output=True, text=True, timeout=180, cwd=tmp_path)
    return proc, traces


def analyze(traces: Path) -> dict[str, Any]:
    proc = subprocess.run([str(BIN / "otel-agent-trace"), "analyze", "--format", "json", str(traces)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def spans_of(traces: Path) -> list[tuple[str, dict[str, Any]]]:
    """(scope name, span) of every span in the file."""
    out = []
    for line in traces.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                out += [(ss["scope"]["name"], s) for s in ss["spans"]]
    return out


def attributes(span: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for a in span.get("attributes", []):
        value = a["value"]
        out[a["key"]] = next(iter(value.values())) if value else None
    return out
