"""Count seeded values that reach an exporter, per adversarial form, detector and exporter path.

One real SDK `TracerProvider` with two real exporters behind `processor.install` (the path
`opentelemetry-instrument` takes): `agent_trace_file` (OTLP JSON Lines) and the SDK's
OTLP/HTTP protobuf exporter posting to a loopback receiver started here. A value is leaked when
any string written by that exporter, or what percent-decoding, base64 or NFKC recovers from it
(`processor_corpus.recoverable`), shows the value as seeded or in ASCII.

Used by tests/processor/test_adversarial_leaks.py (short) and bench/bench_leaks.py (long).
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Link, Status, StatusCode
from processor_corpus import (DETECTORS, base64_text, nested_json, recoverable, sensitive_forms, split_json, url_encoded,
                              widen)
from processor_helpers import attrs, read_spans, strings

from otel_agent_trace import semconv
from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.processor import install


class OTLPReceiver:
    """A loopback OTLP/HTTP (protobuf) trace receiver that keeps every request it is sent."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.requests.append(request)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1/traces"

    def __enter__(self) -> "OTLPReceiver":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def spans(self) -> list[tuple[dict[str, Any], list[str]]]:
        """(attributes, every string of the span and its resource) per received span."""
        out = []
        for request in self.requests:
            for rs in request.resource_spans:
                res = [kv.key for kv in rs.resource.attributes] + [_pb_str(kv.value) for kv in rs.resource.attributes]
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        a = {kv.key: _pb_py(kv.value) for kv in span.attributes}
                        texts = [span.name, span.status.message, *res, *_pb_kvs(span.attributes)]
                        for e in span.events:
                            texts += [e.name, *_pb_kvs(e.attributes)]
                        for link in span.links:
                            texts += _pb_kvs(link.attributes)
                        out.append((a, texts))
        return out


def _pb_py(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_pb_py(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def _pb_str(v: Any) -> str:
    x = _pb_py(v)
    return "\x00".join(map(str, x)) if isinstance(x, list) else str(x)


def _pb_kvs(kvs: Any) -> list[str]:
    return [s for kv in kvs for s in (kv.key, _pb_str(kv.value))]


# --- the adversarial spans: emitter(tracer, value, rnd, tags) ----------------------------------
def _raise(value: str) -> None:
    raise ValueError(f"lookup failed for {value!r}")


def _span_name(tracer, value, rnd, tags):
    with tracer.start_as_current_span(f"execute_tool lookup {value}", attributes=tags):
        pass


def _exception(tracer, value, rnd, tags):
    """The value in an exception's message and traceback (recorded, and as the status)."""
    with tracer.start_as_current_span("execute_tool lookup", attributes=tags, record_exception=False) as span:
        try:
            _raise(value)
        except ValueError as exc:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, str(exc)))


def _link(tracer, value, rnd, tags):
    upstream = tracer.start_span("upstream")
    upstream.end()
    with tracer.start_as_current_span("execute_tool lookup", attributes=tags,
                                      links=[Link(upstream.get_span_context(), {"link.note": f"from {value}"})]):
        pass


def _attribute(encode, key="adv.text"):
    def emit(tracer, value, rnd, tags):
        with tracer.start_as_current_span("execute_tool lookup", attributes={**tags, key: encode(rnd, value)}):
            pass
    return emit


def _event(encode):
    def emit(tracer, value, rnd, tags):
        with tracer.start_as_current_span("execute_tool lookup", attributes=tags) as span:
            span.add_event("tool.result", {"result": encode(rnd, value)})
    return emit


# form -> emitter; every one of these forms must leak nothing
FORMS: dict[str, Callable[..., Any]] = {
    "url_encoded": _attribute(url_encoded, "url.full"),
    "base64": _attribute(base64_text),
    "base64_in_event": _event(base64_text),
    "exception_message_and_traceback": _exception,
    "nested_json_tool_arguments": _attribute(nested_json, semconv.GEN_AI_TOOL_CALL_ARGUMENTS),
    "span_name_from_user_input": _span_name,
    "span_link_attributes": _link,
    "full_width_and_other_digits": _attribute(lambda rnd, v: f"my number is {widen(rnd, v)}"),
}
SPLIT = "split_across_two_json_strings"


def run(tmp: Path, per_detector: int, seed: int = 18) -> dict[str, Any]:
    """Emit `per_detector` values of every detector in every form (and split across two JSON
    strings), export through both paths, and count what leaked.

    Returns {"leaks": {(path, form, detector): n}, "values": {(form, detector): n},
             "split": {path: (leaked, total)}, "spans": {path: n}}."""
    rnd = random.Random(seed)
    path = tmp / "adversarial.jsonl"
    seeded: dict[tuple[str, int], tuple[str, str]] = {}  # (form, i) -> (detector, value)
    with OTLPReceiver() as receiver:
        provider = TracerProvider(resource=Resource.create({"service.name": "adversarial"}))
        provider.add_span_processor(BatchSpanProcessor(AgentTraceFileExporter(path), max_queue_size=1 << 16))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint, timeout=10),
                                                       max_queue_size=1 << 16))
        install(provider, redact=True, redact_key="adversarial-key", sample_ratio=1.0)
        tracer = provider.get_tracer("adversarial")
        i = 0
        for form, emit in FORMS.items():
            for detector, gen in DETECTORS.items():
                for _ in range(per_detector):
                    value = gen(rnd)
                    seeded[(form, i)] = (detector, value)
                    emit(tracer, value, rnd, {"adv.form": form, "adv.i": i})
                    i += 1
        halves: dict[int, tuple[str, str]] = {}
        for detector, gen in DETECTORS.items():
            for _ in range(per_detector):
                text, a, b = split_json(rnd, gen(rnd))
                with tracer.start_as_current_span("execute_tool lookup", attributes={
                        "adv.form": SPLIT, "adv.i": i,
                        semconv.GEN_AI_TOOL_CALL_ARGUMENTS: text}):
                    pass
                halves[i] = (a, b)
                i += 1
        provider.shutdown()
        received = receiver.spans()
    file_spans = [(attrs(s.get("attributes")), list(strings(s))) for s in read_spans(path)]
    result: dict[str, Any] = {"leaks": Counter(), "values": Counter(), "split": {}, "spans": {}}
    for (form, _), (detector, _) in seeded.items():
        result["values"][(form, detector)] += 1
    for name, spans in (("agent_trace_file", file_spans), ("otlp_http", received)):
        result["spans"][name] = len(spans)
        split_leaked = split_total = 0
        for a, texts in spans:
            form, i = a.get("adv.form"), a.get("adv.i")
            if i is None or form is None:
                continue
            blob = recoverable("\x00".join(t for t in texts if isinstance(t, str)))
            low = blob.lower()
            if form == SPLIT:
                split_total += 1
                first, second = halves[i]
                if first.lower() in low and second.lower() in low:
                    split_leaked += 1
                continue
            detector, value = seeded[(form, i)]
            if any(f.lower() in low for f in sensitive_forms(value)):
                result["leaks"][(name, form, detector)] += 1
        result["split"][name] = (split_leaked, split_total)
    return result
