"""Build the Collector distribution and Jaeger v2 from their Go modules under deploy/, once per version.

Binaries are cached outside the repository, in `$XDG_CACHE_HOME/otel-agent-trace/bin` (default
`~/.cache/...`), named after a hash of the module's files and the Go version: a second run (or a
fresh clone on the same machine) starts in seconds, a changed go.mod/go.sum builds anew. Stdlib
only, so `tasks.py` can import it before the virtualenv exists. A lock file serialises builds of
concurrent runs. Build flags suit a 2-core machine: `-p 2`, `-trimpath`, `-ldflags=-s -w`.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"

# name -> (module folder, package to build, files whose content keys the cache)
TARGETS = {
    "otelcol-agent-trace": (DEPLOY / "collector", ".", ("go.mod", "go.sum", "main.go", "components.go")),
    "jaeger": (DEPLOY / "jaeger", "github.com/jaegertracing/jaeger/cmd/jaeger", ("go.mod", "go.sum")),
}
BUILD_FLAGS = ["-p", "2", "-trimpath", "-buildvcs=false", "-ldflags=-s -w"]


def go() -> str | None:
    return shutil.which("go")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "otel-agent-trace" / "bin"


def _key(name: str) -> str:
    folder, package, files = TARGETS[name]
    digest = hashlib.sha256(package.encode())
    for f in files:
        digest.update(f.encode() + b"\0" + (folder / f).read_bytes())
    digest.update(_go_version().encode())
    return digest.hexdigest()[:16]


def _go_version() -> str:
    """The toolchain's VERSION file (instant), else `go env GOVERSION` (a few seconds under load)."""
    version_file = Path(os.path.realpath(go() or "go")).parent.parent / "VERSION"
    if version_file.is_file():
        return version_file.read_text().splitlines()[0]
    return subprocess.run([go() or "go", "env", "GOVERSION"], capture_output=True, text=True).stdout.strip()


def binary(name: str, log=sys.stderr) -> Path:
    """The cached binary for `name`, built first if this version was never built here."""
    if go() is None:
        raise RuntimeError("go is not on PATH")
    folder, package, _ = TARGETS[name]
    out = cache_dir() / f"{name}-{_key(name)}"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run may be building the same version
        if out.exists():
            return out
        print(f"building {name} from {folder.relative_to(ROOT)} (first run on this machine: minutes)", file=log, flush=True)
        started = time.monotonic()
        tmp = out.with_suffix(".tmp")
        subprocess.run([go(), "build", *BUILD_FLAGS, "-o", str(tmp), package], cwd=folder, check=True)
        os.replace(tmp, out)
        print(f"built {out} in {time.monotonic() - started:.0f} s", file=log, flush=True)
    return out


if __name__ == "__main__":  # python3 tests/e2e/gobuild.py [name ...]: build and print the paths
    for target in sys.argv[1:] or list(TARGETS):
        print(binary(target))
