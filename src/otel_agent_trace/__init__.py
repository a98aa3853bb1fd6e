"""otel-agent-trace: OpenTelemetry traces that make LLM agents debuggable.

Public surface: `AgentTraceInstrumentor` (what `opentelemetry-instrument` loads), `agent_run`
(mark a run in code), `tool` (record a tool explicitly), `AgentTraceConfig`.
"""

from otel_agent_trace.config import AgentTraceConfig
from otel_agent_trace.errors import AgentBudgetExceeded
from otel_agent_trace.recorder.runs import agent_run
from otel_agent_trace.tools.decorator import tool
from otel_agent_trace.version import __version__

__all__ = ["AgentBudgetExceeded", "AgentTraceConfig", "AgentTraceInstrumentor", "agent_run", "tool", "__version__"]


def __getattr__(name: str):  # the instrumentor pulls in opentelemetry-instrumentation: load on use
    if name == "AgentTraceInstrumentor":
        from otel_agent_trace.instrumentor import AgentTraceInstrumentor

        return AgentTraceInstrumentor
    raise AttributeError(name)
