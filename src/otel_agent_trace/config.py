"""One configuration object, fed by keywords or `OTEL_AGENT_TRACE_*` environment variables.

Modelled on OpenInference's `TraceConfig`: a keyword given in code wins, else the environment
variable named after it (upper-cased, prefixed), else the default. Every field here is both a
keyword of `AgentTraceInstrumentor().instrument(...)` and an environment variable; a keyword
that names no field is a `TypeError`.

One object per process: `instrument()` builds it once and every stage reads that one through
`current()`: the recorder's handler, the span processor, the `agent_trace_file` exporter. A
stage built with no instrumentor reads the environment as it is then. Under `opentelemetry-instrument` the exporter is built before
the instrumentor, from the same environment, so both read equal settings.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, fields
from typing import Any, Mapping

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
    # built-in detector kinds whose values redaction leaves alone, e.g. "US_SSN,UK_NINO" (vocabulary.PII_KINDS)
    redact_disabled: tuple[str, ...] = ()
    sample_ratio: float = 1.0
    sampler_max_spans: int = 100_000
    sampler_max_bytes: int = 64 * 1024 * 1024  # buffered span text, see docs/processor.md
    sampler_decision_seconds: float = 300.0  # decide a trace whose local root has not ended by then
    run_idle_seconds: float = 30.0  # an implicit run that answered ends after this long idle
    coexist: str = "nest"  # nest | adopt | off: another instrumentation's chat span on the same call
    replay: str | None = None  # traces.jsonl[#trace_id]: answer LLM calls from this recorded run (docs/replay.md)
    replay_mode: str = "strict"  # strict | fallthrough: on divergence, stop or go on live
    replay_tools: str = "live"  # live | recorded: decorated and named tools answered from the recording
    cost: bool = True  # agent_trace.usage.cost_usd on chat spans (off: no pricing, the library never loads)
    prices: str | None = None  # a price file (JSON/YAML, model -> USD per million tokens) used before genai-prices
    # the analyzer's reading of `gen_ai.evaluation.result` (analyzer/evaluations.py): labels that fail a run,
    # and the lowest passing score ("0.5" for every evaluation, or "relevance=0.7,correctness=1"; none by default)
    evaluation_fail_labels: tuple[str, ...] = ("fail", "incorrect", "not_relevant")
    evaluation_threshold: str | None = None
    native: bool = True  # the analyzer reads OTLP JSON with its native reader where built (false: the Python reader)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: Any) -> "AgentTraceConfig":
        """Build from keywords, then `OTEL_AGENT_TRACE_<NAME>`, then defaults."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(k for k in overrides if k not in names)
        if unknown:
            raise TypeError(f"unknown otel-agent-trace setting(s): {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(names))})")
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
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
        if values.get("evaluation_threshold") is not None:
            parse_thresholds(values["evaluation_threshold"], ENV_PREFIX + "EVALUATION_THRESHOLD: ")
        if values.get("redact_disabled"):
            from otel_agent_trace.vocabulary import PII_KINDS

            values["redact_disabled"] = tuple(k.strip().upper() for k in values["redact_disabled"])
            unknown = sorted(set(values["redact_disabled"]) - set(PII_KINDS))
            if unknown:
                raise ValueError(f"redact_disabled: unknown detector(s) {', '.join(unknown)} (known: {', '.join(PII_KINDS)})")
        for name, allowed in (("budget_action", ("record", "raise")), ("coexist", ("nest", "adopt", "off")),
                              ("replay_mode", ("strict", "fallthrough")), ("replay_tools", ("live", "recorded"))):
            if values.get(name, getattr(cls, name)) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}")
        return cls(**values)

    @classmethod
    def setting(cls, name: str, environ: Mapping[str, str] | None = None) -> Any:
        """One field from `OTEL_AGENT_TRACE_<NAME>`, else its default, read alone; a value that does
        not convert is the default too. For the analyzer (analyzer/settings.py), which reads a few
        fields and is not to be failed by a bad value meant for the recorder."""
        default = next(f.default for f in fields(cls) if f.name == name)
        raw = (os.environ if environ is None else environ).get(ENV_PREFIX + name.upper())
        if raw is None or not raw.strip():
            return default
        try:
            return _convert(name, default, raw)
        except ValueError:
            return default


_current: AgentTraceConfig | None = None
_current_lock = threading.Lock()


def current() -> AgentTraceConfig:
    """The process's configuration: the one `instrument()` set, else the environment's now."""
    config = _current
    return config if config is not None else AgentTraceConfig.from_env()


def set_current(config: AgentTraceConfig | None) -> None:
    global _current
    with _current_lock:
        _current = config


def _convert(name: str, default: Any, raw: Any) -> Any:
    if name in ("entrypoints", "tools", "evaluation_fail_labels", "redact_disabled"):
        return _split_list(raw)
    if isinstance(default, bool):
        return _to_bool(raw)
    if isinstance(default, int):
        return int(raw)
    if isinstance(default, float):
        return float(raw)
    return str(raw) if not isinstance(raw, str) else raw.strip()


def parse_thresholds(value: Any, where: str = "") -> dict[str, float]:
    """Evaluation thresholds: a number (every evaluation: key "*"), "name=value,..." text, or a
    {name: value} map (a rules file's) -> {name: lowest passing score}. Raises ValueError."""
    if value is None or value == "":
        return {}
    if isinstance(value, bool):
        raise ValueError(f"{where}evaluation_threshold must be a number or name=number pairs, not {value!r}")
    if isinstance(value, (int, float)):
        return {"*": float(value)}
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, str):
        items = []
        for part in value.split(","):
            name, sep, number = part.strip().rpartition("=")
            items.append((name.strip() if sep else "*", number.strip()))
    else:
        raise ValueError(f"{where}evaluation_threshold must be a number or name=number pairs, not {value!r}")
    out = {}
    for name, number in items:
        try:
            if isinstance(number, bool):
                raise ValueError
            out[str(name)] = float(number)
        except (TypeError, ValueError):
            raise ValueError(f"{where}evaluation_threshold: {number!r} for {name!r} is not a number") from None
    return out
