"""The scripted server's Ollama endpoint (`POST /api/chat`), JSON and streamed NDJSON, as
ollama's native client speaks it.

A request's messages are turned into the Chat Completions view the scripts are written against
(an assistant message's `tool_calls`, which carry no id on this wire, get the ids `call_<turn>_<k>`;
a `role: tool` message, which names its tool, answers the earliest unanswered call of that name),
so one script answers every API. The answer is the scripted turn as one `ChatResponse` object
(tool calls with their arguments as JSON objects, no ids; `done_reason` `stop` or `length`), or,
with `stream: true` (the client's default is false), newline-delimited parts: the text in
pieces, the tool calls in one part, then a last part with `done: true` and the token counts.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

PATH = "/api/chat"


def chat_view(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    open_calls: list[dict[str, Any]] = []
    turn = 0
    for message in body.get("messages") or []:
        role = message.get("role") or "user"
        if role == "tool":
            name = message.get("tool_name")
            index = next((i for i, c in enumerate(open_calls) if c["function"]["name"] == name), 0)
            call = open_calls.pop(index) if open_calls else None
            messages.append({"role": "tool", "tool_call_id": call["id"] if call else None,
                             "content": message.get("content") or ""})
            continue
        calls = [{"id": f"call_{turn}_{k}", "type": "function",
                  "function": {"name": c["function"]["name"], "arguments": json.dumps(c["function"].get("arguments") or {})}}
                 for k, c in enumerate(message.get("tool_calls") or ())]
        if role == "assistant":
            turn += 1
            open_calls = list(calls)
        messages.append({"role": role, "content": message.get("content") or "", **({"tool_calls": calls} if calls else {})})
    return messages


def response_body(completion: Mapping[str, Any]) -> dict[str, Any]:
    """An Ollama `ChatResponse` with the same decision as a scripted chat completion."""
    choice = completion["choices"][0]
    message = choice["message"]
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    calls = [{"function": {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}}
             for c in message.get("tool_calls") or ()]
    if calls:
        out["tool_calls"] = calls
    usage = completion["usage"]
    return {"model": completion["model"], "created_at": "2026-12-05T00:00:00Z", "message": out, "done": True,
            "done_reason": "length" if choice["finish_reason"] == "length" else "stop",
            "total_duration": 1_000_000, "prompt_eval_count": usage["prompt_tokens"],
            "eval_count": usage["completion_tokens"]}


def stream_lines(body: Mapping[str, Any]) -> list[bytes]:
    """The same answer as newline-delimited JSON parts."""
    base = {"model": body["model"], "created_at": body["created_at"]}
    text = body["message"]["content"]
    parts = [{**base, "message": {"role": "assistant", "content": text[i:i + 16]}, "done": False}
             for i in range(0, len(text), 16)]
    if body["message"].get("tool_calls"):
        parts.append({**base, "message": {"role": "assistant", "content": "",
                                          "tool_calls": body["message"]["tool_calls"]}, "done": False})
    last = {k: v for k, v in body.items() if k != "message"}
    parts.append({**last, "message": {"role": "assistant", "content": ""}})
    return [json.dumps(part).encode() + b"\n" for part in parts]
