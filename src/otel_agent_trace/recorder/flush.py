"""The recorder's part when a tracer provider flushes or shuts down (`provider_hooks`): the
active handler's lingering runs end first, so the flush exports them whole.

Only a flush of the provider the handler records to counts (its own, or the global one when it
was given none); `provider=None` (our span processor's own `force_flush` called directly) counts.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace

from otel_agent_trace import provider_hooks
from otel_agent_trace.recorder import handler as handler_module


def before_provider_flush(provider: Any, shutdown: bool) -> None:
    handler = handler_module.installed_handler()
    if handler is None:
        return
    if provider is not None and provider is not (handler.tracer_provider or trace.get_tracer_provider()):
        return
    handler.end_for_flush(shutdown)


def install() -> None:
    provider_hooks.install()
    provider_hooks.register(before_provider_flush)


def uninstall() -> None:
    provider_hooks.unregister(before_provider_flush)
    provider_hooks.uninstall()
