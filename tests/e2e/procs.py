"""Run the Collector and Jaeger as processes on loopback: free ports, health waits, sure stops."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import ExitStack
from pathlib import Path

from gobuild import DEPLOY


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    """One started binary; `stop()` is safe to call twice and always reaps the process."""

    running: list["Service"] = []  # started and not yet stopped (the e2e `stack` fixture ends leftovers)

    def __init__(self, name: str, argv: list[str], env: dict[str, str], health_url: str, log: Path) -> None:
        self.name, self.health_url, self.log = name, health_url, log
        self._log = open(log, "wb")
        self.proc = subprocess.Popen(argv, env={**os.environ, **env}, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        Service.running.append(self)

    def wait_healthy(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.health_url, timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} not healthy at {self.health_url} after {timeout:.0f} s:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        self._log.flush()
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout: float = 30.0) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # graceful: the Collector flushes its exporters
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        if self in Service.running:
            Service.running.remove(self)


class Collector(Service):
    """The distribution running a deploy/ config, every address on a free loopback port."""

    def __init__(self, binary: Path, config: str, workdir: Path, name: str, overlays: tuple[str, ...] = (),
                 **settings: str) -> None:
        self.grpc, self.http, self.health = free_port(), free_port(), free_port()
        self.files = workdir / name
        env = {
            "OTELCOL_OTLP_GRPC_ENDPOINT": f"127.0.0.1:{self.grpc}",
            "OTELCOL_OTLP_HTTP_ENDPOINT": f"127.0.0.1:{self.http}",
            "OTELCOL_HEALTH_ENDPOINT": f"127.0.0.1:{self.health}",
            "OTELCOL_TELEMETRY_HOST": "127.0.0.1",
            "OTELCOL_TELEMETRY_PORT": str(free_port()),
            "OTELCOL_FILE_PATH": str(self.files / "agent-traces.jsonl"),
            **settings,
        }
        argv = [str(binary), "--config", str(DEPLOY / config)]
        for overlay in overlays:  # merged over it, in order
            argv += ["--config", str(DEPLOY / overlay)]
        super().__init__(name, argv, env,
                         f"http://127.0.0.1:{self.health}/", workdir / f"{name}.log")


class Jaeger(Service):
    def __init__(self, binary: Path, workdir: Path) -> None:
        self.grpc, self.http, self.query, self.health = free_port(), free_port(), free_port(), free_port()
        env = {
            "JAEGER_OTLP_GRPC_ENDPOINT": f"127.0.0.1:{self.grpc}",
            "JAEGER_OTLP_HTTP_ENDPOINT": f"127.0.0.1:{self.http}",
            "JAEGER_QUERY_HTTP_ENDPOINT": f"127.0.0.1:{self.query}",
            "JAEGER_QUERY_GRPC_ENDPOINT": f"127.0.0.1:{free_port()}",
            "JAEGER_HEALTH_ENDPOINT": f"127.0.0.1:{self.health}",
            "JAEGER_TELEMETRY_HOST": "127.0.0.1",
            "JAEGER_TELEMETRY_PORT": str(free_port()),
        }
        super().__init__("jaeger", [str(binary), "--config", str(DEPLOY / "jaeger" / "config.yaml")], env,
                         f"http://127.0.0.1:{self.health}/status", workdir / "jaeger.log")
        self.url = f"http://127.0.0.1:{self.query}"


def started(stack: ExitStack, *services: Service) -> None:
    """Register every service's stop first (so a failed start still stops all), then wait for health."""
    for service in services:
        stack.callback(service.stop)
    for service in services:
        service.wait_healthy()
