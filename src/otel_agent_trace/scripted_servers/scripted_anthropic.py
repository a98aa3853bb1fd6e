"""The scripted server's anthropic Messages endpoint (`POST /v1/messages`), JSON and SSE.

A Messages request is turned into the Chat Completions view the scripts are written against
(`system` → a system message, `tool_use` blocks → an assistant message's tool calls,
`tool_result` blocks → tool messages), so one script answers every API; the answer is the
scripted turn as a `message` (tool calls as `tool_use` blocks) or its stream of events.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

# the stream expansion replay shares, under the name the server uses
from otel_agent_trace.providers.wire_streams import anthropic_stream_events as stream_events


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(b.get("text") or "" for b in content if isinstance(b, dict) and b.get("type") == "text")
    return content or ""


def chat_view(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    system = body.get("system")
    messages: list[dict[str, Any]] = [{"role": "system", "content": _text(system)}] if system else []
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        for block in blocks:
            if block.get("type") == "tool_result":
                messages.append({"role": "tool", "tool_call_id": block["tool_use_id"],
                                 "content": _text(block.get("content"))})
        calls = [{"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": json.dumps(b["input"])}}
                 for b in blocks if b.get("type") == "tool_use"]
        texts = [b for b in blocks if b.get("type") == "text"]
        if texts or calls:
            messages.append({"role": message["role"], "content": _text(texts), **({"tool_calls": calls} if calls else {})})
    return messages


def message_body(completion: Mapping[str, Any]) -> dict[str, Any]:
    """A Messages API `message` with the same decision as a scripted chat completion."""
    message = completion["choices"][0]["message"]
    content: list[dict[str, Any]] = []
    if message.get("content"):
        content.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or ():
        content.append({"type": "tool_use", "id": call["id"].replace("call_", "toolu_"), "name": call["function"]["name"],
                        "input": json.loads(call["function"]["arguments"])})
    usage = completion["usage"]
    cache = usage.get("prompt_tokens_details") or {}
    read, write = cache.get("cached_tokens", 0), cache.get("cache_write_tokens", 0)
    counts = {"input_tokens": max(usage["prompt_tokens"] - read - write, 0), "output_tokens": usage["completion_tokens"]}
    if cache:  # anthropic counts cached input apart from input_tokens
        counts.update(cache_read_input_tokens=read, cache_creation_input_tokens=write)
    return {"id": completion["id"].replace("chatcmpl-", "msg_"), "type": "message", "role": "assistant",
            "model": completion["model"], "content": content,
            "stop_reason": "tool_use" if message.get("tool_calls") else "end_turn", "stop_sequence": None,
            "usage": counts}
