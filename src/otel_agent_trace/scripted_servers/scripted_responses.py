"""The scripted server's OpenAI Responses endpoint (`POST /v1/responses`), JSON and SSE.

A Responses request is turned into the Chat Completions view the scripts are written against
(instructions → system, input items → messages, `function_call` items → an assistant message's
tool calls, `function_call_output` → tool messages), prefixed by the stored conversation of its
`previous_response_id` or `conversation` (`POST /v1/conversations` creates one), so one script
answers both APIs. Each response's conversation is kept
(like the real API's `store`), and its output is built from the scripted turn.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any, Mapping

# the stream expansion (and SSE framing) replay shares, under the names the server uses
from otel_agent_trace.providers.wire_streams import responses_stream_events as stream_events
from otel_agent_trace.providers.wire_streams import sse

_ids = itertools.count(1)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(p.get("text") or "" for p in content if isinstance(p, dict))
    return content or ""


def conversation_id(body: Mapping[str, Any]) -> str | None:
    """The `conversation` a request continues (an id, or `{"id": ...}`)."""
    conversation = body.get("conversation")
    return conversation if isinstance(conversation, str) else (conversation or {}).get("id")


def add_items(conversation: str, body: Mapping[str, Any], stored: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """`POST /v1/conversations/{id}/items`: the items join the stored conversation."""
    items = list(body.get("items") or [])
    stored[conversation] = [*stored.get(conversation, []), *chat_view({"input": items}, {})]
    data = [{"id": f"item_scripted_{next(_ids)}", "type": "message", "status": "completed",
             "role": item.get("role", "user"), "content": [{"type": "input_text", "text": item.get("content", "")}]}
            for item in items if isinstance(item, dict)]
    return {"object": "list", "data": data, "has_more": False,
            "first_id": data[0]["id"] if data else None, "last_id": data[-1]["id"] if data else None}


def new_conversation(body: Mapping[str, Any], stored: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """`POST /v1/conversations`: a server-side conversation holding the given items."""
    conversation = {"id": f"conv_scripted_{next(_ids)}", "object": "conversation", "created_at": int(time.time()),
                    "metadata": body.get("metadata") or {}}
    stored[conversation["id"]] = chat_view({"input": body.get("items") or []}, {})
    return conversation


def chat_view(body: Mapping[str, Any], stored: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The request's whole conversation as Chat Completions messages: the stored one of its
    `previous_response_id` or `conversation`, then its input."""
    messages = list(stored.get(body.get("previous_response_id") or conversation_id(body) or "", []))
    if body.get("instructions") and not (messages and messages[0]["role"] == "system"):
        messages.insert(0, {"role": "system", "content": body["instructions"]})
    items = body.get("input") or []
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items:
        kind = item.get("type")
        if kind == "function_call":
            call = {"id": item["call_id"], "type": "function",
                    "function": {"name": item["name"], "arguments": item.get("arguments") or ""}}
            if messages and messages[-1]["role"] == "assistant" and "tool_call_id" not in messages[-1]:
                messages[-1] = {**messages[-1], "tool_calls": [*(messages[-1].get("tool_calls") or []), call]}
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": _text(item.get("output"))})
        elif kind in (None, "message"):
            messages.append({"role": item.get("role") or "user", "content": _text(item.get("content"))})
    return messages


def response_body(completion: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """A `response` object with the same decision as a scripted chat completion."""
    message = completion["choices"][0]["message"]
    number = next(_ids)
    output: list[dict[str, Any]] = []
    if message.get("content"):
        output.append({"type": "message", "id": f"msg_{number}", "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": message["content"], "annotations": []}]})
    for call in message.get("tool_calls") or ():
        output.append({"type": "function_call", "id": f"fc_{call['id']}", "call_id": call["id"], "status": "completed",
                       "name": call["function"]["name"], "arguments": call["function"]["arguments"]})
    usage = completion["usage"]
    return {
        "id": f"resp_scripted_{number}", "object": "response", "created_at": int(time.time()), "status": "completed",
        "model": completion["model"], "output": output, "error": None, "incomplete_details": None,
        "instructions": body.get("instructions"), "metadata": {}, "parallel_tool_calls": True,
        "temperature": 1.0, "top_p": 1.0, "tool_choice": "auto", "tools": body.get("tools") or [],
        "previous_response_id": body.get("previous_response_id"),
        **({"conversation": {"id": conversation_id(body)}} if conversation_id(body) else {}),
        "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"],
                  "total_tokens": usage["total_tokens"],
                  "input_tokens_details": {"cached_tokens": (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)},
                  "output_tokens_details": {
                      "reasoning_tokens": (usage.get("completion_tokens_details") or {}).get("reasoning_tokens", 0)}},
    }
