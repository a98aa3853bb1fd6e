"""The support agent of support_agent.py written against google-genai (the Gemini API).

Same tickets, tools and scripted model (the scripted server answers
`/v1beta/models/{model}:generateContent` too). `handle_ticket` is a hand-written loop: the
model's `function_call` parts are run and answered with `function_response` parts
(`{"error": ...}` when the tool raised). `handle_ticket_afc` lets the SDK's automatic function
calling run the same Python functions in a chat. It knows nothing about tracing: run it under
`opentelemetry-instrument` (with OTEL_AGENT_TRACE_ENTRYPOINTS=genai_agent:handle_ticket, a
ticket's exception fails its run).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from support_agent import (  # noqa: E402
    MAX_TURNS, SCRIPTS, SYSTEM, TOOL_SCHEMAS, TOOLS as FUNCTIONS, StepLimitExceeded, answer_tickets, check_reply,
    run_tool,
)

MODEL = "gemini-2.5-flash"


def _config(**extra: Any) -> Any:
    from google.genai import types

    declarations = [types.FunctionDeclaration(name=s["function"]["name"], description=s["function"]["description"],
                                              parameters_json_schema=s["function"]["parameters"]) for s in TOOL_SCHEMAS]
    return types.GenerateContentConfig(system_instruction=SYSTEM, tools=[types.Tool(function_declarations=declarations)],
                                       **extra)


def _answer(content: Any) -> Any:
    """The user content answering a model content's function calls."""
    from google.genai import types

    parts = []
    for part in content.parts:
        if part.function_call:
            text = run_tool(part.function_call.name, dict(part.function_call.args or {}))
            response = {"error": text} if text.startswith("Error:") else {"result": json.loads(text)}
            parts.append(types.Part.from_function_response(name=part.function_call.name, response=response))
    return types.Content(role="user", parts=parts)


def handle_ticket(client: Any, ticket: str, stream: bool = False) -> str:
    """Answer one ticket; `stream=True` reads each turn through `generate_content_stream`."""
    from google.genai import types

    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=ticket)])]
    for _ in range(MAX_TURNS):
        if stream:
            chunks = list(client.models.generate_content_stream(model=MODEL, contents=contents, config=_config()))
            parts = [p for c in chunks if c.candidates for p in (c.candidates[0].content.parts or ())]
            content = types.Content(role="model", parts=[p for p in parts if p.function_call or p.text])
        else:
            content = client.models.generate_content(model=MODEL, contents=contents, config=_config()).candidates[0].content
        if not any(p.function_call for p in content.parts):
            return check_reply(ticket, "".join(p.text or "" for p in content.parts))
        contents += [content, _answer(content)]
    raise StepLimitExceeded(f"no answer after {MAX_TURNS} turns")


async def ahandle_ticket(client: Any, ticket: str) -> str:
    """`handle_ticket` with `client.aio`."""
    from google.genai import types

    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=ticket)])]
    for _ in range(MAX_TURNS):
        response = await client.aio.models.generate_content(model=MODEL, contents=contents, config=_config())
        content = response.candidates[0].content
        if not any(p.function_call for p in content.parts):
            return check_reply(ticket, response.text or "")
        contents += [content, _answer(content)]
    raise StepLimitExceeded(f"no answer after {MAX_TURNS} turns")


def handle_ticket_afc(client: Any, ticket: str) -> str:
    """The SDK runs the tools itself (automatic function calling) inside `chats.send_message`."""
    from google.genai import types

    config = types.GenerateContentConfig(
        system_instruction=SYSTEM, tools=list(FUNCTIONS.values()),
        automatic_function_calling=types.AutomaticFunctionCallingConfig(maximum_remote_calls=MAX_TURNS))
    response = client.chats.create(model=MODEL, config=config).send_message(ticket)
    if response.function_calls:
        raise StepLimitExceeded(f"no answer after {MAX_TURNS} turns")
    return check_reply(ticket, response.text or "")


def make_client(base_url: str) -> Any:
    from google import genai
    from google.genai import types

    return genai.Client(api_key="scripted", http_options=types.HttpOptions(base_url=base_url))


def main() -> int:
    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    with ScriptedOpenAIServer(SCRIPTS) as server:
        client = make_client(server.base_url.removesuffix("/v1"))
        answer_tickets(lambda ticket: handle_ticket(client, ticket))
    return 0


if __name__ == "__main__":
    import genai_agent

    sys.exit(genai_agent.main())
