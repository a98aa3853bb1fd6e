"""A home-grown HTTP client for an OpenAI-compatible endpoint, recorded with the public API.

Nothing of ours patches `urllib`: `record_chat` / `record_tool` are how a client or framework we
do not know becomes decision steps (docs/architecture.md, "Extension API").
"""

from __future__ import annotations

import json
import urllib.request

from otel_agent_trace import ChatRequest, ChatResponse, Message, ToolCall, record_chat, record_tool


def to_message(raw: dict) -> Message:
    calls = tuple(ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in raw.get("tool_calls") or ())
    return Message(raw["role"], raw.get("content"), calls, raw.get("tool_call_id"), raw.get("name"))


def chat(base_url: str, model: str, messages: list[dict], tools: list[dict]) -> dict:
    """POST /chat/completions; the request and reply are recorded as one step."""
    request = ChatRequest(model=model, messages=[to_message(m) for m in messages], tools=tools, provider="homegrown")
    with record_chat(request) as recording:
        body = json.dumps({"model": model, "messages": messages, "tools": tools}).encode()
        http = urllib.request.Request(base_url + "/chat/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(http, timeout=30) as reply:
            completion = json.load(reply)
        choice = completion["choices"][0]
        message = to_message(choice["message"])
        usage = completion.get("usage") or {}
        recording.stop(ChatResponse(model=completion.get("model"), id=completion.get("id"), content=message.content,
                                    tool_calls=list(message.tool_calls), finish_reasons=[choice["finish_reason"]],
                                    input_tokens=usage.get("prompt_tokens"), output_tokens=usage.get("completion_tokens")))
    return choice["message"]


def run_agent(base_url: str, ticket: str, tools: dict, schemas: list[dict], system: str, turns: int = 6) -> str:
    """The usual loop; each tool runs inside `record_tool`, matched to the model's call by id."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": ticket}]
    for _ in range(turns):
        message = chat(base_url, "gpt-4o-mini", messages, schemas)
        messages.append(message)
        if not message.get("tool_calls"):
            return message.get("content") or ""
        for call in message["tool_calls"]:
            name, arguments = call["function"]["name"], json.loads(call["function"]["arguments"] or "{}")
            with record_tool(name, arguments, call_id=call["id"]) as recording:
                result = json.dumps(tools[name](**arguments))
                recording.stop(result)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    raise RuntimeError("no answer")
