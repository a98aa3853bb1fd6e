"""What a replay says when it cannot go on: the recording is unusable, or the run left it."""

from __future__ import annotations

CONTENT_SETTING = "OTEL_AGENT_TRACE_CAPTURE_CONTENT=true"


class ReplayUnavailable(ValueError):
    """The recording cannot be replayed (no such file or run, recorded without content)."""


class ReplayDivergence(RuntimeError):
    """strict mode: the run asked the model something the recording never answered."""

    def __init__(self, message: str, step: int, message_index: int | None):
        super().__init__(message)
        self.step = step
        self.message_index = message_index


class RecordedToolError(RuntimeError):
    """replay_tools=recorded: the tool raised in the recording, so it raises again."""
