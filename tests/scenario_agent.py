"""A generic plain-loop agent for scenario tests: the real openai client, tools run in-process."""

from __future__ import annotations

import json
from typing import Any, Callable

SYSTEM = "You are an operations agent. Never refund more than the order total."


def schema_for(name: str, properties: dict[str, Any] | None = None, required: list[str] | None = None) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": properties or {}, "required": required or []}}}


def run_loop(client: Any, user: str, tools: dict[str, Callable[..., Any]], *, schemas: list[dict] | None = None,
             system: str = SYSTEM, max_turns: int = 80, keep_last: int | None = None,
             check_result: Callable[[str, Any], None] | None = None) -> str:
    """Call the model until it answers; tools' results (or `Error: ...`) go back as tool messages.

    `check_result(tool_name, result)` is the host's own check of each result before the model
    sees it (what a tool output guardrail does); what it raises stops the loop.

    `keep_last` imitates a naive history window that keeps the last N messages (and loses the
    system prompt once the history outgrows it).
    """
    messages: list[Any] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    schemas = schemas if schemas is not None else [schema_for(n) for n in tools]
    for _ in range(max_turns):
        window = messages[-keep_last:] if keep_last and len(messages) > keep_last else messages
        while window and window[0].get("role") == "tool":  # a window never starts with orphan results
            window = window[1:]
        response = client.chat.completions.create(model="gpt-4o-mini", messages=window, tools=schemas)
        message = response.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append({"role": "assistant", "content": message.content, "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in message.tool_calls]})
        for call in message.tool_calls:
            try:
                result = tools[call.function.name](**json.loads(call.function.arguments or "{}"))
                content = result if isinstance(result, str) else json.dumps(result)
            except Exception as exc:
                content = f"Error: {type(exc).__name__}: {exc}"
            else:
                if check_result is not None:
                    check_result(call.function.name, result)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    raise RuntimeError("no answer")


def run_loop_anthropic(client: Any, user: str, tools: dict[str, Callable[..., Any]], *,
                       schemas: list[dict] | None = None, system: str = SYSTEM, max_turns: int = 80) -> str:
    """`run_loop` with anthropic's Messages API: `tool_use` blocks run, answered with
    `tool_result` blocks (`is_error` when the tool raised), parallel calls in one turn."""
    schemas = schemas if schemas is not None else [schema_for(n) for n in tools]
    definitions = [{"name": s["function"]["name"], "input_schema": s["function"]["parameters"]} for s in schemas]
    messages: list[Any] = [{"role": "user", "content": user}]
    for _ in range(max_turns):
        message = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system,
                                          messages=messages, tools=definitions)
        if message.stop_reason != "tool_use":
            return "".join(b.text for b in message.content if b.type == "text")
        results = []
        for block in message.content:
            if block.type != "tool_use":
                continue
            try:
                result = tools[block.name](**dict(block.input))
                content, failed = (result if isinstance(result, str) else json.dumps(result)), False
            except Exception as exc:
                content, failed = f"Error: {type(exc).__name__}: {exc}", True
            results.append({"type": "tool_result", "tool_use_id": block.id, "content": content, "is_error": failed})
        messages += [{"role": "assistant", "content": message.content}, {"role": "user", "content": results}]
    raise RuntimeError("no answer")


def call(tool_name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool_name, "arguments": arguments}]}


def record_run(server: Any, path: Any, user: str, turns: list, tools: dict[str, Callable[..., Any]], *,
               schemas: list[dict] | None = None, keep_last: int | None = None, name: str = "agent",
               check_result: Callable[[str, Any], None] | None = None, client: str = "openai") -> Any:
    """One `run_loop` run scripted on `server`, recorded with our file exporter into `path` (a
    fresh provider and instrumentor, undone after). The run's own exception, if any, is swallowed:
    the trace records it. `client`: "openai" (Chat Completions) or "anthropic" (Messages; the
    scripted server serves both)."""
    import openai
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    import otel_agent_trace
    from otel_agent_trace.exporter import AgentTraceFileExporter

    server.scripts = {user: turns}
    server.stateful, server._served = keep_last is not None, {}
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(str(path))))
    instrumentor = otel_agent_trace.AgentTraceInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with otel_agent_trace.agent_run(name):
            if client == "anthropic":
                import anthropic

                claude = anthropic.Anthropic(base_url=server.base_url.removesuffix("/v1"), api_key="t", max_retries=0)
                run_loop_anthropic(claude, user, tools, schemas=schemas)
            else:
                gpt = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)
                run_loop(gpt, user, tools, schemas=schemas, keep_last=keep_last, check_result=check_result)
    except Exception:
        pass
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    return path


def analyze_json(path: Any, *options: str) -> dict:
    """The CLI's `analyze --format json` report of a trace file, as a user reads it (`options`:
    more of the command's options, e.g. `--all-failed`)."""
    import tempfile

    from otel_agent_trace import cli

    with tempfile.TemporaryDirectory() as tmp:
        out = f"{tmp}/report.json"
        code = cli.main(["analyze", str(path), "--format", "json", "--jobs", "1", "-o", out, *options])
        assert code == 0, code
        with open(out, encoding="utf-8") as handle:
            return json.load(handle)
