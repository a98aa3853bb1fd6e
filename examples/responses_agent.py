"""The support agent of support_agent.py written against the OpenAI Responses API.

Same tickets, tools and scripted model (the scripted server answers `/v1/responses` too); each
turn sends only the new `function_call_output` items and chains with `previous_response_id`
(`chained=False` re-sends the whole conversation instead). It knows nothing about tracing: run it
under `opentelemetry-instrument` and every ticket becomes a trace without entry points (with
OTEL_AGENT_TRACE_ENTRYPOINTS=responses_agent:handle_ticket, a ticket's exception fails its run).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from support_agent import (  # noqa: E402
    MAX_TURNS, MODEL, SCRIPTS, SYSTEM, TOOL_SCHEMAS, StepLimitExceeded, answer_tickets, check_reply, run_tool,
)

# the Responses API's function tools are flat: {"type": "function", "name", "description", "parameters"}
TOOLS = [{"type": "function", **schema["function"]} for schema in TOOL_SCHEMAS]


def _request(ticket: str, items: list[Any], previous: str | None) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"model": MODEL, "instructions": SYSTEM, "input": items, "tools": TOOLS}
    if previous:
        kwargs["previous_response_id"] = previous
    return kwargs


def _next_items(response: Any, items: list[Any], chained: bool) -> list[Any]:
    calls = [item for item in response.output if item.type == "function_call"]
    outputs = [{"type": "function_call_output", "call_id": call.call_id,
                "output": run_tool(call.name, json.loads(call.arguments or "{}"))} for call in calls]
    if chained:
        return outputs
    return [*items, *({"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments}
                      for c in calls), *outputs]


def handle_ticket(client: Any, ticket: str, chained: bool = True, stream: bool = False) -> str:
    """Answer one ticket; `stream=True` reads each turn through `responses.stream`."""
    items: list[Any] = [{"role": "user", "content": ticket}]
    previous = None
    for _ in range(MAX_TURNS):
        kwargs = _request(ticket, items, previous if chained else None)
        if stream:
            with client.responses.stream(**kwargs) as events:
                response = events.get_final_response()
        else:
            response = client.responses.create(**kwargs)
        if not any(item.type == "function_call" for item in response.output):
            return check_reply(ticket, response.output_text)
        items, previous = _next_items(response, items, chained), response.id
    raise StepLimitExceeded(f"no answer after {MAX_TURNS} turns")


async def ahandle_ticket(client: Any, ticket: str) -> str:
    """`handle_ticket` with the `AsyncOpenAI` client, chained."""
    items: list[Any] = [{"role": "user", "content": ticket}]
    previous = None
    for _ in range(MAX_TURNS):
        response = await client.responses.create(**_request(ticket, items, previous))
        if not any(item.type == "function_call" for item in response.output):
            return check_reply(ticket, response.output_text)
        items, previous = _next_items(response, items, True), response.id
    raise StepLimitExceeded(f"no answer after {MAX_TURNS} turns")


def main() -> int:
    import openai

    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    with ScriptedOpenAIServer(SCRIPTS) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="scripted", max_retries=0)
        answer_tickets(lambda ticket: handle_ticket(client, ticket))
    return 0


if __name__ == "__main__":
    # imported as `responses_agent`, so OTEL_AGENT_TRACE_ENTRYPOINTS=responses_agent:handle_ticket applies
    import responses_agent

    sys.exit(responses_agent.main())
