"""The recorder: the one object providers and tool surfaces talk to.

It owns the tracer and the configuration; runs, steps and tools are recorded by the functions of
`runs`, `steps` and `tools`, which take the recorder as their first argument. A process has one
active recorder, installed by `AgentTraceInstrumentor` (or made on first use with the
configuration of the environment, so `agent_run` and `@tool` also work without the instrumentor).
"""

from __future__ import annotations

import threading

import orjson
from opentelemetry import trace

from otel_agent_trace._failopen import log_once
from otel_agent_trace.config import AgentTraceConfig
from otel_agent_trace.version import __version__

SCOPE = "otel_agent_trace"
_UNLOADED = object()


class Recorder:
    def __init__(self, config: AgentTraceConfig | None = None, tracer_provider: trace.TracerProvider | None = None):
        self.config = config or AgentTraceConfig.from_env()
        self.tracer = trace.get_tracer(SCOPE, __version__, tracer_provider=tracer_provider)
        self.enabled = True
        self._final_schema: object = _UNLOADED

    def final_schema(self) -> dict | None:
        """The JSON Schema of `OTEL_AGENT_TRACE_FINAL_SCHEMA`, read once (None when unset or unreadable)."""
        if self._final_schema is _UNLOADED:
            self._final_schema = None
            path = self.config.final_schema
            if path:
                try:
                    with open(path, "rb") as handle:
                        self._final_schema = orjson.loads(handle.read())
                except (OSError, orjson.JSONDecodeError) as exc:
                    log_once(f"final schema {path}", exc)
        return self._final_schema  # type: ignore[return-value]

    def clip(self, text: str | None) -> str | None:
        """Truncate text to `max_attribute_bytes` (UTF-8), marking the cut."""
        if text is None:
            return None
        limit = self.config.max_attribute_bytes
        if limit <= 0 or len(text) <= limit // 4:
            return text
        data = text.encode("utf-8", "replace")
        if len(data) <= limit:
            return text
        return data[: max(0, limit - 20)].decode("utf-8", "ignore") + "...[truncated]"

    def content_json(self, value: object) -> str | None:
        """JSON text of captured content, or None when content capture is off."""
        if not self.config.capture_content:
            return None
        return self.clip(orjson.dumps(value, default=str).decode())


_lock = threading.Lock()
_active: Recorder | None = None


def get_recorder() -> Recorder:
    """The active recorder (created from the environment on first use)."""
    global _active
    if _active is None:
        with _lock:
            if _active is None:
                _active = Recorder()
    return _active


def set_recorder(recorder: Recorder | None) -> None:
    global _active
    with _lock:
        _active = recorder
