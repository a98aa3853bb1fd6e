"""End-to-end fixtures: the real Collector and Jaeger binaries, built from deploy/ and run on loopback.

Every test here is marked `e2e`; without Go on the PATH they all skip with one reason line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gobuild  # noqa: E402
from procs import Jaeger, Service, started  # noqa: E402

ROOT = gobuild.ROOT
BIN = Path(sys.executable).parent
SKIP_REASON = "go is not on PATH, so the Collector and Jaeger cannot be built (see docs/deploy.md)"
_SKIPPED = pytest.StashKey[int]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark this folder's tests `e2e`; without Go, deselect them (one summary line says why)."""
    here = Path(__file__).resolve().parent
    mine = [item for item in items if here in Path(str(item.fspath)).resolve().parents]
    for item in mine:
        item.add_marker(pytest.mark.e2e)
    if mine and gobuild.go() is None:
        config.hook.pytest_deselected(items=mine)
        items[:] = [item for item in items if item not in mine]
        config.stash[_SKIPPED] = len(mine)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if config.stash.get(_SKIPPED, 0):
        terminalreporter.write_line(f"SKIPPED {config.stash[_SKIPPED]} e2e tests: {SKIP_REASON}")


class _Binaries(dict):
    """name -> path, each built (or found cached) when first asked for."""

    def __missing__(self, name: str) -> Path:
        self[name] = gobuild.binary(name)
        return self[name]


@pytest.fixture(scope="session")
def binaries() -> dict[str, Path]:
    if gobuild.go() is None:
        pytest.skip(SKIP_REASON)
    return _Binaries()


@pytest.fixture(scope="session")
def e2e_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="module")
def jaeger(binaries: dict[str, Path], e2e_dir: Path) -> Iterator[Jaeger]:
    with ExitStack() as stack:
        service = Jaeger(binaries["jaeger"], e2e_dir)
        started(stack, service)
        yield service


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    """Stops whatever a test started, in reverse order, whether it passed or failed (also a
    service started before a later one failed to start, which never reached the stack)."""
    session_services = list(Service.running)  # Jaeger lives for the session
    with ExitStack() as s:
        yield s
    for service in reversed(list(Service.running)):
        if service not in session_services:
            service.stop()


def run_demo(out: Path, otlp_http: int, service: str, **env_extra: str) -> Path:
    """The demo agent under opentelemetry-instrument, exporting both to its own file and over OTLP."""
    own_file = out / f"{service}-own.jsonl"
    env = dict(os.environ)
    env.pop("OPENAI_BASE_URL", None)
    env.update({
        "OTEL_SERVICE_NAME": service,
        "OTEL_TRACES_EXPORTER": "agent_trace_file,otlp",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{otlp_http}/v1/traces",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_AGENT_TRACE_FILE": str(own_file),
        "OTEL_AGENT_TRACE_ENTRYPOINTS": "support_agent:handle_ticket",
        "OTEL_AGENT_TRACE_SAMPLE_RATIO": "1",
        **env_extra,
    })
    done = subprocess.run([str(BIN / "opentelemetry-instrument"), sys.executable, str(ROOT / "examples" / "support_agent.py")],
                          env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return own_file


def analyze(*args: str) -> dict:
    done = subprocess.run([str(BIN / "otel-agent-trace"), "analyze", "--format", "json", "--progress", "never", *args],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def wait_for(check: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    """Poll `check` (tail sampling waits `decision_wait`, batch and file flushes add seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(1.0)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def otlp_spans(paths: list[Path]) -> list[dict]:
    """Every span of OTLP JSON Lines files (plain or zstd), each with its trace id and attributes decoded."""
    from otel_agent_trace.analyzer.readers.sources import records  # noqa: PLC0415

    out = []
    for path in paths:
        for _, raw in records(str(path)):
            try:
                record = json.loads(raw)
            except ValueError:
                continue  # a frame still being written
            for rs in record.get("resourceSpans", []):
                resource = {a["key"]: _value(a["value"]) for a in rs.get("resource", {}).get("attributes", [])}
                for ss in rs.get("scopeSpans", []):
                    for span in ss.get("spans", []):
                        span = dict(span)
                        span["attrs"] = {a["key"]: _value(a["value"]) for a in span.get("attributes", [])}
                        span["service"] = resource.get("service.name")
                        out.append(span)
    return out


def _value(v: dict):
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    return next(iter(v.values())) if v else None


def files_of(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*") if p.is_file()) if folder.exists() else []
