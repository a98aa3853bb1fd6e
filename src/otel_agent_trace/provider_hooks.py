"""What must happen before a tracer provider flushes or shuts down: our lingering runs end first.

An implicit run that gave its final answer stays open (recorder/handler.py) so that a later
exception can still fail it. A program that ends its own work by flushing its provider
(`force_flush()`, `shutdown()`; the AWS Lambda wrapper after every invocation) would export
everything but that run's root span. So, before any flush or shutdown, the registered callbacks
run (the instrumentor registers the handler's), through every path:

- `TracerProvider.force_flush` / `.shutdown`, wrapped on the SDK class (public methods; a call
  resolves the wrapper even for providers made before it, the SDK's own atexit hook too when the
  provider was made after `install`; one made before is covered by our atexit, registered later,
  so run first);
- `AgentTraceSpanProcessor.force_flush` / `.shutdown` called directly (`before(..., None)`).

Fail-open: a callback's error is logged once, and the provider's call goes on with the result
it would have had.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from otel_agent_trace._failopen import safely

# callback(provider or None, shutdown): None when the caller cannot name the provider
Callback = Callable[[Any, bool], None]

_callbacks: list[Callback] = []
_inside = threading.local()  # set while a wrapped provider call runs (its processors see it)
_originals: dict[str, Any] = {}


def register(callback: Callback) -> None:
    if callback not in _callbacks:
        _callbacks.append(callback)


def unregister(callback: Callback) -> None:
    if callback in _callbacks:
        _callbacks.remove(callback)


def before(provider: Any, shutdown: bool) -> None:
    """Run the callbacks, unless a wrapped provider call already did (its processor calls in)."""
    if provider is None and getattr(_inside, "depth", 0):
        return
    for callback in list(_callbacks):
        safely("before provider flush", callback, provider, shutdown)


def _call(provider: Any, shutdown: bool, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    before(provider, shutdown)
    _inside.depth = getattr(_inside, "depth", 0) + 1
    try:
        return original(provider, *args, **kwargs)
    finally:
        _inside.depth -= 1


def install() -> None:
    """Wrap the SDK `TracerProvider`'s `force_flush` and `shutdown` (idempotent)."""
    from opentelemetry.sdk.trace import TracerProvider

    if _originals:
        return
    flush, shut = _originals["force_flush"], _originals["shutdown"] = TracerProvider.force_flush, TracerProvider.shutdown

    def force_flush(self: Any, *args: Any, **kwargs: Any) -> Any:
        return _call(self, False, flush, *args, **kwargs)

    def shutdown(self: Any, *args: Any, **kwargs: Any) -> Any:
        return _call(self, True, shut, *args, **kwargs)

    force_flush.__doc__, shutdown.__doc__ = flush.__doc__, shut.__doc__
    TracerProvider.force_flush, TracerProvider.shutdown = force_flush, shutdown  # type: ignore[method-assign]


def uninstall() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    if _originals:
        TracerProvider.force_flush = _originals.pop("force_flush")  # type: ignore[method-assign]
        TracerProvider.shutdown = _originals.pop("shutdown")  # type: ignore[method-assign]
