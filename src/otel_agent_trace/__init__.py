"""otel-agent-trace: OpenTelemetry traces that make LLM agents debuggable.

Public surface: `AgentTraceInstrumentor` (what `opentelemetry-instrument` loads), `agent_run`
(mark a run in code), `tool` (record a tool explicitly), `AgentTraceConfig`, `minimize` (shrink a
recorded failing run to its minimal failing case).
"""

from otel_agent_trace.errors import AgentBudgetExceeded
from otel_agent_trace.version import __version__

__all__ = ["AgentBudgetExceeded", "AgentTraceConfig", "AgentTraceInstrumentor", "agent_run", "minimize", "tool",
           "__version__"]

# Loaded on first use: the instrumentor pulls in opentelemetry-instrumentation, the recorder the
# SDK; the analyzer's CLI (which imports this package first) needs none of them.
_LAZY = {
    "AgentTraceInstrumentor": ("otel_agent_trace.instrumentor", "AgentTraceInstrumentor"),
    "AgentTraceConfig": ("otel_agent_trace.config", "AgentTraceConfig"),
    "agent_run": ("otel_agent_trace.recorder.runs", "agent_run"),
    "tool": ("otel_agent_trace.tools.decorator", "tool"),
    "minimize": ("otel_agent_trace.minimizer.api", "minimize"),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(name)
