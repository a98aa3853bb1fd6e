"""bench/corpora/convert_trail.py reproduces the shared TRAIL GAIA corpus line for line (on a slice of real
traces read from the TRAIL mirror), and handles what only the SWE-bench split has (orphan spans,
a span listed twice). Skipped, saying why, when the mirror or the shared corpus is absent."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = Path("/work/shared/benchmarks/trail-gaia")
# the first trace; one whose annotation has stray keys; one whose annotation needs a trailing comma removed
SLICE = ["0035f455b3ff2295167a844f04d85d34", "3acaa3150977e199eddb95c64f2ada2e", "a96c6811716c0473b86a23321db79c34"]
SWE_ORPHANS = "72822db6e120878d916b515c2501246b"  # truncated: no root, Step spans whose parent is absent


def _converter():
    spec = importlib.util.spec_from_file_location("convert_trail", ROOT / "bench" / "corpora" / "convert_trail.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


convert_trail = _converter()


def _mirror_or_skip() -> str:
    repo = convert_trail.DEFAULT_REPO
    if not os.path.isdir(repo):
        pytest.skip(f"no TRAIL mirror at {repo}")
    if subprocess.run(["git", "-C", repo, "cat-file", "-e", convert_trail.DEFAULT_COMMIT],
                      capture_output=True).returncode != 0:
        pytest.skip(f"the TRAIL mirror at {repo} lacks commit {convert_trail.DEFAULT_COMMIT}")
    return repo


def _reference_lines(path: Path, ids: set[str], key) -> dict[str, str]:
    """The lines of a reference file for `ids`, read only as far as needed."""
    found: dict[str, str] = {}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            trace = key(line)
            if trace in ids:
                found[trace] = line
                if len(found) == len(ids):
                    break
    return found


def test_gaia_slice_equals_shared_corpus(tmp_path):
    repo = _mirror_or_skip()
    if not (REFERENCE / "traces.jsonl.gz").exists() or not (REFERENCE / "labels.jsonl").exists():
        pytest.skip(f"no shared TRAIL GAIA corpus at {REFERENCE}")
    stats = convert_trail.convert("GAIA", str(tmp_path), repo=repo, only=SLICE)
    assert stats["traces"] == len(SLICE) and not stats["problems"]
    with gzip.open(tmp_path / "traces.jsonl.gz", "rt", encoding="utf-8") as handle:
        traces = handle.readlines()
    labels = (tmp_path / "labels.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    ref_traces = _reference_lines(REFERENCE / "traces.jsonl.gz", set(SLICE),
                                  lambda line: line[line.index('"traceId":"') + 11:][:32])
    ref_labels = _reference_lines(REFERENCE / "labels.jsonl", set(SLICE), lambda line: json.loads(line)["trace_id"])
    assert traces == [ref_traces[t] for t in SLICE]  # byte for byte
    assert labels == [ref_labels[t] for t in SLICE]
    notes = json.loads(labels[2]).get("conversion_notes")
    assert notes == ["annotation had a trailing comma; repaired on load"]


def test_swe_orphans_and_repeated_span(tmp_path):
    repo = _mirror_or_skip()
    stats = convert_trail.convert("SWE", str(tmp_path), repo=repo, only=[SWE_ORPHANS])
    assert stats["traces"] == 1 and not stats["problems"]
    with gzip.open(tmp_path / "traces.jsonl.gz", "rt", encoding="utf-8") as handle:
        doc = json.loads(handle.readline())
    spans = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    ids = [s["spanId"] for s in spans]
    assert len(ids) == len(set(ids)) == 13  # 14 in the source tree, one of them listed twice
    orphans = {s["spanId"]: {a["key"]: a["value"]["stringValue"] for a in s["attributes"]}["bench.orphan_parent_span_id"]
               for s in spans if not s.get("parentSpanId")}
    assert len(orphans) == 7 and set(orphans.values()) == {"dd38ea21168a9f1a", "1b34d02d2b7f4ecd"}
    label = json.loads((tmp_path / "labels.jsonl").read_text(encoding="utf-8"))
    assert label["split"] == "SWE Bench" and "appears twice" in label["conversion_notes"][0]
    log = next(e for s in spans for e in s["events"] if e["name"] == "log")  # its resource differs from the span's
    keys = {a["key"]: a["value"] for a in log["attributes"]}
    assert keys["log.resource.service.name"] == {"stringValue": "unknown_service"} and "log.scope.pat.app" in keys
