"""Venvs of their own for the instrumentations that must not be installed into the test venv:
OpenInference and OpenLLMetry register `opentelemetry_instrumentor` entry points that every
`opentelemetry-instrument` run of the suite would load (and both call theirs `openai` and
`langchain`, so one cannot be told from the other by name).

crewai gets one too: 1.15.30 cannot be installed beside the test venv's pins (it needs openai<3,
pydantic<2.13, mcp<2, aiosqlite~=0.21, regex~=2026.1 and older rich, jiter, docstring-parser).

`peer_python(peer)` builds `<venvs>/<peer>` on first use, like bench/_agent_loop.py's venvs: this
checkout editable with `constraints.txt` and the extra `test-<peer>` from pyproject.toml (the peer's
OpenAI and LangChain instrumentations, pinned in constraints.txt, and the LangChain stack; crewai),
and rebuilds it when pyproject.toml or constraints.txt change. The pins a venv's packages cannot
take (`INCOMPATIBLE_PINS`, pip's resolution) are left out of its constraints; every other pin holds. `<venvs>` is
`$OTEL_AGENT_TRACE_TEST_VENVS`, else `.venvs/` in the checkout (gitignored). It returns None, with
pip's output, only when the install fails (no package registry reachable)."""

from __future__ import annotations

import hashlib
import os
import re
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


def venvs_home() -> Path:
    return Path(os.environ.get("OTEL_AGENT_TRACE_TEST_VENVS") or ROOT / ".venvs")


def _stamp() -> str:
    digest = hashlib.sha256()
    for name in ("pyproject.toml", "constraints.txt"):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


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
    home = venvs_home() / peer
    python = home / ("Scripts" if os.name == "nt" else "bin") / "python"
    stamp = home / ".installed"
    if stamp.exists() and stamp.read_text() == _stamp() and python.exists():
        return python, ""
    if not python.exists():
        venv.EnvBuilder(with_pip=True).create(home)
    constraints = home / "constraints.txt"
    constraints.write_text(_constraints(INCOMPATIBLE_PINS.get(peer, ())))
    proc = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                           "-c", str(constraints), "-e", f"{ROOT}[test-{peer}]"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None, proc.stdout[-3000:] + proc.stderr[-3000:]
    stamp.write_text(_stamp())
    return python, ""


if __name__ == "__main__":  # python tests/stacks/peer_venvs.py [peer ...]: build them ahead
    for name in sys.argv[1:] or (*PEERS, *INCOMPATIBLE_PINS):
        found, output = peer_python(name)
        print(name, found or f"failed:\n{output}")
