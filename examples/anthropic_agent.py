"""The support agent of support_agent.py written against anthropic's Messages API.

Same tickets, tools and scripted model (the scripted server answers `/v1/messages` too): the
model's `tool_use` blocks are run and answered with `tool_result` blocks (`is_error` when the tool
raised). It knows nothing about tracing: run it under `opentelemetry-instrument` (with
OTEL_AGENT_TRACE_ENTRYPOINTS=anthropic_agent:handle_ticket, a ticket's exception fails its run).
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from support_agent import (  # noqa: E402
    MAX_TURNS, SCRIPTS, SYSTEM, TOOL_SCHEMAS, StepLimitExceeded, answer_tickets, check_reply, run_tool,
)

MODEL = "claude-sonnet-4-5"
TOOLS = [{"name": s["function"]["name"], "description": s["function"]["description"],
          "input_schema": s["function"]["parameters"]} for s in TOOL_SCHEMAS]


def _results(blocks: Any) -> list[dict[str, Any]]:
    results = []
    for block in blocks:
        if block.type == "tool_use":
            text = run_tool(block.name, dict(block.input))
            results.append({"type": "tool_result", "tool_use_id": block.id, "content": text,
                            "is_error": text.startswith("Error:")})
    return results


def _text(blocks: Any) -> str:
    return "".join(block.text for block in blocks if block.type == "text")


def handle_ticket(client: Any, ticket: str, stream: bool = False) -> str:
    """Answer one ticket; `stream=True` reads each turn through `messages.stream`."""
    messages: list[Any] = [{"role": "user", "content": ticket}]
    for _ in range(MAX_TURNS):
        kwargs = {"model": MODEL, "max_tokens": 1024, "system": SYSTEM, "messages": messages, "tools": TOOLS}
        if stream:
            with client.messages.stream(**kwargs) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**kwargs)
        if message.stop_reason != "tool_use":
            return check_reply(ticket, _text(message.content))
        messages += [{"role": "assistant", "content": message.content},
                     {"role": "user", "content": _results(message.content)}]
    raise StepLimitExceeded(f"no answer after {MAX_TURNS} turns")


async def ahandle_ticket(client: Any, ticket: str) -> str:
    """`handle_ticket` with the `AsyncAnthropic` client."""
    messages: list[Any] = [{"role": "user", "content": ticket}]
    for _ in range(MAX_TURNS):
        message = await client.messages.create(model=MODEL, max_tokens=1024, system=SYSTEM, messages=messages,
                                               tools=TOOLS)
        if message.stop_reason != "tool_use":
            return check_reply(ticket, _text(message.content))
        messages += [{"role": "assistant", "content": message.content},
                     {"role": "user", "content": _results(message.content)}]
    raise StepLimitExceeded(f"no answer after {MAX_TURNS} turns")


def main() -> int:
    import anthropic

    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    with ScriptedOpenAIServer(SCRIPTS) as server:
        client = anthropic.Anthropic(base_url=server.base_url.removesuffix("/v1"), api_key="scripted", max_retries=0)
        answer_tickets(lambda ticket: handle_ticket(client, ticket))
    return 0


if __name__ == "__main__":
    import anthropic_agent

    sys.exit(anthropic_agent.main())
