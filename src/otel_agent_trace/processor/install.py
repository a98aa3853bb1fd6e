"""Put `AgentTraceSpanProcessor` in front of every exporter of a `TracerProvider`.

Under `opentelemetry-instrument`, the distro's configurator builds the provider and its
exporters (`OTEL_TRACES_EXPORTER`), then instrumentors load, then the
`opentelemetry_post_instrument` entry points run: `post_instrument` below. Why this hook and not
a configurator or a distro: only one of each is loaded per process (the first found, or the one
named by `OTEL_PYTHON_CONFIGURATOR` / `OTEL_PYTHON_DISTRO`), and `opentelemetry-distro` already
provides them; a post-instrument hook composes with any distro or configurator.

Mechanism: the provider keeps its span-processor object (tracers already hold a reference to
it), but that object's list becomes `(AgentTraceSpanProcessor(next=<the old list>),)`, and its
`add_span_processor` now appends behind ours: processors added later (by the program, by another
distro) also only ever see redacted, sampled spans. A provider set later by the program
(`trace.set_tracer_provider(TracerProvider())` after the hook) is covered by wrapping
`TracerProvider.add_span_processor`: its first processor installs ours first.
"""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import SynchronousMultiSpanProcessor, TracerProvider

from otel_agent_trace import config as config_module
from otel_agent_trace.config import AgentTraceConfig
from otel_agent_trace.processor.span_processor import AgentTraceSpanProcessor

_log = logging.getLogger(__name__)
_ATTR = "_agent_trace_processor"


def install(provider: Any = None, config: AgentTraceConfig | None = None, **overrides: Any) -> AgentTraceSpanProcessor | None:
    """Chain our processor in front of `provider`'s (default: the global one). Idempotent.

    Returns the processor, or None when the provider is not an SDK `TracerProvider`.
    """
    provider = provider if provider is not None else trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        return None
    multi = provider._active_span_processor
    existing = getattr(multi, _ATTR, None)
    if existing is not None:
        return existing
    downstream = SynchronousMultiSpanProcessor()
    with multi._lock:
        for sp in multi._span_processors:
            downstream.add_span_processor(sp)
        ours = AgentTraceSpanProcessor(next=downstream, config=config, **overrides)
        multi._span_processors = (ours,)
        multi.add_span_processor = downstream.add_span_processor  # later ones sit behind ours
        setattr(multi, _ATTR, ours)
    return ours


_original_add = TracerProvider.add_span_processor


def _add_span_processor(self: TracerProvider, span_processor: Any) -> None:
    if getattr(self._active_span_processor, _ATTR, None) is None and not isinstance(span_processor, AgentTraceSpanProcessor):
        try:
            install(self)
        except Exception:  # noqa: BLE001 - fail-open: nothing may reach the host
            _log.warning("otel-agent-trace: could not install the span processor", exc_info=True)
    self._active_span_processor.add_span_processor(span_processor)


def patch_future_providers() -> None:
    """Every SDK provider gets our processor in front when its first processor is added."""
    TracerProvider.add_span_processor = _add_span_processor  # type: ignore[method-assign]


def unpatch_future_providers() -> None:
    TracerProvider.add_span_processor = _original_add  # type: ignore[method-assign]


def post_instrument(**_: Any) -> None:
    """Entry point `opentelemetry_post_instrument: agent_trace`; never raises."""
    try:
        config = config_module.current()
        if not config.redact and config.sample_ratio >= 1.0:
            return  # nothing to do: keep the exporters' path untouched
        install(config=config)
        patch_future_providers()
    except Exception:  # noqa: BLE001 - fail-open: nothing may reach the host
        _log.warning("otel-agent-trace: span processor not installed", exc_info=True)
