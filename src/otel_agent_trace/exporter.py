"""`agent_trace_file`: OTLP JSON Lines to a file named by the environment.

One `ExportTraceServiceRequest` per line, encoded by the official OTLP JSON encoder (lowercase
hex ids, integer enums, 64-bit integers as strings): the Collector file exporter's encoding, so
the analyzer reads both alike. The official `otlp_json_file` exporter takes its path only in
code; under `opentelemetry-instrument` exporters are built with no arguments, hence this class.
"""

from __future__ import annotations

import os

from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter

from otel_agent_trace import config as config_module
from otel_agent_trace.config import ENV_PREFIX, AgentTraceConfig

FILE_ENV = ENV_PREFIX + "FILE"
DEFAULT_FILE = AgentTraceConfig.file


class AgentTraceFileExporter(FileSpanExporter):
    """Appends OTLP JSON Lines to `path`, else the configuration's `file` (`instrument(file=...)`,
    `$OTEL_AGENT_TRACE_FILE`), else `agent-traces.jsonl`."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = os.fspath(path) if path is not None else (config_module.current().file or DEFAULT_FILE)
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        super().__init__(self.path)
