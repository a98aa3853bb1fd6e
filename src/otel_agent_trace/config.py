"""One configuration object, fed by keywords or `OTEL_AGENT_TRACE_*` environment variables.

Modelled on OpenInference's `TraceConfig`: a keyword given in code wins, else the environment
variable named after it (upper-cased, prefixed), else the default. Every field here is both a
keyword of `AgentTraceInstrumentor().instrument(...)` and an environment variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

ENV_PREFIX = "OTEL_AGENT_TRACE_"
_GENAI_CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_TRUE = {"1", "true", "yes", "on", "span_only", "span_and_event", "event_only"}
_FALSE = {"0", "false", "no", "off", "no_content", "none", ""}


def _split_list(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(",") if p.strip())
    return tuple(value)


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"not a boolean: {value!r}")


@dataclass(frozen=True)
class AgentTraceConfig:
    """Settings of the instrumentation (see docs/configuration.md for each one)."""

    file: str = "agent-traces.jsonl"
    file_max_bytes: int = 0  # 0 = never rotate `file` (see exporter.py)
    file_backups: int = 5
    file_failed: str | None = None  # failing traces go here instead, with their own retention
    file_failed_backups: int = 50
    capture_content: bool = True
    max_attribute_bytes: int = 16384
    entrypoints: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    loop_threshold: int = 3
    max_steps: int = 0  # 0 = unlimited
    max_seconds: float = 0.0
    max_tokens: int = 0
    budget_action: str = "record"  # record | raise
    final_schema: str | None = None
    redact: bool = True
    redact_key: str | None = None
    redact_rules: str | None = None
    sample_ratio: float = 1.0
    sampler_max_spans: int = 100_000
    sampler_max_bytes: int = 64 * 1024 * 1024  # buffered span text, see docs/processor.md
    sampler_decision_seconds: float = 300.0  # decide a trace whose local root has not ended by then
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: Any) -> "AgentTraceConfig":
        """Build from keywords, then `OTEL_AGENT_TRACE_<NAME>`, then defaults."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name == "extra":
                continue
            if f.name in overrides and overrides[f.name] is not None:
                raw: Any = overrides.pop(f.name)
            else:
                overrides.pop(f.name, None)
                raw = env.get(ENV_PREFIX + f.name.upper())
                if raw is None and f.name == "capture_content":
                    raw = env.get(_GENAI_CAPTURE_ENV)
                if raw is None or raw == "":
                    continue
            values[f.name] = _convert(f.name, f.default, raw)
        if values.get("budget_action", "record") not in ("record", "raise"):
            raise ValueError("budget_action must be 'record' or 'raise'")
        return cls(**values, extra=dict(overrides))


def _convert(name: str, default: Any, raw: Any) -> Any:
    if name in ("entrypoints", "tools"):
        return _split_list(raw)
    if isinstance(default, bool):
        return _to_bool(raw)
    if isinstance(default, int):
        return int(raw)
    if isinstance(default, float):
        return float(raw)
    return str(raw) if not isinstance(raw, str) else raw.strip()
