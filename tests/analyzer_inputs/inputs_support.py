"""Builders of OTLP JSON for the input tests (a unique module name: no conftest clash)."""

from __future__ import annotations

import json
from typing import Any

from span_helpers import otlp_value


def span(trace: str, sid: str, parent: str | None, name: str, start: int, attrs: dict[str, Any] | None = None,
         status: int = 0, events: list | None = None) -> dict[str, Any]:
    out = {"traceId": trace, "spanId": sid, "name": name, "kind": 1,
           "startTimeUnixNano": str(1_700_000_000_000_000_000 + start * 1_000_000),
           "endTimeUnixNano": str(1_700_000_000_000_000_000 + start * 1_000_000 + 500_000),
           "attributes": [{"key": k, "value": otlp_value(v)} for k, v in (attrs or {}).items()],
           "events": events or [], "status": {"code": status}}
    if parent:
        out["parentSpanId"] = parent
    return out


def doc(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "t"}}]},
                               "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}


def line(spans: list[dict[str, Any]]) -> str:
    return json.dumps(doc(spans)) + "\n"


def failing_run(n: int) -> list[dict[str, Any]]:
    """A run of our conventions whose step-0 tool returns [] and whose run fails: origin = tool."""
    t = f"{n + 1:032x}"
    run, s0, tool, s1 = (f"{n + 1:08x}{k:08x}" for k in (1, 2, 3, 4))
    return [
        span(t, tool, s0, "execute_tool lookup_order", 2, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order",
            "gen_ai.tool.call.result": "[]", "agent_trace.tool.outcome": "empty_result", "agent_trace.step.index": 0,
            "agent_trace.depends_on": [s0], "agent_trace.depends_on.relations": ["decided_by"]}),
        span(t, s0, run, "agent_step 0", 1, {"agent_trace.step.index": 0, "agent_trace.step.kind": "tool_call"}),
        span(t, s1, run, "agent_step 1", 3, {"agent_trace.step.index": 1, "agent_trace.step.kind": "final",
                                             "agent_trace.depends_on": [tool],
                                             "agent_trace.depends_on.relations": ["consumes"]}),
        span(t, run, None, "invoke_agent support", 0, {"gen_ai.operation.name": "invoke_agent",
                                                       "gen_ai.agent.name": "support",
                                                       "agent_trace.lifecycle.phase": "critical",
                                                       "agent_trace.error.type": "run_exception"}, status=2),
    ]


def ids(n: int) -> dict[str, str]:
    return {k: f"{n + 1:08x}{i:08x}" for i, k in enumerate(("run", "s0", "tool", "s1"), start=1)}


def healthy_run(n: int) -> list[dict[str, Any]]:
    """`failing_run` whose lookup finds the order and whose run ends well: nothing to report."""
    spans = failing_run(n)
    tool, s0, s1, root = (dict(s) for s in spans)
    tool["attributes"] = [a for a in tool["attributes"] if a["key"] not in ("gen_ai.tool.call.result", "agent_trace.tool.outcome")]
    tool["attributes"] += [{"key": "gen_ai.tool.call.result", "value": {"stringValue": '{"order": "A-1", "amount": 12}'}},
                           {"key": "agent_trace.tool.outcome", "value": {"stringValue": "ok"}}]
    root["attributes"] = [a for a in root["attributes"] if not a["key"].startswith("agent_trace.")]
    root["status"] = {}
    return [tool, s0, s1, root]
