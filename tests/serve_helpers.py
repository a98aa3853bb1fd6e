"""`otel-agent-trace serve` as a user starts it: a real process, spoken to over real HTTP."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent


class ServeProcess:
    """`python -m otel_agent_trace.cli serve --listen 127.0.0.1:0 --findings PATH [extra]`; the
    port read from its startup line. `stop()` sends SIGTERM and returns the exit code."""

    def __init__(self, findings: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.findings = findings
        environment = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})}
        self.stdout_path = findings.with_suffix(".stdout")
        findings.parent.mkdir(parents=True, exist_ok=True)
        self._stdout = open(self.stdout_path, "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "otel_agent_trace.cli", "serve", "--listen", "127.0.0.1:0",
             "--findings", str(findings), *extra],
            stdout=self._stdout, stderr=subprocess.PIPE, env=environment)
        line = self.process.stderr.readline().decode()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/v1/traces", line)
        if not found:
            rest = self.process.stderr.read().decode() if self.process.poll() is not None else ""
            self.process.kill()
            raise RuntimeError(f"serve did not start: {line}{rest}")
        self.port = int(found.group(1))
        grpc = re.search(r"grpc [\d.]+:(\d+)", line)
        self.grpc_port = int(grpc.group(1)) if grpc else None
        self.url = f"http://127.0.0.1:{self.port}/v1/traces"
        self.stderr = ""

    def stop(self, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            _, err = self.process.communicate(timeout=timeout)
        finally:
            self._stdout.close()
        self.stderr = err.decode()
        return self.process.returncode

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()
        self._stdout.close()

    def __enter__(self) -> "ServeProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.kill()


def findings_of(path: Path) -> list[dict[str, Any]]:
    """Every line of a findings file and its rotated backups, oldest first."""
    from otel_agent_trace.rotating_file import backups_of

    out = []
    for name in [*backups_of(str(path)), str(path)]:
        if os.path.exists(name):
            with open(name, encoding="utf-8") as handle:
                out.extend(json.loads(line) for line in handle if line.strip())
    return out


def by_run(entries: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["trace_id"], e["run_span_id"]): e for e in entries}


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Poll `condition` until truthy (a deadline, not a timed assertion: it only bounds a hang)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
