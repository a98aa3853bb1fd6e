"""A builder of hand-written OTLP JSON traces in our attribute conventions, for shapes the demo
cannot produce (foreign traces, data edges, ...)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from span_helpers import otlp_value


class TraceBuilder:
    """Spans of one trace, in our attribute conventions; `write(path)` emits one OTLP JSON line."""

    _ids = itertools.count(1)

    def __init__(self, trace_id: str | None = None):
        self.trace_id = trace_id or f"{next(self._ids):032x}"
        self.spans: list[dict[str, Any]] = []
        self.t = 1_700_000_000_000_000_000

    def span(self, name: str, parent: str | None = None, *, dur_ms: float = 10, status: int = 0,
             message: str = "", events: list[dict] | None = None, **attrs: Any) -> str:
        span_id = f"{next(self._ids):016x}"
        start = self.t
        self.t += int(dur_ms * 1e6)
        self.spans.append({
            "traceId": self.trace_id, "spanId": span_id, **({"parentSpanId": parent} if parent else {}),
            "name": name, "kind": 1, "startTimeUnixNano": str(start), "endTimeUnixNano": str(self.t),
            "attributes": [{"key": k.replace("__", "."), "value": otlp_value(v)} for k, v in attrs.items()],
            "events": events or [], "status": {"code": status, **({"message": message} if message else {})},
        })
        return span_id

    def set(self, span_id: str, **attrs: Any) -> None:
        for s in self.spans:
            if s["spanId"] == span_id:
                s["attributes"] += [{"key": k.replace("__", "."), "value": otlp_value(v)} for k, v in attrs.items()]
                s["endTimeUnixNano"] = str(self.t)

    def doc(self) -> dict[str, Any]:
        return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "t"}, "spans": self.spans}]}]}


def write(path: Path, *builders: TraceBuilder) -> Path:
    path.write_text("".join(json.dumps(b.doc()) + "\n" for b in builders))
    return path


def run_span(b: TraceBuilder, name: str = "agent", **attrs: Any) -> str:
    return b.span(f"invoke_agent {name}", gen_ai__operation__name="invoke_agent", gen_ai__agent__name=name, **attrs)


def step(b: TraceBuilder, run: str, index: int, **attrs: Any) -> str:
    return b.span(f"agent_step {index}", run, agent_trace__step__index=index, **attrs)


def tool(b: TraceBuilder, parent: str, index: int, name: str, args: str, result: str | None, **attrs: Any) -> str:
    extra = {"gen_ai__tool__call__result": result} if result is not None else {}
    return b.span(f"execute_tool {name}", parent, gen_ai__operation__name="execute_tool", gen_ai__tool__name=name,
                  agent_trace__step__index=index, gen_ai__tool__call__arguments=args, **extra, **attrs)
