"""`agent_trace_file`: OTLP JSON Lines to a file named by the environment, rotated by size.

One `ExportTraceServiceRequest` per line, encoded by the official OTLP JSON encoder (lowercase
hex ids, integer enums, 64-bit integers as strings): the Collector file exporter's encoding, so
the analyzer reads both alike. The official `otlp_json_file` exporter takes its path only in
code; under `opentelemetry-instrument` exporters are built with no arguments, hence this class.

Retention on one machine (all `OTEL_AGENT_TRACE_*`, see docs/configuration.md):
`FILE_MAX_BYTES` rotates the file by size and `FILE_BACKUPS` bounds the backups kept
(rotating_file.py). With `FILE_FAILED` set, the spans of failing traces (the in-process
sampler's rule: `processor.sampling.is_failing`) go to that file instead, which rotates at the
same size but keeps `FILE_FAILED_BACKUPS` backups, so failures outlive the healthy traffic
that rotates out. To put a whole trace in one file, its spans are held until its local root
ends (a trace's first step can end long before it fails); the hold is bounded by
`_HELD_SPANS` spans and `_HELD_SECONDS`, after which the oldest traces are written as they are,
and late spans of a trace already written failing still follow it (bounded memory of ids).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence

from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otel_agent_trace import config as config_module
from otel_agent_trace._failopen import log_once
from otel_agent_trace.config import ENV_PREFIX, AgentTraceConfig
from otel_agent_trace.processor.sampling import is_failing
from otel_agent_trace.rotating_file import RotatingLineFile

FILE_ENV = ENV_PREFIX + "FILE"
DEFAULT_FILE = AgentTraceConfig.file
_FAILED_TRACES_REMEMBERED = 65536
_HELD_SPANS = 20_000
_HELD_SECONDS = 300.0
_logger = logging.getLogger(__name__)


def _config() -> AgentTraceConfig:
    """The process's one configuration (the instrumentor's, else the environment's)."""
    try:
        return config_module.current()
    except ValueError as exc:  # fail-open: a bad setting must not stop the host from starting
        _logger.warning("otel-agent-trace: %s; agent_trace_file uses its defaults", exc)
        return AgentTraceConfig(file=os.environ.get(FILE_ENV) or DEFAULT_FILE)


def _line(spans: Sequence[ReadableSpan]) -> bytes | None:
    data = encode_spans(spans)
    if not data.resource_spans:
        return None
    return (json.dumps(data.to_dict(), separators=(",", ":")) + "\n").encode("utf-8")


class AgentTraceFileExporter(SpanExporter):
    """Appends OTLP JSON Lines to `path`, else the configuration's `file` (`instrument(file=...)`,
    `$OTEL_AGENT_TRACE_FILE`), else `agent-traces.jsonl`."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, max_bytes: int | None = None,
                 backups: int | None = None, failed_path: str | os.PathLike[str] | None = None,
                 failed_backups: int | None = None) -> None:
        cfg = _config()
        self.path = os.fspath(path) if path is not None else (cfg.file or DEFAULT_FILE)
        max_bytes = cfg.file_max_bytes if max_bytes is None else max_bytes
        self._main = RotatingLineFile(self.path, max_bytes, cfg.file_backups if backups is None else backups)
        failed = os.fspath(failed_path) if failed_path is not None else cfg.file_failed
        self.failed_path = failed or None
        self._failed = (RotatingLineFile(failed, max_bytes,
                                         cfg.file_failed_backups if failed_backups is None else failed_backups)
                        if failed else None)
        self._failed_traces: OrderedDict[int, None] = OrderedDict()
        self._held: OrderedDict[int, tuple[float, list[ReadableSpan]]] = OrderedDict()
        self._held_count = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            if self._failed is None:
                self._write(self._main, spans)
                return SpanExportResult.SUCCESS
            failing, healthy = self._split(spans)
            self._write(self._failed, failing)
            self._write(self._main, healthy)
            return SpanExportResult.SUCCESS
        except Exception as exc:  # noqa: BLE001 - fail-open: a full disk must not raise into the SDK
            log_once(f"agent_trace_file: writing {self.path}", exc)  # once per kind, not per batch
            return SpanExportResult.FAILURE

    def _split(self, spans: Sequence[ReadableSpan]) -> tuple[list[ReadableSpan], list[ReadableSpan]]:
        """Spans of traces that are complete (or held too long), sorted into failing and healthy."""
        failing: list[ReadableSpan] = []
        healthy: list[ReadableSpan] = []
        with self._lock:
            for span in spans:
                context = span.context
                if context is None:
                    healthy.append(span)
                    continue
                tid = context.trace_id
                if is_failing(span):
                    self._remember(tid)
                if tid not in self._held and tid in self._failed_traces:
                    failing.append(span)  # a late span of a trace already written as failing
                    continue
                self._held.setdefault(tid, (time.monotonic(), []))[1].append(span)
                self._held_count += 1
                if span.parent is None or span.parent.is_remote:  # the local root ended
                    self._release(tid, failing, healthy)
            deadline = time.monotonic() - _HELD_SECONDS
            while self._held and (self._held_count > _HELD_SPANS or next(iter(self._held.values()))[0] < deadline):
                self._release(next(iter(self._held)), failing, healthy)
        return failing, healthy

    def _remember(self, tid: int) -> None:
        self._failed_traces[tid] = None
        self._failed_traces.move_to_end(tid)
        while len(self._failed_traces) > _FAILED_TRACES_REMEMBERED:
            self._failed_traces.popitem(last=False)

    def _release(self, tid: int, failing: list[ReadableSpan], healthy: list[ReadableSpan]) -> None:
        _, held = self._held.pop(tid)
        self._held_count -= len(held)
        (failing if tid in self._failed_traces else healthy).extend(held)

    @staticmethod
    def _write(target: RotatingLineFile, spans: Sequence[ReadableSpan]) -> None:
        if spans and (line := _line(spans)) is not None:
            target.write_line(line)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: object) -> None:
        if self._failed is not None:
            failing: list[ReadableSpan] = []
            healthy: list[ReadableSpan] = []
            with self._lock:
                while self._held:
                    self._release(next(iter(self._held)), failing, healthy)
            try:
                self._write(self._failed, failing)
                self._write(self._main, healthy)
            except Exception as exc:  # noqa: BLE001 - fail-open at exit too
                log_once(f"agent_trace_file: writing {self.path} at shutdown", exc)
        self._main.close()
        if self._failed is not None:
            self._failed.close()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True  # lines are written as exported; a held trace waits for its root (or shutdown)
