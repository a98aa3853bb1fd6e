"""Venvs of their own for the instrumentations that must not be installed into the test venv:
OpenInference and OpenLLMetry register `opentelemetry_instrumentor` entry points that every
`opentelemetry-instrument` run of the suite would load (and both call theirs `openai` and
`langchain`, so one cannot be told from the other by name).

crewai gets one too: 1.15.30 cannot be installed beside the test venv's pins (it needs openai<3,
pydantic<2.13, mcp<2, aiosqlite~=0.21, regex~=2026.1 and older rich, jiter, docstring-parser).
The pins a venv's packages cannot take (`INCOMPATIBLE_PINS`, pip's resolution) are left out of its
constraints; every other pin holds.

`peer_python(peer)` builds the venv on first use, like bench/_agent_loop.py's venvs: a checkout
editable with `constraints.txt` and the extra `test-<peer>` from pyproject.toml (the peer's OpenAI
and LangChain instrumentations, pinned in constraints.txt, and the LangChain stack; crewai). The venvs are
cached outside the checkout, beside the e2e tests' Go binaries (tests/e2e/gobuild.py), in
`$XDG_CACHE_HOME/otel-agent-trace/venvs/<peer>-<key>`, the key a hash of pyproject.toml,
constraints.txt and the Python version: a fresh clone or another worktree with the same files
reuses them (building both takes minutes on 2 cores). The editable install may so be another
checkout's: `stacks.zero_code.run_instrumented` puts this checkout's sources first on the path, and
the entry points the venv registers are the same when pyproject.toml is. The reader's optional Rust
extension is not built into them (cargo is taken off the PATH): the peer tests analyse with the
test venv's CLI. `$OTEL_AGENT_TRACE_TEST_VENVS` overrides the folder (`<folder>/<peer>`, rebuilt
when the key changes). `peer_python` returns None, with pip's output, only when the install fails
(no package registry reachable)."""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PEERS = ("openinference", "openllmetry")
# venv -> the constraints.txt pins its packages conflict with (left free for pip to resolve)
INCOMPATIBLE_PINS = {
    "crewai": ("aiosqlite", "docstring-parser", "jiter", "mcp", "mcp-types", "openai", "pydantic", "pydantic-core",
               "regex", "rich"),
}


def _key() -> str:
    digest = hashlib.sha256(platform.python_version().encode())
    for name in ("pyproject.toml", "constraints.txt"):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def venv_home(peer: str) -> Path:
    if os.environ.get("OTEL_AGENT_TRACE_TEST_VENVS"):
        return Path(os.environ["OTEL_AGENT_TRACE_TEST_VENVS"]) / peer
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "otel-agent-trace" / "venvs" / f"{peer}-{_key()[:16]}"


def _without_cargo(env: dict[str, str]) -> dict[str, str]:
    """`env` with no cargo on its PATH: setuptools-rust then skips the optional extension."""
    cargo = "cargo.exe" if os.name == "nt" else "cargo"
    path = [d for d in env.get("PATH", "").split(os.pathsep) if not (Path(d) / cargo).exists()]
    return {**env, "PATH": os.pathsep.join(path)}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _constraints(left_free: tuple[str, ...]) -> str:
    """constraints.txt without the pins of `left_free` (names compared as pip does)."""
    free = {_normal(n) for n in left_free}
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    return "\n".join(line for line in lines
                     if _normal(re.split(r"[=<>!~;\[ ]", line.strip(), maxsplit=1)[0]) not in free) + "\n"


def peer_python(peer: str) -> tuple[Path | None, str]:
    """(the venv's python, "") or (None, pip's output when the install failed)."""
    home = venv_home(peer)
    python = home / ("Scripts" if os.name == "nt" else "bin") / "python"
    stamp = home / ".installed"
    if stamp.exists() and stamp.read_text() == _key() and python.exists():
        return python, ""
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(home.parent / f".{home.name}.lock", "w") as lock:
        try:  # another test run (another worktree) may be building the same venv
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # Windows: no lock, as before
            pass
        if stamp.exists() and stamp.read_text() == _key() and python.exists():
            return python, ""
        if home.exists():  # a failed or older install: start clean
            shutil.rmtree(home)
        venv.EnvBuilder(with_pip=True).create(home)
        constraints = home / "constraints.txt"
        constraints.write_text(_constraints(INCOMPATIBLE_PINS.get(peer, ())))
        proc = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                               "-c", str(constraints), "-e", f"{ROOT}[test-{peer}]"],
                              capture_output=True, text=True, env=_without_cargo(dict(os.environ)))
        if proc.returncode != 0:
            return None, proc.stdout[-3000:] + proc.stderr[-3000:]
        stamp.write_text(_key())
    return python, ""


if __name__ == "__main__":  # python tests/stacks/peer_venvs.py [peer ...]: build them ahead
    for name in sys.argv[1:] or (*PEERS, *INCOMPATIBLE_PINS):
        found, output = peer_python(name)
        print(name, found or f"failed:\n{output}")
