"""`agent_trace_file`: OTLP JSON Lines to a file named by the environment.

One `ExportTraceServiceRequest` per line, encoded by the official OTLP JSON encoder (lowercase
hex ids, integer enums, 64-bit integers as strings): the Collector file exporter's encoding, so
the analyzer reads both alike. The official `otlp_json_file` exporter takes its path only in
code; under `opentelemetry-instrument` exporters are built with no arguments, hence this class.

Fail-open: a file that cannot be opened (read-only disk, a path through a file) or written (a full
disk) never reaches the program, nor the SDK's setup (an exception here would cancel every other
exporter of `opentelemetry-instrument`): it is logged once per kind of failure, the batch is
reported failed, and the next batch tries again on a fresh handle.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from typing import IO

from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otel_agent_trace._failopen import log_once
from otel_agent_trace.config import ENV_PREFIX, AgentTraceConfig

FILE_ENV = ENV_PREFIX + "FILE"
DEFAULT_FILE = AgentTraceConfig.file


class AgentTraceFileExporter(SpanExporter):
    """Appends OTLP JSON Lines to `path`, else `$OTEL_AGENT_TRACE_FILE`, else `agent-traces.jsonl`."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = os.fspath(path) if path is not None else (os.environ.get(FILE_ENV) or DEFAULT_FILE)
        self._lock = threading.Lock()
        self._stream: IO[str] | None = None
        self._shutdown = False
        self._open()

    def _open(self) -> IO[str] | None:
        if self._stream is None:
            try:
                os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
                self._stream = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - held until shutdown
            except OSError as exc:
                log_once(f"agent_trace_file: opening {self.path}", exc)
        return self._stream

    def _drop_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            try:
                stream.close()
            except OSError:  # the unwritten buffer of a full disk: dropped with the handle
                pass

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        try:
            data = encode_spans(spans)
            if not data.resource_spans:
                return SpanExportResult.SUCCESS
            line = json.dumps(data.to_dict(), separators=(",", ":")) + "\n"
        except Exception as exc:  # noqa: BLE001 - fail-open: an unencodable batch is dropped
            log_once("agent_trace_file: encoding spans", exc)
            return SpanExportResult.FAILURE
        with self._lock:
            stream = self._open()
            if stream is None:
                return SpanExportResult.FAILURE
            try:
                stream.write(line)
                stream.flush()
            except (OSError, ValueError) as exc:
                log_once(f"agent_trace_file: writing {self.path}", exc)
                self._drop_stream()
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: object) -> None:
        with self._lock:
            self._shutdown = True
            self._drop_stream()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
