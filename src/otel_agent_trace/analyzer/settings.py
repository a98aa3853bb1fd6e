"""`AnalyzerSettings`: what an analysis takes from the configuration, as data.

Read once when an analysis starts (`from_env`: the `OTEL_AGENT_TRACE_*` fields of config.py that
the analyzer uses) and passed down through it, to the forked chunk workers too, so that each
analysis in a process follows the environment it starts in and no module keeps a setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from otel_agent_trace.config import AgentTraceConfig


@dataclass(frozen=True)
class AnalyzerSettings:
    loop_threshold: int = AgentTraceConfig.loop_threshold  # a repeated request is a loop at this count (0: off)
    native: bool = AgentTraceConfig.native  # read with the native reader where it is built

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "AnalyzerSettings":
        """The settings of the environment (`OTEL_AGENT_TRACE_LOOP_THRESHOLD`, `OTEL_AGENT_TRACE_NATIVE`)."""
        return cls(loop_threshold=AgentTraceConfig.setting("loop_threshold", environ),
                   native=AgentTraceConfig.setting("native", environ))
