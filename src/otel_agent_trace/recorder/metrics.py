"""Metrics of what the recorder records, through the OpenTelemetry metrics API.

Computed from our spans as they end (a span processor on the tracer provider), so the recorder
itself carries no metrics code: a chat span gives the GenAI client metrics
(`gen_ai.client.operation.duration`, `gen_ai.client.token.usage`, with the semantic conventions'
attributes and bucket boundaries), a tool span the tool counters, and a run span, when it ends
after its steps, the run metrics (runs, steps per run, loop aborts, budget stops, cost per run)
from what its steps and chats left behind. docs/attributes.md, "Metrics", lists every instrument.

Off unless asked for: installed only when `instrument(meter_provider=...)` is given or
`OTEL_METRICS_EXPORTER` names an exporter (unset or `none`: nothing is installed, nothing runs
per span). Cardinality is bounded: no ids, no free text; agent and tool names (and exception
class names) are capped (`cardinality.CappedValues`: past the first 50, `other`).

Not doubled: an instrumentation that emits the GenAI client metrics itself (the official
`opentelemetry-instrumentation-openai-v2`, OpenLLMetry: scopes `opentelemetry.instrumentation.*`,
`opentelemetry.util.genai.*`)
records its own chat span for the same call. With `coexist=nest` or `adopt` that span is a child
of ours and ends first; our chat span then skips the GenAI client metrics (theirs count the
call), so exactly one of the two emits. Our agent metrics are ours alone and always emitted.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor

from otel_agent_trace._failopen import log_once
from otel_agent_trace.cardinality import CappedValues
from otel_agent_trace.semconv import (
    BUDGET_EXCEEDED,
    BUDGET_REASON,
    COST_USD,
    ERROR_TYPE,
    ERROR_TYPE_SEMCONV,
    GEN_AI_AGENT_NAME,
    GEN_AI_OPERATION_NAME,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_TOKEN_TYPE,
    GEN_AI_TOOL_NAME,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    INSTRUMENTATION_SCOPE,
    METRIC_OPERATION_DURATION,
    METRIC_RUN_BUDGET_STOPS,
    METRIC_RUN_COST,
    METRIC_RUN_LOOP_ABORTS,
    METRIC_RUN_STEPS,
    METRIC_RUNS,
    METRIC_TOKEN_USAGE,
    METRIC_TOOL_CALLS,
    METRIC_TOOL_ERRORS,
    OP_CHAT,
    OP_EXECUTE_TOOL,
    OP_INVOKE_AGENT,
    RUN_STATUS,
    STEP_SPAN_PREFIX,
)
from otel_agent_trace.vocabulary import ErrorType

# the GenAI semantic conventions' advisory bucket boundaries (gen-ai-metrics.md)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
STEP_BUCKETS = (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144)
COST_BUCKETS = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10)

SERVER_ADDRESS, SERVER_PORT = "server.address", "server.port"
_CHAT_OPERATIONS = frozenset({OP_CHAT, "text_completion", "generate_content"})
# scopes of instrumentations that emit the GenAI client metrics with their chat spans: the official
# contrib ones and OpenLLMetry (`opentelemetry.instrumentation.*`), and those built on
# opentelemetry-util-genai (openai-v2 2.x: `opentelemetry.util.genai.handler`)
_METRIC_EMITTING_SCOPES = ("opentelemetry.instrumentation.", "opentelemetry.util.genai.")
_STATE_KEPT = 16384  # spans' pending aggregates and covered chats held at most (oldest dropped)
_STATUS_ERROR = 2  # opentelemetry.trace.StatusCode.ERROR's value


def wanted(meter_provider: Any) -> bool:
    """Whether metrics are on: a meter provider given, or an exporter named in `OTEL_METRICS_EXPORTER`."""
    if meter_provider is not None:
        return True
    names = {n.strip() for n in os.environ.get("OTEL_METRICS_EXPORTER", "").split(",")} - {"", "none"}
    return bool(names)


_installed: dict[int, "MetricsSpanProcessor"] = {}  # id(tracer provider) -> its processor


def install(tracer_provider: Any, meter_provider: Any) -> "MetricsSpanProcessor | None":
    """The metrics processor on `tracer_provider` (the global one when None), once per provider
    (instrumenting again re-activates it with the new meter provider); None when metrics are off."""
    if not wanted(meter_provider):
        return None
    from opentelemetry import metrics, trace

    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    if not hasattr(provider, "add_span_processor"):
        log_once("metrics: install", RuntimeError("the tracer provider is not the SDK's: no agent metrics"))
        return None
    meters = meter_provider if meter_provider is not None else metrics.get_meter_provider()
    processor = _installed.get(id(provider))
    if processor is None:
        processor = _installed[id(provider)] = MetricsSpanProcessor(meters)
        provider.add_span_processor(processor)
    else:
        processor.bind(meters)
    processor.active = True
    return processor


def uninstall() -> None:
    """Instrumentation off: every installed processor stops recording (the SDK cannot remove one)."""
    for processor in _installed.values():
        processor.active = False


class _Pending:
    """What a span's children left for it (a step's for its run; a run's own)."""

    __slots__ = ("steps", "cost", "priced", "chats", "loop")

    def __init__(self) -> None:
        self.steps = 0
        self.cost = 0.0
        self.priced = 0
        self.chats = 0
        self.loop = False

    def absorb(self, other: "_Pending") -> None:
        self.steps += other.steps
        self.cost += other.cost
        self.priced += other.priced
        self.chats += other.chats
        self.loop = self.loop or other.loop


