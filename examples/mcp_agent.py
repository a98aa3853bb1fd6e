"""The support agent as an async openai loop whose tools live on an MCP server.

It lists the tools of examples/mcp_server.py (started over stdio) through `mcp.ClientSession`,
hands their schemas to the model, and runs each tool call the model makes with
`session.call_tool`. It knows nothing of tracing: under `opentelemetry-instrument` each
`call_tool` is an `execute_tool` span where the tool really runs, and the listing is the run's
tool definitions. The model is the scripted server of support_agent.py (offline).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import support_agent  # noqa: E402


def server_parameters() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[os.path.join(HERE, "mcp_server.py")],
                                 env=get_default_environment())


def openai_tools(listing: Any) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                              "parameters": t.input_schema}} for t in listing.tools]


def result_text(result: Any) -> str:
    """What the model reads of a tool result: its text blocks, or its structured content."""
    texts = [block.text for block in result.content if block.type == "text"]
    if result.is_error:
        return "Error: " + " ".join(texts)
    if texts:
        return "\n".join(texts)
    structured = result.structured_content or {}
    return json.dumps(structured.get("result", structured))


async def handle_ticket(client: Any, session: ClientSession, ticket: str) -> str:
    """Answer one ticket; raises when the agent cannot produce an acceptable reply."""
    tools = openai_tools(await session.list_tools())
    messages: list[Any] = [{"role": "system", "content": support_agent.SYSTEM}, {"role": "user", "content": ticket}]
    for _ in range(support_agent.MAX_TURNS):
        response = await client.chat.completions.create(model=support_agent.MODEL, messages=messages, tools=tools)
        message = response.choices[0].message
        if not message.tool_calls:
            return support_agent.check_reply(ticket, message.content or "")
        messages.append(message)
        for call in message.tool_calls:
            result = await session.call_tool(call.function.name, json.loads(call.function.arguments or "{}"))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result_text(result)})
    raise support_agent.StepLimitExceeded(f"no answer after {support_agent.MAX_TURNS} turns")


async def answer_tickets(base_url: str, tickets: list[str]) -> int:
    """Each ticket through one MCP session; prints each reply or failure, returns the failures."""
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="scripted", max_retries=0)
    failures = 0
    async with stdio_client(server_parameters()) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for ticket in tickets:
                try:
                    reply = await handle_ticket(client, session, ticket)
                    print(f"[ok]     {ticket}\n         -> {reply}")
                except Exception as exc:
                    failures += 1
                    print(f"[failed] {ticket}\n         -> {type(exc).__name__}: {exc}")
    print(f"{len(tickets) - failures} of {len(tickets)} tickets answered")
    return failures


def main() -> int:
    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    with ScriptedOpenAIServer(support_agent.SCRIPTS) as server:
        asyncio.run(answer_tickets(server.base_url, support_agent.TICKETS))
    return 0


if __name__ == "__main__":
    # imported as `mcp_agent`, so OTEL_AGENT_TRACE_ENTRYPOINTS=mcp_agent:handle_ticket applies
    import mcp_agent

    sys.exit(mcp_agent.main())
