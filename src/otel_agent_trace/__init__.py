"""otel-agent-trace: OpenTelemetry traces that make LLM agents debuggable.

Public surface: `AgentTraceInstrumentor` (what `opentelemetry-instrument` loads), `agent_run`
(mark a run in code), `tool` (record a tool explicitly), `AgentTraceConfig`; for clients and
frameworks we do not patch, `record_chat` / `record_tool` with the normalized model
(`ChatRequest`, `ChatResponse`, `Message`, `ToolCall`) and `get_handler()`; `record_evaluation`
(an eval's or a user's verdict on a run, as the semconv `gen_ai.evaluation.result` event); `minimize` (shrink a
recorded failing run to its minimal failing case); `replay` (answer the LLM calls from a recorded run).
"""

from otel_agent_trace.errors import AgentBudgetExceeded
from otel_agent_trace.version import __version__

__all__ = ["AgentBudgetExceeded", "AgentTraceConfig", "AgentTraceInstrumentor", "ChatRequest", "ChatResponse",
           "Message", "ToolCall", "agent_run", "end_implicit_runs", "get_handler", "minimize", "record_chat",
           "record_evaluation", "record_tool", "replay", "tool", "__version__"]

# Loaded on first use: the instrumentor pulls in opentelemetry-instrumentation, the recorder the
# SDK; the analyzer's CLI (which imports this package first) needs none of them.
_LAZY = {
    "AgentTraceInstrumentor": ("otel_agent_trace.instrumentor", "AgentTraceInstrumentor"),
    "AgentTraceConfig": ("otel_agent_trace.config", "AgentTraceConfig"),
    "agent_run": ("otel_agent_trace.recorder.handler", "agent_run"),
    "record_chat": ("otel_agent_trace.recorder.handler", "record_chat"),
    "record_tool": ("otel_agent_trace.recorder.handler", "record_tool"),
    "record_evaluation": ("otel_agent_trace.recorder.evaluation", "record_evaluation"),
    "get_handler": ("otel_agent_trace.recorder.handler", "get_handler"),
    "tool": ("otel_agent_trace.tool_decorator", "tool"),
    "ChatRequest": ("otel_agent_trace.messages", "ChatRequest"),
    "ChatResponse": ("otel_agent_trace.messages", "ChatResponse"),
    "Message": ("otel_agent_trace.messages", "Message"),
    "ToolCall": ("otel_agent_trace.messages", "ToolCall"),
    "minimize": ("otel_agent_trace.minimizer.api", "minimize"),
    "replay": ("otel_agent_trace.replay", "replay"),
}


def end_implicit_runs() -> None:
    """End the runs opened implicitly that are still open (they end by themselves when the next
    conversation starts, after `run_idle_seconds`, or at exit): before reading spans in-process."""
    from otel_agent_trace.recorder.handler import get_handler

    get_handler().end_implicit_runs()


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(name)
