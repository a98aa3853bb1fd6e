"""The support agent of support_agent.py written against Ollama's native client (`ollama.Client.chat`).

Same tickets, tools and scripted model (the scripted server answers `/api/chat` too): the model's
tool calls (no ids on this wire) are run and answered with `role: tool` messages naming the tool.
It knows nothing about tracing: run it under `opentelemetry-instrument` (with
OTEL_AGENT_TRACE_ENTRYPOINTS=ollama_agent:handle_ticket, a ticket's exception fails its run).
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from support_agent import (  # noqa: E402
    MAX_TURNS, SCRIPTS, SYSTEM, TOOL_SCHEMAS, StepLimitExceeded, answer_tickets, check_reply, run_tool,
)

MODEL = "llama3.2"


def _turn(messages: list[Any], message: Any) -> None:
    messages.append(message)
    for call in message.tool_calls or ():
        messages.append({"role": "tool", "tool_name": call.function.name,
                         "content": run_tool(call.function.name, dict(call.function.arguments))})


def _streamed(parts: Any) -> Any:
    """The parts of a streamed reply folded into one message, as a caller of `stream=True` does."""
    import ollama

    text, calls = [], []
    for part in parts:
        text.append(part.message.content or "")
        calls.extend(part.message.tool_calls or ())
    return ollama.Message(role="assistant", content="".join(text), tool_calls=calls or None)


def handle_ticket(client: Any, ticket: str, stream: bool = False) -> str:
    """Answer one ticket; `stream=True` reads each turn as newline-delimited parts."""
    messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": ticket}]
    for _ in range(MAX_TURNS):
        reply = client.chat(model=MODEL, messages=messages, tools=TOOL_SCHEMAS, stream=stream)
        message = _streamed(reply) if stream else reply.message
        if not message.tool_calls:
            return check_reply(ticket, message.content or "")
        _turn(messages, message)
    raise StepLimitExceeded(f"no answer after {MAX_TURNS} turns")


async def ahandle_ticket(client: Any, ticket: str) -> str:
    """`handle_ticket` with `ollama.AsyncClient`."""
    messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": ticket}]
    for _ in range(MAX_TURNS):
        message = (await client.chat(model=MODEL, messages=messages, tools=TOOL_SCHEMAS)).message
        if not message.tool_calls:
            return check_reply(ticket, message.content or "")
        _turn(messages, message)
    raise StepLimitExceeded(f"no answer after {MAX_TURNS} turns")


def main() -> int:
    import ollama

    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    with ScriptedOpenAIServer(SCRIPTS) as server:
        client = ollama.Client(host=server.base_url.removesuffix("/v1"))
        answer_tickets(lambda ticket: handle_ticket(client, ticket))
    return 0


if __name__ == "__main__":
    import ollama_agent

    sys.exit(ollama_agent.main())
