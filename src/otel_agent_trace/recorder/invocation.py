"""The life of one recorded operation: a span that starts, is current while the operation runs,
and ends exactly once.

Modelled on `opentelemetry-util-genai`'s invocation objects. Every invocation (run, chat, tool)
is a context manager with one body for sync and async code: `with handler.chat(request) as
chat: response = await client.create(...)`. Entering makes its span current (so HTTP spans and
nested tools land under it); leaving detaches, then fails the invocation if an exception left
the block, or stops it if nothing settled it yet (unless `defer()` handed it to a stream).
`stop(...)` and `fail(exc)` may be called any number of times: only the first counts.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

from otel_agent_trace._failopen import safely
from otel_agent_trace.causes import cause


class Invocation:
    """Base of `RunInvocation`, `ChatInvocation` and `ToolInvocation`."""

    kind = "invocation"
    span: trace.Span

    def __init__(self) -> None:
        self._tokens: list[object] = []
        self._settled = False
        self._deferred = False

    # --- being current -------------------------------------------------------------------------
    def activate(self) -> None:
        """Make this invocation's span current in the caller's context (nestable)."""
        self._tokens.append(otel_context.attach(trace.set_span_in_context(self.span)))

    def deactivate(self) -> None:
        if self._tokens:
            otel_context.detach(self._tokens.pop())  # type: ignore[arg-type]

    def __enter__(self) -> "Invocation":
        safely(f"{self.kind}.activate", self.activate)
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        safely(f"{self.kind}.deactivate", self.deactivate)
        if exc is not None:
            self.fail(exc)
        elif not self._deferred:
            self.stop()
        return False  # never swallow the host's exception

    # --- ending exactly once ---------------------------------------------------------------------
    @property
    def settled(self) -> bool:
        return self._settled

    def defer(self) -> None:
        """Leaving the `with` block will not stop it: a stream proxy will, when it is consumed."""
        self._deferred = True

    def stop(self, *result: Any) -> None:
        """The operation succeeded (with its result, for chat and tool invocations)."""
        if not self._settled:
            self._settled = True
            safely(f"{self.kind}.stop", self._on_stop, *result)

    def fail(self, exc: BaseException) -> None:
        """The operation raised `exc` (re-raised to the host unchanged by whoever called it); an
        exception group is recorded as the exception that caused it (`causes.py`)."""
        if not self._settled:
            self._settled = True
            safely(f"{self.kind}.fail", self._on_fail, cause(exc))

    def _on_stop(self, *result: Any) -> None:
        raise NotImplementedError

    def _on_fail(self, exc: BaseException) -> None:
        raise NotImplementedError


class NoInvocation(Invocation):
    """What the handler hands out when it records nothing (disabled, outside a run, a fault):
    the same surface, so the caller's `with` block runs unchanged."""

    kind = "none"

    def __init__(self) -> None:
        super().__init__()
        self.span = trace.INVALID_SPAN

    def activate(self) -> None:
        pass

    def deactivate(self) -> None:
        pass

    def _on_stop(self, *result: Any) -> None:
        pass

    def _on_fail(self, exc: BaseException) -> None:
        pass
