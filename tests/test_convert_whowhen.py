"""bench/corpora/convert_whowhen.py reproduces the shared Who&When conversion: two Algorithm-Generated logs
read from the git mirror convert to exactly the trace and label lines of
/work/shared/benchmarks/whowhen-ag; one Hand-Crafted (Magentic-One) log follows the README's rules
(`Orchestrator (-> WebSurfer)` -> agent `Orchestrator`, the human's turn a `user_turn`)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path("/work/shared/benchmarks/whowhen-ag")
AG_SLICE = ["Who&When/Algorithm-Generated/1.json", "Who&When/Algorithm-Generated/30.json"]


def _load():
    sys.path.insert(0, str(ROOT / "bench" / "corpora"))  # it imports its sibling, convert_trail
    spec = importlib.util.spec_from_file_location("convert_whowhen", ROOT / "bench" / "corpora" / "convert_whowhen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


convert_whowhen = _load()
REPO = convert_whowhen.DEFAULT_REPO


def _mirror_has_commit() -> bool:
    if not os.path.isdir(REPO):
        return False
    done = subprocess.run(["git", "--git-dir", REPO, "cat-file", "-e", f"{convert_whowhen.DEFAULT_COMMIT}^{{commit}}"],
                          capture_output=True)
    return done.returncode == 0


needs_mirror = pytest.mark.skipif(not _mirror_has_commit(),
                                  reason=f"Who&When git mirror (commit {convert_whowhen.DEFAULT_COMMIT}) not at {REPO}")


@needs_mirror
@pytest.mark.skipif(not (SHARED / "traces.jsonl.gz").exists(), reason=f"shared Who&When AG conversion not at {SHARED}")
def test_algorithm_generated_slice_equals_shared_copy(tmp_path):
    # (1.json: the first line, with system prompts; 30.json: the one record whose type is in `labels`)
    lines, labels = convert_whowhen.convert("Algorithm-Generated", str(tmp_path), sources=AG_SLICE)
    want_lines: dict[str, str] = {}
    with gzip.open(SHARED / "traces.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            source = next(a["value"]["stringValue"] for a in json.loads(line)["resourceSpans"][0]["resource"]["attributes"]
                          if a["key"] == "bench.source_file")
            if source in AG_SLICE:
                want_lines[source] = line.rstrip("\n")
    want_labels = {lab["source_file"]: lab for lab in map(json.loads, open(SHARED / "labels.jsonl", encoding="utf-8"))}
    assert [want_lines[s] for s in AG_SLICE] == lines  # byte for byte
    assert [want_labels[s] for s in AG_SLICE] == labels
    # and the files written are those lines
    with gzip.open(tmp_path / "traces.jsonl.gz", "rt", encoding="utf-8") as handle:
        assert handle.read() == "".join(line + "\n" for line in lines)
    assert [json.loads(x) for x in open(tmp_path / "labels.jsonl", encoding="utf-8")] == labels
    assert "2 traces" in (tmp_path / "README.md").read_text(encoding="utf-8")


@needs_mirror
def test_hand_crafted_follows_the_readme_rules():
    source = "Who&When/Hand-Crafted/20.json"  # gold step 3 is `Orchestrator (-> WebSurfer)`, gold agent WebSurfer
    (line,), (label,) = convert_whowhen.convert("Hand-Crafted", "", sources=[source])
    doc = json.loads(line)
    resource = {a["key"]: a["value"]["stringValue"] for a in doc["resourceSpans"][0]["resource"]["attributes"]}
    assert resource == {"service.name": "magentic-one", "bench.dataset": "who_and_when",
                        "bench.subset": "Hand-Crafted", "bench.source_file": source}
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    root, steps = spans[0], spans[1:]
    attrs = [{a["key"]: next(iter(a["value"].values())) for a in s["attributes"]} for s in spans]
    assert root["name"] == "invoke_agent Magentic-One" and attrs[0]["bench.task_level"] == "3"  # (an int in the source)
    assert len(steps) == label["n_steps"] == 67
    assert steps[0]["name"] == "user_turn" and attrs[1]["bench.speaker"] == "human" and "input.value" in attrs[1]
    assert "gen_ai.agent.name" not in attrs[1]
    gold = attrs[1 + 3]
    assert steps[3]["name"] == "chat Orchestrator" and gold["gen_ai.agent.name"] == "Orchestrator"
    assert gold["bench.speaker"] == gold["bench.message_role"] == "Orchestrator (-> WebSurfer)"
    assert "gen_ai.system_instructions" not in gold  # Magentic-One logs carry no system prompts
    assert label["gold"] == {**label["gold"], "mistake_step": 3, "mistake_agent": "WebSurfer",
                             "span_id": steps[3]["spanId"], "step_speaker": "Orchestrator",
                             "agent_matches_step_speaker": False}
    assert all(a["bench.step_index"] == str(i) for i, a in enumerate(attrs[1:]))
    assert {s["parentSpanId"] for s in steps} == {root["spanId"]}
