"""mcp (the Model Context Protocol SDK): tool calls recorded where they run, tool listings as the
run's `gen_ai.tool.definitions`.

`ClientSession.call_tool` (and `Client.call_tool`, which may resend it) runs inside
`handler.tool(name, arguments)`: one `execute_tool {name}` span, current while the request is
out, so mcp's own `MCP send tools/call {name}` client span, and the server's span that continues
the trace through `_meta`, nest under it. Its call id is that of the run's pending tool call
with the same name and arguments (`recorder/tool_spans.start_tool`), and the inferred span for that
call is then never written. Its result is what the tool returned: the structured content (mcp's
`{"result": ...}` wrapper of a non-object return taken off), else the text of the content
blocks; an `isError` result is a failed result (its text, prefixed `Error:` unless it says so,
as for anthropic's `is_error`). A call that raises (timeout, protocol error) fails the span.

`list_tools` keeps the session's tool schemas; they are written on the run span as
`gen_ai.tool.definitions` (the union of the run's sessions) when a run is current at the
listing, else at the run's first tool call through that session.
"""

from __future__ import annotations

from typing import Any

from otel_agent_trace._failopen import safely
from otel_agent_trace.detectors import classify_result
from otel_agent_trace.vocabulary import Outcome
from otel_agent_trace.providers._translate import content_text, get, plain
from otel_agent_trace.frameworks.tool_calls import tool_wrapper
from otel_agent_trace.recorder.handler import installed_handler
from otel_agent_trace.recorder.run import RunInvocation
from otel_agent_trace.integration import Integration, Patch
from otel_agent_trace.semconv import GEN_AI_TOOL_DEFINITIONS

SESSION_MODULE, CLIENT_MODULE = "mcp.client.session", "mcp.client.client"
_TOOLS = "_agent_trace_tools"  # on a ClientSession: tool name -> its definition


async def list_tools(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    """Wrapper of `ClientSession.list_tools`: remembers the listing (each page adds to it)."""
    result = await wrapped(*args, **kwargs)
    safely("mcp.list_tools", _remember, instance, result)
    return result


def _describe(instance: Any, args: tuple, kwargs: dict) -> tuple[str, Any, None]:
    name = args[0] if args else kwargs.get("name")
    arguments = args[1] if len(args) > 1 else kwargs.get("arguments")
    handler = installed_handler()
    run = handler.current_run() if handler is not None else None
    if run is not None:
        _define(run, _session(instance))
    return str(name), plain(arguments) if arguments is not None else {}, None


def _result(instance: Any, result: Any) -> Any:
    return result_value(result)


def result_value(result: Any) -> Any:
    """What a `CallToolResult` gave the caller, as the recorder classifies it (see the module doc)."""
    content = get(result, "content")
    if content is None:  # not a CallToolResult (an input-required or a claimed extension result)
        return plain(result)
    if get(result, "is_error"):
        text = content_text(content) or ""
        return text if classify_result(text) is Outcome.ERROR_RESULT else (f"Error: {text}" if text else "Error")
    structured = get(result, "structured_content")
    if structured is not None:
        if isinstance(structured, dict) and len(structured) == 1 and "result" in structured:
            return structured["result"]  # mcp's wrapper of a return that is not an object
        return structured
    return content_text(content) or ""


def _session(instance: Any) -> Any:
    """The ClientSession of a `Client` (connected or not), or the session itself."""
    return vars(instance).get("_session", instance) if hasattr(instance, "__dict__") else instance


def _remember(session: Any, result: Any) -> None:
    tools = vars(session).setdefault(_TOOLS, {})
    for tool in get(result, "tools") or ():
        name = get(tool, "name")
        if name:
            definition = {"type": "function", "name": name, "description": get(tool, "description"),
                          "parameters": plain(get(tool, "input_schema"))}
            tools[name] = {k: v for k, v in definition.items() if v is not None}
    handler = installed_handler()
    run = handler.current_run() if handler is not None else None
    if run is not None:
        _define(run, session)


def _define(run: RunInvocation, session: Any) -> None:
    """Write the run's definitions again when this session's listing adds to them."""
    tools = vars(session).get(_TOOLS) if hasattr(session, "__dict__") else None
    if not tools:
        return
    definitions = run.add_tool_definitions(tools)
    text = run.content.json(definitions) if definitions is not None else None
    if text is not None and not run.ended:
        run.span.set_attribute(GEN_AI_TOOL_DEFINITIONS, text)


# `ClientSession.call_tool` / `Client.call_tool`
call_tool = tool_wrapper(_describe, _result, "mcp.call_tool")

TARGETS = {
    SESSION_MODULE: {"ClientSession.call_tool": call_tool, "ClientSession.list_tools": list_tools},
    CLIENT_MODULE: {"Client.call_tool": call_tool},
}
INTEGRATION = Integration("mcp", tuple(Patch(module, target, wrapper) for module, targets in TARGETS.items()
                                      for target, wrapper in targets.items()))
