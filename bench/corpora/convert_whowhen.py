"""Convert a Who&When subset (github.com/mingyin1/Agents_Failure_Attribution) to OTLP/JSON Lines.

Why: /work/shared/benchmarks/whowhen-ag (Algorithm-Generated) was made by a converter that is not in
this repository; the held-out Hand-Crafted subset (long Magentic-One logs) must be converted in exactly
the same format to check that rules tuned on Algorithm-Generated generalise. This script reproduces that
format (the format section of whowhen-ag/README.md); on Algorithm-Generated its output equals the shared
copy line for line (tests/test_convert_whowhen.py checks a slice).

    python bench/corpora/convert_whowhen.py --subset Algorithm-Generated|Hand-Crafted --out DIR
                                    [--repo GIT_DIR] [--commit 3d9d568]

Reads the source with `git show` from a git mirror (no work tree needed) and writes DIR/traces.jsonl.gz,
DIR/labels.jsonl and DIR/README.md (`--gzip-mtime 1796459718` makes the AG .gz byte-identical too).
Standard library only. Choices the AG copy cannot confirm (nothing there exercises them): a `user_turn`
(speaker `human`/`user`; only Hand-Crafted has one) is kind INTERNAL with `input.value` and the `bench.*`
attributes only; an int `level` (Hand-Crafted) is an intValue, a missing one no attribute;
`agent_matches_step_speaker` compares as the README scores agents (Hand-Crafted's `Websurfer` matches).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
from collections import Counter
from typing import Any

from convert_trail import any_value  # the same AnyValue typing (bench/corpora is the script's own folder)

DEFAULT_REPO = "/work/.mirror/mingyin1+Agents_Failure_Attribution/repo"
DEFAULT_COMMIT = "3d9d568"
SUBSETS = {"Algorithm-Generated": "CaptainAgent", "Hand-Crafted": "Magentic-One"}
DATASET = "who_and_when"
SCOPE = "bench_convert.who_and_when"
BASE_NS = 1_735_689_600 * 10**9  # 2025-01-01T00:00:00Z
SECOND = 10**9
MICRO = 1_000
KIND_INTERNAL, KIND_CLIENT = 1, 3
USER_SPEAKERS = {"human", "user"}


def git_show(repo: str, commit: str, path: str) -> bytes:
    return subprocess.run(["git", "--git-dir", repo, "show", f"{commit}:{path}"],
                          check=True, capture_output=True).stdout


def list_sources(repo: str, commit: str, subset: str) -> list[str]:
    """The subset's `*.json` paths, in numeric order of their names (1.json, 2.json, ..., 10.json)."""
    out = subprocess.run(["git", "--git-dir", repo, "ls-tree", "--name-only", commit, f"Who&When/{subset}/"],
                         check=True, capture_output=True, text=True).stdout.split("\n")
    paths = [p for p in out if p.endswith(".json")]

    def key(p: str) -> tuple[int, str]:
        stem = os.path.basename(p)[:-5]
        return (int(stem), "") if stem.isdigit() else (1 << 30, stem)

    return sorted(paths, key=key)


def _id(text: str, nbytes: int) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[: 2 * nbytes]


def _attrs(pairs: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in pairs if v is not None]


def speaker_of(message: dict[str, Any]) -> str:
    """Raw speaker: `name`, else `role` (AG2 messages with role `user` from experts are agent turns)."""
    return str(message.get("name") or message.get("role") or "")


def agent_of(speaker: str) -> str:
    """The speaker without its parenthetical: `Orchestrator (-> WebSurfer)` -> `Orchestrator`."""
    return re.sub(r"\s*\([^)]*\)", "", speaker).strip() or speaker


def norm_agent(name: Any) -> str:
    """The README's comparison: lower case, parenthesised text and non-letters dropped."""
    return re.sub(r"[^a-z]", "", re.sub(r"\([^)]*\)", "", str(name or "")).lower())


