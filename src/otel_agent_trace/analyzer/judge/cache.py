"""The judge's answers on disk, keyed by the hash of everything a request sends (model, the
messages with the run's context, the answer format): the same question is never paid twice, so a
re-run of `analyze --judge` on the same traces sends nothing. One small JSON file per answer,
written atomically (a temporary file renamed), so concurrent runs never read half an answer.
An unreadable entry is a miss; a cache that cannot be written is skipped (one warning)."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from typing import Any

from otel_agent_trace.hashing import canonical_json, sha256_hex

_log = logging.getLogger(__name__)
VERSION = 1  # bumped when the questions change meaning


def request_key(request: dict[str, Any]) -> str:
    """The hash of a request (its model, messages, response format, answer limit)."""
    return sha256_hex(canonical_json({"v": VERSION, **request}))


class AnswerCache:
    """`get(key)` / `put(key, answer)` under `directory` (None: a cache that holds nothing)."""

    def __init__(self, directory: str | None):
        self.directory = directory
        self._warned = False

    def _path(self, key: str) -> str:
        return os.path.join(self.directory or "", key[:2], key + ".json")

    def get(self, key: str) -> dict[str, Any] | None:
        if not self.directory:
            return None
        try:
            with open(self._path(key), "rb") as handle:
                value = json.loads(handle.read())
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, answer: dict[str, Any]) -> None:
        if not self.directory:
            return
        path = self._path(key)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
            with os.fdopen(fd, "w") as handle:
                json.dump(answer, handle)
            os.replace(temporary, path)
        except OSError as exc:
            if not self._warned:
                self._warned = True
                _log.warning("otel-agent-trace: judge cache %s not written: %s", self.directory, exc)
