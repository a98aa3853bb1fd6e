"""What `serve` reports besides its findings file: metrics of the findings (through the
OpenTelemetry metrics API, exported by `OTEL_METRICS_EXPORTER` as any SDK process would) and,
optionally, one span per finding sent to an OTLP endpoint, in the run's trace under its root (and
linked to it), so a trace viewer shows "origin: step 3 lookup_order, tool_empty_result" beside
the run. Attribute values are bounded (`cardinality.CappedValues`): no ids, no free text."""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from typing import Any

from otel_agent_trace.cardinality import CappedValues
from otel_agent_trace.semconv import (
    BUG_CLASS,
    FINDING_SPAN_KIND,
    GEN_AI_AGENT_NAME,
    GEN_AI_TOOL_NAME,
    METRIC_SERVE_RUNS,
    METRIC_SERVE_SPANS_DROPPED,
    METRIC_SERVE_SPANS_HELD,
    METRIC_SERVE_TRACES_ANALYSED,
    METRIC_SERVE_TRACES_EVICTED,
    METRIC_SERVE_TRACES_HELD,
    ORIGIN_ERROR_TYPE,
    ORIGIN_SPAN_ID,
    ORIGIN_SPAN_NAME,
    ORIGIN_STEP_INDEX,
    RUN_STATUS,
    SERVE_DROP_REASON,
    SPAN_KIND,
)

SCOPE = "otel_agent_trace.serve"


def meter_provider_from_environment(service_name: str = "otel-agent-trace-serve") -> Any | None:
    """A MeterProvider exporting to every `OTEL_METRICS_EXPORTER` named (`otlp` by
    `OTEL_EXPORTER_OTLP[_METRICS]_PROTOCOL`, as the SDK's auto-configuration reads it); None when
    unset or `none`."""
    names = [n.strip() for n in os.environ.get("OTEL_METRICS_EXPORTER", "").split(",") if n.strip()]
    names = [n for n in names if n != "none"]
    if not names:
        return None
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    readers = []
    for name in names:
        if name == "otlp":
            protocol = (os.environ.get("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")
                        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "grpc").strip()
            name = "otlp_proto_http" if protocol.startswith("http") else "otlp_proto_grpc"
        found = list(entry_points(group="opentelemetry_metrics_exporter", name=name))
        if not found:
            raise ValueError(f"OTEL_METRICS_EXPORTER: no metrics exporter named {name!r} is installed")
        readers.append(PeriodicExportingMetricReader(found[0].load()()))
    resource = Resource.create({SERVICE_NAME: service_name})  # (OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME win)
    return MeterProvider(metric_readers=readers, resource=resource)


class FindingMetrics:
    """`agent_trace.serve.runs` by status, agent, origin error type, bug class and origin tool;
    the receiver's drops and what it holds, observed from the counters it keeps."""

    def __init__(self, meter: Any, held: Any, analyst_stats: dict[str, int]) -> None:
        from opentelemetry.metrics import Observation

        self._agents = CappedValues()
        self._tools = CappedValues()
        self._runs = meter.create_counter(
            METRIC_SERVE_RUNS, unit="{run}",
            description="Runs analysed live, by status and, for failed and suspect runs, where the failure originated")

        def dropped(_: Any) -> list:
            stats = held.stats
            return [Observation(stats["spans_over_cap"], {SERVE_DROP_REASON: "over_trace_cap"}),
                    Observation(stats["late_spans"], {SERVE_DROP_REASON: "late"}),
                    Observation(stats["spans_evicted"], {SERVE_DROP_REASON: "evicted"})]

        meter.create_observable_counter(METRIC_SERVE_SPANS_DROPPED, [dropped], unit="{span}",
                                        description="Spans received and not analysed, by reason")
        meter.create_observable_counter(
            METRIC_SERVE_TRACES_EVICTED, [lambda _: [Observation(held.stats["traces_evicted"])]],
            unit="{trace}", description="Traces without an error evicted when the trace cap was reached")
        meter.create_observable_counter(
            METRIC_SERVE_TRACES_ANALYSED, [lambda _: [Observation(analyst_stats["traces_analysed"])]],
            unit="{trace}", description="Traces analysed")
        meter.create_observable_gauge(
            METRIC_SERVE_TRACES_HELD, [lambda _: [Observation(len(held))]], unit="{trace}",
            description="Traces held until complete")
        meter.create_observable_gauge(
            METRIC_SERVE_SPANS_HELD, [lambda _: [Observation(held.spans_held)]], unit="{span}",
            description="Spans held in traces not complete yet")

    def record(self, entry: dict[str, Any]) -> None:
        attributes = {RUN_STATUS: entry["status"], GEN_AI_AGENT_NAME: self._agents(entry.get("agent") or "")}
        origin = entry.get("origin")
        if origin is not None:
            attributes[ORIGIN_ERROR_TYPE] = origin.get("error_type") or ""
            attributes[BUG_CLASS] = entry.get("bug_class") or ""
            attributes[GEN_AI_TOOL_NAME] = self._tools(origin.get("tool") or "")
        self._runs.add(1, attributes)


def finding_name(entry: dict[str, Any]) -> str:
    """`origin: step 3 lookup_order, tool_empty_result` (the span name a trace viewer lists)."""
    origin = entry["origin"]
    where = origin.get("tool") or origin.get("span_name") or "?"
    step = origin.get("step_index")
    return f"origin: {'' if step is None else f'step {step} '}{where}, {origin.get('error_type') or entry['status']}"


class FindingSpans:
    """Each failed or suspect run's finding as a span in the run's trace, a child of the run span
    and linked to it, sent with the OTLP/HTTP exporter to `endpoint` (…/v1/traces)."""

    def __init__(self, endpoint: str) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.provider = TracerProvider(resource=Resource.create({SERVICE_NAME: "otel-agent-trace-serve"}))
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        self.tracer = self.provider.get_tracer(SCOPE)

    def record(self, entry: dict[str, Any]) -> None:
        if entry["status"] == "ok" or entry.get("origin") is None:
            return
        from opentelemetry import trace
        from opentelemetry.trace import Link, SpanContext, TraceFlags

        root = SpanContext(int(entry["trace_id"], 16), int(entry["run_span_id"], 16), is_remote=True,
                           trace_flags=TraceFlags(TraceFlags.SAMPLED))
        origin = entry["origin"]
        attributes = {SPAN_KIND: FINDING_SPAN_KIND, RUN_STATUS: entry["status"],
                      ORIGIN_ERROR_TYPE: origin.get("error_type") or "", BUG_CLASS: entry.get("bug_class") or "",
                      ORIGIN_SPAN_ID: origin["span_id"], ORIGIN_SPAN_NAME: origin["span_name"]}
        if origin.get("step_index") is not None:
            attributes[ORIGIN_STEP_INDEX] = origin["step_index"]
        if origin.get("tool"):
            attributes[GEN_AI_TOOL_NAME] = origin["tool"]
        if entry.get("agent"):
            attributes[GEN_AI_AGENT_NAME] = entry["agent"]
        span = self.tracer.start_span(finding_name(entry), context=trace.set_span_in_context(trace.NonRecordingSpan(root)),
                                      links=[Link(root)], attributes=attributes)
        span.end()

    def shutdown(self) -> None:
        self.provider.shutdown()
