"""The seam where something may answer a client call or a tool in place of the real one.

The handler holds an `Interceptor` only while one is on (replay: `replay/interceptor.py`,
injected by the instrumentor or a `replay()` block); otherwise the wrappers call the real thing
and pay nothing. The recorder knows this shape only, never who fills it.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from otel_agent_trace.messages import ChatRequest, ChatResponse

LIVE = object()  # the interceptor has no answer: call the real client or tool

# build(response, request, instance, kwargs, method) -> the SDK object (an awaitable for an async
# client; a wire answer for a raw call); `method` is the patched call's name (`create`, `stream`,
# `parse`, `acompletion`...). Each provider's `_replay` module gives its own.
Build = Callable[[ChatResponse, ChatRequest, Any, dict, str], Any]


class Interceptor(Protocol):
    def chat(self, invocation: Any, build: Build, wrapped: Any, instance: Any, args: tuple, kwargs: dict,
             where: str) -> Any:
        """What the caller of a chat invocation's client call gets, or LIVE to make the call."""

    def tool(self, name: str, arguments: Any) -> Any:
        """A tool's result (a recorded exception is raised), or LIVE to run it."""