def _span(trace_id: str, span_id: str, parent: str | None, name: str, kind: int, start: int, end: int,
          attributes: list[dict[str, Any]]) -> dict[str, Any]:
    span: dict[str, Any] = {"traceId": trace_id, "spanId": span_id}
    if parent:
        span["parentSpanId"] = parent
    span.update({"name": name, "kind": kind, "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
                 "attributes": attributes, "events": [], "links": [], "status": {"code": 0}})
    return span


def convert_record(source_file: str, subset: str, record: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One source record -> (OTLP ExportTraceServiceRequest, label line)."""
    system = SUBSETS[subset]
    key = f"{DATASET}/{source_file}"
    trace_id, root_id = _id(key, 16), _id(key + "/root", 8)
    history = record["history"]
    prompts = record.get("system_prompt") or {}
    n = len(history)
    spans = [_span(trace_id, root_id, None, f"invoke_agent {system}", KIND_INTERNAL, BASE_NS,
                   BASE_NS + n * SECOND + MICRO, _attrs([
                       ("gen_ai.operation.name", "invoke_agent"), ("gen_ai.agent.name", system),
                       ("input.value", record.get("question")), ("bench.task_id", record.get("question_ID")),
                       ("bench.task_level", record.get("level"))]))]
    step_ids: list[str] = []
    for i, message in enumerate(history):
        speaker = speaker_of(message)
        role = message.get("role")
        span_id = _id(f"{key}/step/{i}", 8)
        step_ids.append(span_id)
        start, end = BASE_NS + i * SECOND + MICRO, BASE_NS + (i + 1) * SECOND
        tail = [("bench.step_index", i), ("bench.speaker", speaker), ("bench.message_role", role)]
        content = message.get("content")
        if speaker.lower() in USER_SPEAKERS:
            spans.append(_span(trace_id, span_id, root_id, "user_turn", KIND_INTERNAL, start, end,
                               _attrs([("input.value", content), *tail])))
            continue
        agent = agent_of(speaker)
        parts: list[dict[str, Any]] = [{"type": "text", "content": content if isinstance(content, str)
                                        else json.dumps(content, ensure_ascii=False)}]
        # no Who&When message carries tool calls (only content/role/name), so no `tool_call` part
        output = json.dumps([{"role": "assistant", "parts": parts}], ensure_ascii=False)
        prompt = prompts.get(speaker) if isinstance(prompts, dict) else None
        instructions = (json.dumps([{"type": "text", "content": prompt}], ensure_ascii=False)
                        if prompt else None)  # an empty prompt is left out
        spans.append(_span(trace_id, span_id, root_id, f"chat {agent}", KIND_CLIENT, start, end, _attrs([
            ("gen_ai.operation.name", "chat"), ("gen_ai.agent.name", agent),
            ("gen_ai.output.messages", output), ("gen_ai.system_instructions", instructions), *tail])))
    doc = {"resourceSpans": [{
        "resource": {"attributes": _attrs([("service.name", system.lower()), ("bench.dataset", DATASET),
                                           ("bench.subset", subset), ("bench.source_file", source_file)])},
        "scopeSpans": [{"scope": {"name": SCOPE}, "spans": spans}]}]}

    step = int(str(record["mistake_step"]).strip())
    in_range = 0 <= step < n
    step_speaker = agent_of(speaker_of(history[step])) if in_range else None
    label = {"trace_id": trace_id, "source_file": source_file, "subset": subset,
             "question_id": record.get("question_ID"), "n_steps": n, "task_answer": record.get("ground_truth"),
             "gold": {"mistake_step": step, "mistake_agent": record.get("mistake_agent"),
                      "span_id": step_ids[step] if in_range else None,
                      "mistake_reason": record.get("mistake_reason"),
                      # Hand-Crafted calls it `mistake_type`; one Algorithm-Generated record `labels`
                      "mistake_type": record.get("mistake_type", record.get("labels")),
                      "step_speaker": step_speaker,
                      "agent_matches_step_speaker": (step_speaker is not None and norm_agent(step_speaker)
                                                     == norm_agent(record.get("mistake_agent")))}}
    return doc, label


def write_readme(out_dir: str, subset: str, repo: str, commit: str, labels: list[dict[str, Any]],
                 n_spans: int, kinds: Counter) -> None:
    steps = sorted(lab["n_steps"] for lab in labels)
    agents = Counter(lab["gold"]["mistake_agent"] for lab in labels)
    mismatched = sum(not lab["gold"]["agent_matches_step_speaker"] for lab in labels)
    text = f"""# Who&When, {subset} subset ({len(labels)} failed multi-agent logs), as OTLP/JSON Lines

Made by `bench/corpora/convert_whowhen.py --subset {subset}` from `Who&When/{subset}/*.json` of
github.com/mingyin1/Agents_Failure_Attribution at commit {commit} (read from `{repo}`;
MIT, Copyright (c) 2025 Ming Yin). Same format as /work/shared/benchmarks/whowhen-ag (see its README):
root `invoke_agent {SUBSETS[subset]}`, one span per message (`chat {{agent}}` / `user_turn`), ids from
sha256 of `{DATASET}/<source path>`, synthetic times (2025-01-01T00:00:00Z + 1 s per message).

* `traces.jsonl.gz`: {len(labels)} traces, {n_spans} spans ({", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))})
* `labels.jsonl`: one gold record per trace (`gold.mistake_step`, `gold.mistake_agent`, `gold.span_id`, ...)
* steps per log: min {steps[0]}, median {steps[len(steps) // 2]}, max {steps[-1]}, total {sum(steps)}
* gold agents ({len(agents)} distinct): {", ".join(f"{k} {v}" for k, v in agents.most_common(10))}{", ..." if len(agents) > 10 else ""}
* gold agent differs from the gold step's speaker (normalised): {mismatched}
"""
    with open(os.path.join(out_dir, "README.md"), "w", encoding="utf-8") as handle:
        handle.write(text)


def convert(subset: str, out_dir: str, repo: str = DEFAULT_REPO, commit: str = DEFAULT_COMMIT,
            sources: list[str] | None = None, gzip_mtime: int = 0) -> tuple[list[str], list[dict[str, Any]]]:
    """Convert `sources` (default: the whole subset); write the three files when `out_dir` is given.
    Returns the trace lines (without newline) and the labels."""
    lines: list[str] = []
    labels: list[dict[str, Any]] = []
    kinds: Counter = Counter()
    n_spans = 0
    for path in sources or list_sources(repo, commit, subset):
        doc, label = convert_record(path, subset, json.loads(git_show(repo, commit, path)))
        lines.append(json.dumps(doc, ensure_ascii=False, separators=(",", ":")))
        labels.append(label)
        for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            n_spans += 1
            kinds[span["name"].split(" ")[0]] += 1
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        # written as gzip.open(..., "wt") writes (line by line through a text layer): with the shared
        # copy's header time (--gzip-mtime 1796459718) the .gz is byte-identical to it
        with open(os.path.join(out_dir, "traces.jsonl.gz"), "wb") as raw, \
                gzip.GzipFile("traces.jsonl", "wb", fileobj=raw, mtime=gzip_mtime) as packed, \
                io.TextIOWrapper(packed, encoding="utf-8") as handle:
            handle.writelines(line + "\n" for line in lines)
        with open(os.path.join(out_dir, "labels.jsonl"), "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(lab) + "\n" for lab in labels)
        write_readme(out_dir, subset, repo, commit, labels, n_spans, kinds)
    return lines, labels


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--subset", required=True, choices=sorted(SUBSETS))
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--repo", default=DEFAULT_REPO, help="git directory of the Who&When mirror")
    ap.add_argument("--commit", default=DEFAULT_COMMIT)
    ap.add_argument("--gzip-mtime", type=int, default=0, help="time in the gzip header (default 0: reproducible)")
    args = ap.parse_args(argv)
    lines, labels = convert(args.subset, args.out, args.repo, args.commit, gzip_mtime=args.gzip_mtime)
    print(f"{args.subset}: {len(lines)} traces, {sum(lab['n_steps'] for lab in labels)} steps -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
