"""The deploy configs pass the real binaries' own `validate` (component names, fields, env defaults)."""

from __future__ import annotations

import os
import subprocess

import pytest
from gobuild import DEPLOY


@pytest.mark.parametrize("binary,config,env", [
    ("otelcol-agent-trace", "collector-config.yaml", {}),
    ("otelcol-agent-trace", "collector-gateway.yaml", {}),
    ("jaeger", "jaeger/config.yaml", {}),
])
def test_config_validates_on_the_binary_it_runs_on(binaries, binary, config, env) -> None:
    done = subprocess.run([str(binaries[binary]), "validate", "--config", str(DEPLOY / config)],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_validate_rejects_an_unknown_processor(binaries, tmp_path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text((DEPLOY / "collector-config.yaml").read_text()
                      .replace("processors: [memory_limiter, redaction,", "processors: [memory_limiter, redactor,"))
    done = subprocess.run([str(binaries["otelcol-agent-trace"]), "validate", "--config", str(broken)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "redactor" in done.stdout + done.stderr
