"""Content policy: what of the agent's content a span may carry, and how much.

One `ContentPolicy` per handler, made from its configuration and handed to every run, so the
code that writes spans (chat.py, tools.py, guards.py, frameworks) asks it directly instead of
calling back into the handler: captured content is JSON text clipped to `max_attribute_bytes`,
or nothing when `capture_content` is off; the final-answer schema is read once.
"""

from __future__ import annotations

import orjson

from otel_agent_trace._failopen import log_once
from otel_agent_trace.config import AgentTraceConfig

_UNLOADED = object()


class ContentPolicy:
    def __init__(self, config: AgentTraceConfig):
        self.capture = config.capture_content
        self.limit = config.max_attribute_bytes
        self._schema_path = config.final_schema
        self._final_schema: object = _UNLOADED

    def clip(self, text: str | None) -> str | None:
        """Truncate text to `max_attribute_bytes` (UTF-8), marking the cut."""
        if text is None:
            return None
        limit = self.limit
        if limit <= 0 or len(text) <= limit // 4:
            return text
        data = text.encode("utf-8", "replace")
        if len(data) <= limit:
            return text
        return data[: max(0, limit - 20)].decode("utf-8", "ignore") + "...[truncated]"

    def captured(self, text: str | None) -> str | None:
        """Text content as a span may carry it: clipped, or None when content capture is off."""
        return self.clip(text) if self.capture else None

    def json(self, value: object) -> str | None:
        """JSON text of captured content, or None when content capture is off."""
        if not self.capture:
            return None
        return self.clip(orjson.dumps(value, default=str).decode())

    def final_schema(self) -> dict | None:
        """The JSON Schema of `OTEL_AGENT_TRACE_FINAL_SCHEMA`, read once (None when unset or unreadable)."""
        if self._final_schema is _UNLOADED:
            self._final_schema = None
            path = self._schema_path
            if path:
                try:
                    with open(path, "rb") as handle:
                        self._final_schema = orjson.loads(handle.read())
                except (OSError, orjson.JSONDecodeError) as exc:
                    log_once(f"final schema {path}", exc)
        return self._final_schema  # type: ignore[return-value]
