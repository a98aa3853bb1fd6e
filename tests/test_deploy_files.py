"""deploy/: the compose files validated offline by a real validator, and what they mount exists.

The validator is check-jsonschema with the Compose Specification's schema it vendors
(`--builtin-schema vendor.compose-spec`); a deliberately broken file shows it can fail. The
Collector and Jaeger configs themselves are run by tests/e2e (a real build of each).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
COMPOSE_FILES = [DEPLOY / "jaeger-compose.yml", DEPLOY / "tempo" / "compose.yml"]
CHECK = [str(Path(sys.executable).parent / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec"]


def _validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CHECK, str(path)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("path", COMPOSE_FILES, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_compose_file_matches_the_compose_specification(path: Path) -> None:
    done = _validate(path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_validator_rejects_a_broken_compose_file(tmp_path: Path) -> None:
    broken = tmp_path / "compose.yml"
    broken.write_text("services:\n  jaeger:\n    image: [not, a, string]\n    ports: 16686\n    restart: sometimes\n")
    done = _validate(broken)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "image" in done.stdout + done.stderr


@pytest.mark.parametrize("path", COMPOSE_FILES, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_images_are_pinned_and_mounted_files_exist(path: Path) -> None:
    compose = yaml.safe_load(path.read_text())
    named_volumes = set(compose.get("volumes") or {})
    for name, service in compose["services"].items():
        assert re.fullmatch(r"[\w./-]+:\d+\.\d+\.\d+", service["image"]), f"{name}: pin a version, not {service['image']}"
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (path.parent / source).exists(), f"{name} mounts {source}, which does not exist"
            else:
                assert source in named_volumes, f"{name} mounts undeclared volume {source}"
    writers = [s for s in compose["services"].values() if s["image"].startswith("otel/opentelemetry-collector-contrib:")]
    assert writers, "a Collector writes the analyzer's files"
    for collector in writers:
        path_in_container = collector["environment"]["OTELCOL_FILE_PATH"]
        mounts = [v.split(":")[1] for v in collector["volumes"] if v.split(":")[0] in named_volumes]
        assert any(path_in_container.startswith(m + "/") for m in mounts), "the file exporter writes to a volume"


def test_collector_image_and_distribution_are_the_same_release() -> None:
    gomod = (DEPLOY / "collector" / "go.mod").read_text()
    release = re.search(r"go\.opentelemetry\.io/collector/otelcol v(\d+\.\d+\.\d+)", gomod).group(1)
    for path in COMPOSE_FILES:
        assert f"otel/opentelemetry-collector-contrib:{release}" in path.read_text()
    # every collector module at one release (the NOTES rule): no other v0.x of them in go.mod
    versions = set(re.findall(r"(?:go\.opentelemetry\.io/collector|opentelemetry-collector-contrib)/\S+ (v0\.\d+\.\d+)", gomod))
    assert versions == {f"v{release}"}, versions


def test_tempo_files_are_wired_together() -> None:
    tempo = yaml.safe_load((DEPLOY / "tempo" / "tempo.yaml").read_text())
    assert tempo["storage"]["trace"]["backend"] == "local"
    port = tempo["server"]["http_listen_port"]
    source = yaml.safe_load((DEPLOY / "tempo" / "grafana" / "provisioning" / "datasources" / "tempo.yaml").read_text())
    assert [d["url"] for d in source["datasources"] if d["type"] == "tempo"] == [f"http://tempo:{port}"]
    compose = yaml.safe_load((DEPLOY / "tempo" / "compose.yml").read_text())
    assert compose["services"]["collector"]["environment"]["OTELCOL_BACKEND_ENDPOINT"] == "tempo:4317"
    assert "endpoint: 0.0.0.0:4317" in (DEPLOY / "tempo" / "tempo.yaml").read_text()
    queries = (DEPLOY / "tempo" / "traceql.md").read_text()
    assert '{ span.agent_trace.lifecycle.phase = "origin" }' in queries
