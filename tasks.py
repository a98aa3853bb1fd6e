#!/usr/bin/env python3
"""Set up a local virtualenv and run the project's jobs, with nothing but Python 3.10+ and pip.

    python3 tasks.py demo    # the demo agent under opentelemetry-instrument, then the analyzer's report
    python3 tasks.py test    # the test suite (with the end-to-end tests when Go is on the PATH)
    python3 tasks.py e2e     # only the end-to-end tests: a real Collector and Jaeger built from deploy/
    python3 tasks.py setup   # only (re)create .venv

The demo installs what the demo needs (the package and the `openai` client: the `demo` extra), as
pure Python; the tests install the `test` extra and build the reader's optional Rust extension
(native/) when cargo is on the PATH. The venv is reinstalled only when pyproject.toml,
constraints.txt or native/ changed, or when the tests need more than the demo installed.
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
    # native/: the reader's optional Rust extension, rebuilt by the install when its source changes
    names = ["pyproject.toml", "constraints.txt", "native/Cargo.toml", "native/Cargo.lock"]
    names += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "native" / "src").glob("*.rs"))
    for name in names:
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


# what each job installs, smallest first: a stamp of a later level satisfies an earlier one
LEVELS = ("demo", "test")


def _installed_level() -> str | None:
    """The level the venv was installed at, if its fingerprint still holds."""
    if not STAMP.exists():
        return None
    level, _, fingerprint = STAMP.read_text().partition(" ")
    return level if level in LEVELS and fingerprint == _fingerprint() else None


def setup(level: str = "test") -> None:
    installed = _installed_level()
    if installed is not None and LEVELS.index(installed) >= LEVELS.index(level):
        return
    if not (BIN / "python").exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    env = dict(os.environ)
    if level == "demo":
        # the demo reads one small file: the native reader's Rust build (a minute on 2 cores) waits
        # for the tests' install; setuptools-rust skips the optional extension without cargo
        env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                                      if not (Path(d) / ("cargo.exe" if os.name == "nt" else "cargo")).exists())
    pip = [str(BIN / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run(pip + ["-c", str(ROOT / "constraints.txt"), "-e", f"{ROOT}[{level}]"], check=True, env=env)
    STAMP.write_text(f"{level} {_fingerprint()}")


def demo() -> int:
    setup("demo")
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


def _go() -> bool:
    """Is Go on the PATH? The e2e tests build the Collector and Jaeger with it (tests/e2e/gobuild.py)."""
    import shutil

    return shutil.which("go") is not None


def _e2e_ready() -> bool:
    """Build (or find cached) the e2e binaries before pytest, whose capture would hide the build's progress."""
    if not _go():
        print("e2e tests skipped: go is not on PATH (the Collector and Jaeger are built from deploy/ with it)", flush=True)
        return False
    return subprocess.run([sys.executable, str(ROOT / "tests" / "e2e" / "gobuild.py")], cwd=ROOT).returncode == 0


# pytest-xdist over every core; a module's tests stay on one worker, so a module's shared servers
# (the e2e Collector and Jaeger, the scripted model servers) start once. `-n 0` after `test` runs serially.
PARALLEL = ["-n", "auto", "--dist", "loadfile"]


def test(extra: list[str]) -> int:
    setup()
    _e2e_ready()  # a failed build fails the e2e tests, which build again and show the error
    return subprocess.run([str(BIN / "python"), "-m", "pytest", *PARALLEL, *extra], cwd=ROOT).returncode


def e2e(extra: list[str]) -> int:
    setup()
    if not _go():
        _e2e_ready()
        return 0
    if not _e2e_ready():
        return 1
    return subprocess.run([str(BIN / "python"), "-m", "pytest", "tests/e2e", *extra], cwd=ROOT).returncode


def main(argv: list[str]) -> int:
    job = argv[0] if argv else "demo"
    if job == "setup":
        setup("test")
        return 0
    if job == "demo":
        return demo()
    if job == "test":
        return test(argv[1:])
    if job == "e2e":
        return e2e(argv[1:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
