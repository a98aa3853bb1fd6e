"""`AgentTraceSpanProcessor`: tail sampling -> redaction of the kept spans -> the next processor
(the exporters).

The sampler decides on what redaction never changes (status, and the enum-valued phase and error
type), so it runs first and buffers the finished spans in memory; each span of a kept trace is
redacted on its way out, before it is stamped and handed to `next`, and a dropped trace is never
redacted at all. Without a sampler (ratio 1), each span is redacted at its end.

Fail-open for the host: nothing raised here reaches the program. Fail-closed for the data: if
redaction of a span fails, the span goes on scrubbed of every string (`redaction.scrub_span`)
rather than unredacted; if sampling fails, the span is exported (kept) rather than lost.
Each failure is logged once.
"""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_agent_trace import config as config_module
from otel_agent_trace import provider_hooks
from otel_agent_trace.config import AgentTraceConfig
from otel_agent_trace.processor.redaction import Redactor, is_ours, scrub_span
from otel_agent_trace.processor.redaction_rules import Rules, load_rules
from otel_agent_trace.processor.sampling import TailSampler
from otel_agent_trace.semconv import GEN_AI_OPERATION_NAME

_log = logging.getLogger(__name__)


class AgentTraceSpanProcessor(SpanProcessor):
    """Redacts every finished span, samples whole traces, then hands kept spans to `next`.

    Programmatic use: `provider.add_span_processor(AgentTraceSpanProcessor(next=BatchSpanProcessor(exporter)))`.
    Keywords override `AgentTraceConfig` (environment `OTEL_AGENT_TRACE_*`): `redact`,
    `redact_key`, `redact_rules` (a path, or a `Rules` object), `redact_disabled`, `sample_ratio`,
    `sampler_max_spans`, `sampler_max_bytes`, `sampler_decision_seconds`.
    """

    def __init__(self, next: SpanProcessor, config: AgentTraceConfig | None = None, **overrides: Any) -> None:
        rules = overrides.pop("redact_rules", None)
        if isinstance(rules, Rules):
            overrides["redact_rules"] = None
        elif rules is not None:
            overrides["redact_rules"] = rules
        if config is None:  # the process's configuration, with these keywords on top
            config = AgentTraceConfig.from_env(**overrides) if overrides else config_module.current()
        cfg = config
        self.config = cfg
        self.next = next
        self.redactor: Redactor | None = None
        if cfg.redact:
            if not isinstance(rules, Rules):
                rules = load_rules(cfg.redact_rules)
            self.redactor = Redactor(key=cfg.redact_key, rules=rules, disabled=cfg.redact_disabled)
        self.sampler: TailSampler | None = None
        if cfg.sample_ratio < 1.0:
            self.sampler = TailSampler(
                self._forward,
                ratio=cfg.sample_ratio,
                max_spans=cfg.sampler_max_spans,
                max_bytes=cfg.sampler_max_bytes,
                decision_seconds=cfg.sampler_decision_seconds,
                prepare=self._redacted if self.redactor is not None else None,
            )
        self._failed: set[str] = set()
        self._shut = False
        self.after_shutdown = 0  # spans that ended after `shutdown` (not exported)
        # coexist=adopt: the span ids of our chat spans still open, whose foreign twins are dropped
        self._adopting: set[int] | None = set() if cfg.coexist == "adopt" else None

    # --- SpanProcessor ------------------------------------------------------------------------
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self._adopting is not None and _is_our_chat(span):
            self._adopting.add(span.context.span_id)
        try:
            self.next.on_start(span, parent_context=parent_context)
        except Exception:  # noqa: BLE001 - fail-open: nothing may reach the host
            self._once("next.on_start")

    def _on_ending(self, span: Span) -> None:
        ending = getattr(self.next, "_on_ending", None)
        if ending is not None:
            try:
                ending(span)
            except Exception:  # noqa: BLE001 - fail-open: nothing may reach the host
                self._once("next._on_ending")

    def on_end(self, span: ReadableSpan) -> None:
        if self._shut:
            self._late(span)
            return
        if self._adopting is not None and self._adopted(span):
            return
        if self.sampler is not None:
            try:
                self.sampler.on_end(span)  # kept spans come back through `_redacted`, then `_forward`
                return
            except Exception:  # noqa: BLE001 - fail-open: nothing may reach the host
                self._once("sampling (span exported unsampled)")
        kept = self._redacted(span) if self.redactor is not None else span
        if kept is not None:
            self._forward(kept)

    def _redacted(self, span: ReadableSpan) -> ReadableSpan | None:
        """The span redacted; scrubbed of every string if redaction fails; None (dropped) if even
        that fails. Never the span unredacted."""
        try:
            return self.redactor.span(span)  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - fail-open: nothing may reach the host
            self._once("redaction (span exported scrubbed of its strings)")
            try:
                return scrub_span(span)
            except Exception:  # noqa: BLE001 - fail-open: nothing may reach the host
                self._once("scrubbing (span dropped)")
                return None

    def _adopted(self, span: ReadableSpan) -> bool:
        """`coexist=adopt`: another instrumentation's chat span directly under one of ours records
        the same request; ours already holds what it says, so it is not exported."""
        try:
            if _is_our_chat(span):
                self._adopting.discard(span.context.span_id)  # type: ignore[union-attr]
                return False
            parent = span.parent
            attributes = span.attributes or {}
            # a chat in the GenAI conventions (official openai-v2, OpenLLMetry), or OpenInference's LLM span
            return (parent is not None and parent.span_id in self._adopting  # type: ignore[operator]
                    and (attributes.get(GEN_AI_OPERATION_NAME) == "chat"
                         or attributes.get("openinference.span.kind") == "LLM"))
        except Exception:  # noqa: BLE001 - fail-open: nothing may reach the host
            self._once("coexist=adopt (span kept)")
            return False

    def _forward(self, span: ReadableSpan) -> None:
        try:
            self.next.on_end(span)
        except Exception:  # noqa: BLE001 - fail-open: nothing may reach the host
            self._once("next.on_end")

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        provider_hooks.before(None, False)  # lingering runs end first (provider_hooks.py)
        if self.sampler is not None:
            try:
                self.sampler.flush()
            except Exception:  # noqa: BLE001 - fail-open: nothing may reach the host
                self._once("sampler flush")
        return self.next.force_flush(timeout_millis)

    def shutdown(self) -> None:
        provider_hooks.before(None, True)
        self._shut = True
        if self.sampler is not None:
            try:
                self.sampler.shutdown()
            except Exception:  # noqa: BLE001 - fail-open: nothing may reach the host
                self._once("sampler shutdown")
        self.next.shutdown()

    def _late(self, span: ReadableSpan) -> None:
        """A span that ended after the shutdown: no exporter takes it any more; counted, logged once."""
        self.after_shutdown += 1
        if self.after_shutdown == 1:
            _log.warning("otel-agent-trace processor: span %r ended after the tracer provider shut down; it and any "
                         "later one are not exported (counted in stats['after_shutdown'])", span.name)

    @property
    def stats(self) -> dict[str, int]:
        """Sampler counters (kept, dropped, forced flushes, ...) and `after_shutdown` when spans
        ended after the shutdown; empty when not sampling and none did."""
        stats = dict(self.sampler.stats) if self.sampler is not None else {}
        if self.after_shutdown:
            stats["after_shutdown"] = self.after_shutdown
        return stats

    def _once(self, what: str) -> None:
        if what not in self._failed:
            self._failed.add(what)
            _log.warning("otel-agent-trace processor: %s failed", what, exc_info=True)


def _is_our_chat(span: ReadableSpan) -> bool:
    return is_ours(span) and span.name.startswith("chat")
