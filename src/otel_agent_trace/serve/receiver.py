"""The OTLP/HTTP receiver (`POST /v1/traces`, protobuf or JSON, gzip or not), on the standard
library's threading HTTP server.

Answers as the OTLP/HTTP specification asks, so the Collector's and the SDKs' exporters retry
what should be retried: 200 with an ExportTraceServiceResponse in the request's encoding
(`partial_success.rejected_spans`: spans dropped over a trace's cap or late); 400 (bad body, not
retried); 413, 415; 429 with `Retry-After` when the analysis is behind (more complete traces
waiting than `max_backlog`) or every trace held has an error and the request brings new ones;
503 with `Retry-After` while shutting down."""

from __future__ import annotations

import itertools
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from otel_agent_trace.analyzer.spans import InputReport
from otel_agent_trace.serve.decode import JSON, PROTOBUF, BadRequest, inflate, media_type, spans_of

TRACES_PATH = "/v1/traces"
MAX_BODY_BYTES = 64 << 20  # of a request, after inflating


class Intake:
    """What both receivers (HTTP, gRPC) do with a request's spans: admit, hold, or push back."""

    def __init__(self, held: Any, analyst: Any, max_backlog: int, retry_after: int = 1) -> None:
        self.held = held
        self.analyst = analyst
        self.max_backlog = max_backlog
        self.retry_after = retry_after
        self.closing = False  # set on SIGTERM: new data is refused (503) while what is held is analysed
        self._numbers = itertools.count(1)
        self.bad_requests = 0

    def admit(self) -> int | None:
        """None when a request may come in, else the HTTP status that pushes back."""
        if self.closing:
            return 503
        if self.analyst.backlog >= self.max_backlog:  # complete traces waiting for the analysis
            return 429
        return None

    def take(self, body: bytes, kind: str) -> tuple[int | None, int, str]:
        """(None or the status refusing it, spans rejected, a message) for a decoded body."""
        number = next(self._numbers)
        report = InputReport(f"request {number}")
        spans = spans_of(body, kind, number, report)
        if report.bad_lines and not spans:
            self.bad_requests += 1
            raise BadRequest("; ".join(b.reason for b in report.bad_lines))
        dropped = self.held.add(spans)
        if dropped is None:
            return 429, 0, "every trace held has an error: retry later"
        reasons = [b.reason for b in report.bad_lines]
        return None, dropped, "; ".join(reasons)


def make_server(listen: tuple[str, int], intake: Intake) -> ThreadingHTTPServer:
    """The HTTP server (not started: `serve_forever` in a thread)."""

    class Handler(_Handler):
        pass

    Handler.intake = intake
    server = ThreadingHTTPServer(listen, Handler)
    server.daemon_threads = True
    return server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the exporters reuse one connection
    intake: Intake
    server_version = "otel-agent-trace-serve"

    def setup(self) -> None:
        """No Nagle delay: a response's headers and body go out in two writes, and a client that
        waits for both would otherwise wait for the delayed ACK (~40 ms a request)."""
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # one line per request on stderr is noise for a receiver

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._send(404 if self.path != "/" else 200, b"otel-agent-trace serve\n", "text/plain")

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        if self.path.split("?", 1)[0] != TRACES_PATH:
            self._discard(length)
            return self._send(404, b"not found: POST /v1/traces\n", "text/plain")
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            return self._send(413, b"body too large\n", "text/plain")
        body = self.rfile.read(length)
        kind = media_type(self.headers.get("Content-Type", ""))
        intake = self.intake
        refused = intake.admit()
        if refused is not None:
            return self._push_back(refused, kind)
        try:
            body = inflate(body, self.headers.get("Content-Encoding", ""), MAX_BODY_BYTES)
            refused, rejected, message = intake.take(body, kind)
        except BadRequest as exc:
            return self._status(exc.status, str(exc), kind)
        if refused is not None:
            return self._push_back(refused, kind, message)
        self._send(200, _response(kind, rejected, message), kind if kind in (PROTOBUF, JSON) else JSON)

    def _push_back(self, status: int, kind: str, message: str = "") -> None:
        text = message or ("shutting down" if status == 503 else "the analysis is behind: retry later")
        self._status(status, text, kind, {"Retry-After": str(self.intake.retry_after)})

    def _status(self, status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> None:
        """An error answer: a google.rpc.Status in the request's encoding, as OTLP/HTTP asks."""
        code = {400: 3, 413: 3, 415: 3, 429: 8, 503: 14}.get(status, 2)
        if kind == PROTOBUF:
            from google.rpc.status_pb2 import Status

            body = Status(code=code, message=message).SerializeToString()
        else:
            kind = JSON
            body = orjson.dumps({"code": code, "message": message})
        self._send(status, body, kind, headers)

    def _send(self, status: int, body: bytes, kind: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _discard(self, length: int) -> None:
        while length > 0:
            chunk = self.rfile.read(min(length, 1 << 16))
            if not chunk:
                break
            length -= len(chunk)


def _response(kind: str, rejected: int, message: str) -> bytes:
    """An ExportTraceServiceResponse: empty, or its partial_success when spans were dropped."""
    if kind == PROTOBUF:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        response = ExportTraceServiceResponse()
        if rejected or message:
            response.partial_success.rejected_spans = rejected
            response.partial_success.error_message = message or f"{rejected} spans over a cap or late"
        return response.SerializeToString()
    if rejected or message:
        return orjson.dumps({"partialSuccess": {"rejectedSpans": str(rejected),
                                                "errorMessage": message or f"{rejected} spans over a cap or late"}})
    return b"{}"


def serve_in_thread(server: ThreadingHTTPServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                              name="agent-trace-serve-http", daemon=True)
    thread.start()
    return thread
