"""A case of the regression set: one run's spans (redacted) and a small metadata file.

`DIR/NAME/trace.jsonl` holds the run's spans only, as OTLP JSON Lines; `DIR/NAME/case.json` its
name, tier, original trace id, input hash, failure signature and the analyzer's finding at save
time (its JSON report's run entry), plus the case's own assertions (`"assert"`, edited by hand).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from otel_agent_trace.semconv import CONTEXT_NEW_MESSAGES

TIERS = ("core", "regular", "explore")
CASE_FILE, TRACE_FILE = "case.json", "trace.jsonl"


class RegressError(Exception):
    """Unusable input or set: the CLI prints it and exits 2."""


@dataclass
class Case:
    name: str
    tier: str
    directory: str
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def trace(self) -> str:
        return os.path.join(self.directory, TRACE_FILE)

    @property
    def signature(self) -> list[str] | None:
        return self.meta.get("signature")


def analyzed(paths: list[str], trace_prefix: str | None = None, rules: list | None = None) -> list[tuple[Any, Any]]:
    """(finding, its report summary) of each run in `paths`: the analyzer's public API and JSON
    contract (`summary.data` is the run's entry of `analyze --format json`)."""
    from otel_agent_trace.analyzer.analysis import iter_findings
    from otel_agent_trace.analyzer.report.reduce import summarize

    inputs: list[Any] = []
    out = [(f, summarize(f)) for f in iter_findings(paths, inputs=inputs, rules=rules, trace_prefix=trace_prefix)]
    for item in inputs:
        if item.error:
            raise RegressError(f"{item.path}: {item.error}")
    out.sort(key=lambda pair: pair[1].key)
    return out


def failure_signature(run: dict[str, Any]) -> list[str] | None:
    """The analyzer's failure signature of a failed run (rules, origin error type, where, bug class)."""
    from otel_agent_trace.analyzer.report.fleet import signature

    return list(signature(run)) if run["status"] == "failed" else None


def input_hash(run: Any) -> str | None:
    """sha256 (16 hex) of the run's first user message: the task, whoever ran it."""
    from otel_agent_trace.semconv import CONTEXT_MESSAGE_HASHES

    for step in run.steps:
        for item in orjson.loads(step.attributes.get(CONTEXT_NEW_MESSAGES) or "[]"):
            message = item.get("message") or {}
            if message.get("role") == "user":
                return hashlib.sha256(str(message.get("content")).encode()).hexdigest()[:16]
        hashes = step.attributes.get(CONTEXT_MESSAGE_HASHES)
        if hashes and len(hashes) > 1:
            return str(hashes[1])
    return None


def run_name(run: Any) -> str | None:
    from otel_agent_trace.semconv import RUN_NAME

    return run.root.attr(RUN_NAME) or run.agent


def replay_of(run: Any) -> str | None:
    """The trace id a replayed run replays (`agent_trace.replay.of`: on the resource when the
    replay's detector is enabled, on the run's span always), else None."""
    from otel_agent_trace.semconv import REPLAY_OF

    return run.root.resource.get(REPLAY_OF) or run.root.attr(REPLAY_OF)


def save(trace_id: str, files: list[str], to: str, tier: str = "regular", name: str | None = None) -> Case:
    """Extract one run of `files` into the set at `to` (see module docstring)."""
    from otel_agent_trace.minimizer.trace_out import write_run

    if tier not in TIERS:
        raise RegressError(f"--tier must be one of {', '.join(TIERS)}")
    found = analyzed(files, trace_prefix=trace_id.lower())
    if not found:
        raise RegressError(f"no agent run with trace id {trace_id} in {', '.join(files)}")
    if len(found) > 1:
        raise RegressError(f"{len(found)} runs match {trace_id}: give more of the trace id")
    finding, report = found[0][0], found[0][1].data
    run = finding.run
    name = name or f"{report['status']}-{(report.get('origin') or {}).get('tool') or run_name(run) or 'run'}-{run.trace_id[:8]}"
    if not re.fullmatch(r"[\w.-]+", name):
        raise RegressError(f"--name {name!r}: letters, digits, '.', '_' and '-' only")
    directory = os.path.join(to, name)
    os.makedirs(directory, exist_ok=True)
    write_run(os.path.join(directory, TRACE_FILE), run, redact=_redactor())
    meta = {"name": name, "tier": tier, "trace_id": run.trace_id, "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "run_name": run_name(run), "input_hash": input_hash(run), "signature": failure_signature(report),
            "finding": {k: report.get(k) for k in ("status", "steps", "origin", "critical", "bug_class", "rules")},
            "assert": {}}
    with open(os.path.join(directory, CASE_FILE), "w", encoding="utf-8") as handle:
        json.dump(meta, handle, indent=2)
        handle.write("\n")
    return Case(name, tier, directory, meta)


def _redactor() -> Any:
    from otel_agent_trace import config
    from otel_agent_trace.processor.redaction import Redactor

    settings = config.current()
    return Redactor(key=settings.redact_key) if settings.redact else None


def load_cases(directory: str) -> list[Case]:
    if not os.path.isdir(directory):
        raise RegressError(f"{directory}: not a directory")
    cases = []
    for entry in sorted(os.listdir(directory)):
        path = os.path.join(directory, entry, CASE_FILE)
        if not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as handle:
                meta = json.load(handle)
        except (OSError, ValueError) as exc:
            raise RegressError(f"{path}: {exc}") from None
        tier = meta.get("tier", "regular")
        if tier not in TIERS:
            raise RegressError(f"{path}: tier {tier!r} is not one of {', '.join(TIERS)}")
        cases.append(Case(meta.get("name", entry), tier, os.path.join(directory, entry), meta))
    return cases