class MetricsSpanProcessor(SpanProcessor):
    """The span processor that turns our ended spans into metrics (see the module's docstring)."""

    def __init__(self, meter_provider: Any) -> None:
        self.active = True
        self._lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}  # span id -> what its ended children left
        self._covered: dict[int, None] = {}  # our chat spans whose call another instrumentation measured
        self._agents = CappedValues()
        self._tools = CappedValues()
        self._errors = CappedValues()
        self.bind(meter_provider)

    def bind(self, meter_provider: Any) -> None:
        from otel_agent_trace.version import __version__

        meter = meter_provider.get_meter(INSTRUMENTATION_SCOPE, __version__)
        self.duration = meter.create_histogram(
            METRIC_OPERATION_DURATION, unit="s", description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS))
        self.token_usage = meter.create_histogram(
            METRIC_TOKEN_USAGE, unit="{token}", description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=list(TOKEN_BUCKETS))
        self.runs = meter.create_counter(METRIC_RUNS, unit="{run}", description="Agent runs ended, by status")
        self.run_steps = meter.create_histogram(
            METRIC_RUN_STEPS, unit="{step}", description="Decision steps (LLM calls) per run",
            explicit_bucket_boundaries_advisory=list(STEP_BUCKETS))
        self.run_cost = meter.create_histogram(
            METRIC_RUN_COST, unit="{USD}", description="A run's recorded cost, when every LLM call was priced",
            explicit_bucket_boundaries_advisory=list(COST_BUCKETS))
        self.loop_aborts = meter.create_counter(
            METRIC_RUN_LOOP_ABORTS, unit="{run}", description="Failed runs in which a tool-call loop was detected")
        self.budget_stops = meter.create_counter(
            METRIC_RUN_BUDGET_STOPS, unit="{run}", description="Runs stopped by a budget (steps, tokens, seconds)")
        self.tool_calls = meter.create_counter(METRIC_TOOL_CALLS, unit="{call}", description="Tool executions")
        self.tool_errors = meter.create_counter(
            METRIC_TOOL_ERRORS, unit="{call}", description="Tool executions whose outcome was not ok, by error type")

    # --- SpanProcessor ----------------------------------------------------------------------------
    def on_end(self, span: Any) -> None:
        if not self.active:
            return
        try:
            self._on_end(span)
        except Exception as exc:  # noqa: BLE001 - metrics never break the host
            log_once("metrics: on_end", exc)

    # --- what each span gives -------------------------------------------------------------------
    def _on_end(self, span: Any) -> None:
        attributes = span.attributes or {}
        scope = span.instrumentation_scope
        operation = attributes.get(GEN_AI_OPERATION_NAME)
        if scope is None or scope.name != INSTRUMENTATION_SCOPE:
            if operation in _CHAT_OPERATIONS and span.parent is not None and scope is not None \
                    and scope.name.startswith(_METRIC_EMITTING_SCOPES):
                self._keep(self._covered, span.parent.span_id, None)
            return
        span_id = span.context.span_id
        parent = span.parent.span_id if span.parent is not None else None
        if operation == OP_CHAT:
            self._chat(span, attributes, span_id, parent)
        elif operation == OP_EXECUTE_TOOL:
            self._tool(attributes)
        elif operation == OP_INVOKE_AGENT:
            self._run(span, attributes, span_id)
        elif span.name.startswith(STEP_SPAN_PREFIX):
            self._step(attributes, span_id, parent)

    def _chat(self, span: Any, attributes: Any, span_id: int, parent: int | None) -> None:
        if parent is not None:
            with self._lock:
                left = self._pending.get(parent) or self._keep(self._pending, parent, _Pending())
                left.chats += 1
                cost = attributes.get(COST_USD)
                if isinstance(cost, (int, float)):
                    left.cost += cost
                    left.priced += 1
        with self._lock:
            covered = span_id in self._covered
            self._covered.pop(span_id, None)
        if covered:
            return
        common: dict[str, Any] = {GEN_AI_OPERATION_NAME: OP_CHAT,
                                  GEN_AI_PROVIDER_NAME: attributes.get(GEN_AI_PROVIDER_NAME) or "_OTHER"}
        for key in (GEN_AI_REQUEST_MODEL, GEN_AI_RESPONSE_MODEL, SERVER_ADDRESS, SERVER_PORT):
            value = attributes.get(key)
            if value is not None:
                common[key] = value
        if span.end_time is not None and span.start_time is not None:
            failed = dict(common)
            if span.status.status_code.value == _STATUS_ERROR:
                failed[ERROR_TYPE_SEMCONV] = self._errors(str(attributes.get(ERROR_TYPE_SEMCONV) or "_OTHER"))
            self.duration.record((span.end_time - span.start_time) / 1e9, failed)
        for key, kind in ((GEN_AI_USAGE_INPUT_TOKENS, "input"), (GEN_AI_USAGE_OUTPUT_TOKENS, "output")):
            tokens = attributes.get(key)
            if isinstance(tokens, int) and not isinstance(tokens, bool):
                self.token_usage.record(tokens, {**common, GEN_AI_TOKEN_TYPE: kind})

    def _tool(self, attributes: Any) -> None:
        tool = {GEN_AI_TOOL_NAME: self._tools(str(attributes.get(GEN_AI_TOOL_NAME) or "_OTHER"))}
        self.tool_calls.add(1, tool)
        error = attributes.get(ERROR_TYPE)
        if error:
            self.tool_errors.add(1, {**tool, ERROR_TYPE: str(error) if str(error) in _ERROR_TYPES else "_OTHER"})

    def _step(self, attributes: Any, span_id: int, parent: int | None) -> None:
        with self._lock:
            left = self._pending.pop(span_id, None) or _Pending()
            left.steps += 1
            left.loop = left.loop or attributes.get(ERROR_TYPE) == ErrorType.LOOP_DETECTED.value
            if parent is not None:
                into = self._pending.get(parent)
                if into is None:
                    self._keep(self._pending, parent, left)
                else:
                    into.absorb(left)

    def _run(self, span: Any, attributes: Any, span_id: int) -> None:
        with self._lock:
            left = self._pending.pop(span_id, None) or _Pending()
        failed = span.status.status_code.value == _STATUS_ERROR
        run = {GEN_AI_AGENT_NAME: self._agents(str(attributes.get(GEN_AI_AGENT_NAME) or "")),
               RUN_STATUS: "failed" if failed else "ok"}
        if failed:
            error = str(attributes.get(ERROR_TYPE) or "")
            run[ERROR_TYPE] = error if error in _ERROR_TYPES else "_OTHER"
        self.runs.add(1, run)
        agent = {GEN_AI_AGENT_NAME: run[GEN_AI_AGENT_NAME]}
        self.run_steps.record(left.steps, {**agent, RUN_STATUS: run[RUN_STATUS]})
        if left.chats and left.priced == left.chats:
            self.run_cost.record(left.cost, agent)
        if failed and left.loop:
            self.loop_aborts.add(1, agent)
        reason = attributes.get(BUDGET_EXCEEDED)
        if reason:
            self.budget_stops.add(1, {**agent, BUDGET_REASON: str(reason)})

    @staticmethod
    def _keep(into: dict, key: int, value: Any) -> Any:
        """`into[key] = value`, dropping the oldest entries past `_STATE_KEPT` (lock held or a
        dict operation atomic on its own): a span whose parent never ends leaves no leak."""
        into[key] = value
        if len(into) > _STATE_KEPT:
            for old in list(into)[: _STATE_KEPT // 4]:
                into.pop(old, None)
        return value


_ERROR_TYPES = frozenset(e.value for e in ErrorType)
