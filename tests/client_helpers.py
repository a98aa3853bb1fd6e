"""What the per-client tests share: an example agent run under `opentelemetry-instrument`, then
the analyzer CLI over its file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def instrumented_run(tmp_path: Path, example: str, **env_vars: str) -> tuple[Path, dict[str, Any]]:
    """Run examples/<example>.py under opentelemetry-instrument with `<example>:handle_ticket` as
    entry point; (the trace file, the analyzer's JSON report)."""
    traces = tmp_path / f"{example}.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_", "ANTHROPIC_"))}
    env.update({"OTEL_TRACES_EXPORTER": "agent_trace_file", "OTEL_METRICS_EXPORTER": "none",
                "OTEL_LOGS_EXPORTER": "none", "OTEL_AGENT_TRACE_FILE": str(traces),
                "OTEL_AGENT_TRACE_ENTRYPOINTS": f"{example}:handle_ticket", **env_vars})
    run = subprocess.run([str(BIN / "opentelemetry-instrument"), sys.executable, str(ROOT / "examples" / f"{example}.py")],
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "2 of 4 tickets answered" in run.stdout
    report = subprocess.run([str(BIN / "otel-agent-trace"), "analyze", "--format", "json", str(traces)],
                            capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    return traces, json.loads(report.stdout)


def spans_of(path: Path) -> list[dict[str, Any]]:
    """Every span of an OTLP JSON Lines file, with its scope name and attributes as a dict."""
    spans = []
    for line in path.read_text().splitlines():
        for resource in json.loads(line).get("resourceSpans", ()):
            for scope in resource.get("scopeSpans", ()):
                for span in scope.get("spans", ()):
                    values = {a["key"]: next(iter(a["value"].values()), None) for a in span.get("attributes", ())}
                    spans.append({**span, "scope": scope.get("scope", {}).get("name"), "attrs": values})
    return spans


def assert_refund_tree(traced: Any, chat: str) -> list[Any]:
    """The healthy refund ticket's tree (lookup, calculate, answer), each tool linked to the step
    that decided it and read by the next: what every client must record alike. Its steps."""
    from span_helpers import attrs, hexid

    [run] = traced.runs()
    steps = traced.children(run)
    assert [[c.name for c in traced.children(s)] for s in steps] == [
        [chat, "execute_tool lookup_order"],
        [chat, "execute_tool calculate_refund"],
        [chat],
    ]
    lookup, calc = traced.named("execute_tool")
    assert [link.context.span_id for link in lookup.links] == [steps[0].context.span_id]
    assert attrs(steps[1])["agent_trace.depends_on"] == (hexid(lookup),)
    assert attrs(steps[2])["agent_trace.depends_on"] == (hexid(calc),)
    return steps
