"""deploy/collector-config.yaml: well-formed, every referenced component defined, and its
tail_sampling keeps what the in-process sampler keeps (errors, origin/critical, loop/budget)."""

import re
from pathlib import Path

import pytest

CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "collector-config.yaml"


def test_collector_config():
    yaml = pytest.importorskip("yaml")
    cfg = yaml.safe_load(CONFIG.read_text())
    for pipeline in cfg["service"]["pipelines"].values():
        for kind in ("receivers", "processors", "exporters"):
            for name in pipeline.get(kind, []):
                assert name in cfg[kind], f"{kind}: {name} used but not defined"
    ts = cfg["processors"]["tail_sampling"]
    pipeline = cfg["service"]["pipelines"]["traces"]["processors"]
    assert pipeline.index("memory_limiter") < pipeline.index("tail_sampling") < pipeline.index("batch")
    policies = {p["type"]: p for p in ts["policies"]}
    assert policies["status_code"]["status_code"]["status_codes"] == ["ERROR"]
    kept = {(p["string_attribute"]["key"], v) for p in ts["policies"] if p["type"] == "string_attribute"
            for v in p["string_attribute"]["values"]}
    assert {("agent_trace.lifecycle.phase", "origin"), ("agent_trace.lifecycle.phase", "critical"),
            ("agent_trace.error.type", "loop_detected"), ("agent_trace.error.type", "budget_exceeded")} <= kept
    share = str(policies["probabilistic"]["probabilistic"]["sampling_percentage"])
    share = re.fullmatch(r"\$\{env:OTELCOL_SAMPLE_PERCENTAGE:-(\d+)\}", share).group(1)  # the default
    assert 0 < int(share) <= 100
    assert cfg["exporters"]["file"]["format"] == "json"
