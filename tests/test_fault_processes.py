"""Fault matrix, whole processes (issue 18): the demo agent (tests/fault_agent.py, its own
scripted model server) under `opentelemetry-instrument` with a broken exporter, against the same
agent run plainly in the same test. Output and exit code must be identical; each failure kind is
logged by us at most once; the SDK's setup must not fail (other exporters keep working).

Exit: every span that ended is in the file when the process exits right after its last span
(`ENDED n`, counted in the process by a span processor of the public SDK API), and on SIGTERM.
"""

from __future__ import annotations

import collections
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
AGENT = [sys.executable, str(ROOT / "tests" / "fault_agent.py")]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env.update({"OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none", "OTEL_SERVICE_NAME": "fault-agent",
                "OTEL_AGENT_TRACE_ENTRYPOINTS": "support_agent:handle_ticket", **extra})
    return env


def plain() -> subprocess.CompletedProcess:
    return subprocess.run(AGENT, env=_env(), capture_output=True, text=True, timeout=120)


def instrumented(*args: str, **extra: str) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    done = subprocess.run([str(BIN / "opentelemetry-instrument"), *AGENT, *args], env=_env(**extra),
                          capture_output=True, text=True, timeout=180)
    return done, time.monotonic() - t0


def our_records(stderr: str) -> collections.Counter:
    return collections.Counter(ln for ln in stderr.splitlines() if ln.startswith("otel-agent-trace"))


def ended(stderr: str) -> int:
    return next(int(ln.split()[1]) for ln in stderr.splitlines() if ln.startswith("ENDED "))


def spans_in(path: Path) -> int:
    return sum(len(ss.get("spans", [])) for line in path.read_bytes().splitlines() if line.strip()
               for rs in orjson.loads(line)["resourceSpans"] for ss in rs.get("scopeSpans", []))


@pytest.fixture(scope="module")
def baseline():
    done = plain()
    assert "2 of 4 tickets answered" in done.stdout
    return done


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture
def hanging_port():
    """A loopback server that accepts connections (the kernel completes them) and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    yield listener.getsockname()[1]
    listener.close()


FILE_FAULTS = {
    "full-disk": "/dev/full",
    "unopenable-file": "/proc/version",  # read-only to root too (mode bits do not stop root)
    "path-through-a-file": "/etc/hostname/traces.jsonl",
}


@pytest.mark.parametrize("fault", sorted(FILE_FAULTS))
def test_agent_trace_file_on_a_full_or_read_only_disk(baseline, fault):
    done, _ = instrumented(OTEL_TRACES_EXPORTER="agent_trace_file", OTEL_AGENT_TRACE_FILE=FILE_FAULTS[fault])
    assert (done.stdout, done.returncode) == (baseline.stdout, baseline.returncode)
    records = our_records(done.stderr)
    assert len(records) == 1 and all(n == 1 for n in records.values()), done.stderr[-3000:]
    assert "Failed to auto initialize" not in done.stderr and ended(done.stderr) >= 45  # tracing still ran


@pytest.mark.parametrize("fault", ["closed-port", "hanging-server"])
def test_otlp_exporter_unreachable_or_hanging(baseline, fault, request):
    port = _closed_port() if fault == "closed-port" else request.getfixturevalue("hanging_port")
    done, seconds = instrumented(OTEL_TRACES_EXPORTER="otlp", OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
                                 OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}",
                                 OTEL_EXPORTER_OTLP_TIMEOUT="2")
    assert (done.stdout, done.returncode) == (baseline.stdout, baseline.returncode)
    assert our_records(done.stderr) == collections.Counter()  # the SDK's exporter reports its own errors
    assert seconds < 90, seconds  # bounded by the exporter's timeout, never hangs the exit
    print(f"\n{fault}: {seconds:.1f} s, SDK log lines: "
          f"{sum(1 for ln in done.stderr.splitlines() if ln and not ln.startswith((' ', 'Traceback', 'ENDED')))}")


def test_exit_right_after_the_last_span_loses_nothing(baseline, tmp_path):
    path = tmp_path / "t.jsonl"
    done, _ = instrumented(OTEL_TRACES_EXPORTER="agent_trace_file", OTEL_AGENT_TRACE_FILE=str(path))
    assert (done.stdout, done.returncode) == (baseline.stdout, baseline.returncode)
    assert spans_in(path) == ended(done.stderr) >= 45  # ours; plus openai-v2's, installed beside


def test_exit_right_after_the_last_span_with_tail_sampling_loses_no_failing_trace(baseline, tmp_path):
    path = tmp_path / "t.jsonl"
    done, _ = instrumented(OTEL_TRACES_EXPORTER="agent_trace_file", OTEL_AGENT_TRACE_FILE=str(path),
                           OTEL_AGENT_TRACE_SAMPLE_RATIO="0")
    assert (done.stdout, done.returncode) == (baseline.stdout, baseline.returncode)
    traces = collections.Counter(s["traceId"] for line in path.read_bytes().splitlines()
                                 for rs in orjson.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"])
    assert len(traces) >= 2  # the two failed tickets, whole, at ratio 0


def _sigterm(tmp_path, instrument: bool) -> tuple[int, str, Path]:
    path = tmp_path / f"sigterm-{instrument}.jsonl"
    cmd = ([str(BIN / "opentelemetry-instrument")] if instrument else []) + AGENT + ["sigterm"]
    proc = subprocess.Popen(cmd, env=_env(OTEL_TRACES_EXPORTER="agent_trace_file", OTEL_AGENT_TRACE_FILE=str(path)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if line.strip() == "READY":
            break
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, err, path


def test_sigterm_exit_code_is_unchanged(tmp_path):
    code_plain, _, _ = _sigterm(tmp_path, False)
    code_traced, _, _ = _sigterm(tmp_path, True)
    assert code_plain == code_traced == -signal.SIGTERM


def test_sigterm_flushes_every_ended_span(tmp_path):
    code, err, path = _sigterm(tmp_path, True)
    assert code == -signal.SIGTERM
    assert path.exists() and spans_in(path) == ended(err) >= 45  # ours; plus openai-v2's, installed beside


_HANDLER_CHECK = """
import signal, sys
from otel_agent_trace.instrumentor import AgentTraceInstrumentor
own = lambda signum, frame: None
if sys.argv[1] == "own":
    signal.signal(signal.SIGTERM, own)
AgentTraceInstrumentor().instrument()
during = signal.getsignal(signal.SIGTERM)
AgentTraceInstrumentor().uninstrument()
after = signal.getsignal(signal.SIGTERM)
name = lambda h: "own" if h is own else "default" if h is signal.SIG_DFL else "ours"
print(name(during), name(after))
"""


@pytest.mark.parametrize("program, expected", [("own", "own own"), ("none", "ours default")])
def test_sigterm_handler_only_when_the_program_has_none(program, expected):
    done = subprocess.run([sys.executable, "-c", _HANDLER_CHECK, program], env=_env(), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == expected.split()
