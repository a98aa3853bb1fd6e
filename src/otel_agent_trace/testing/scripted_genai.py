"""The scripted server's Gemini API endpoints (`POST /v1beta/models/{model}:generateContent`, and
`:streamGenerateContent?alt=sse`), JSON and SSE, as google-genai's client speaks them.

A request's `contents` are turned into the Chat Completions view the scripts are written
against (`systemInstruction` → a system message, a `model` content's `functionCall` parts → an
assistant message's tool calls, `functionResponse` parts → tool messages), so one script answers
every API; the answer is the scripted turn as a `GenerateContentResponse` (tool calls as
`functionCall` parts, without ids, as Gemini often sends them) or its stream of chunks.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

ROUTES = (":generateContent", ":streamGenerateContent")


def route(path: str) -> tuple[str, bool] | None:
    """(model, streamed) of a Gemini API path, else None."""
    tail = path.partition("?")[0].rstrip("/").rpartition("/")[2]
    model, colon, method = tail.partition(":")
    if not colon or f":{method}" not in ROUTES:
        return None
    return model, method == "streamGenerateContent"


def _texts(parts: list[Mapping[str, Any]]) -> str:
    return "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought"))


def chat_view(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    system = body.get("systemInstruction")
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": _texts(system.get("parts") or [])})
    for index, content in enumerate(body.get("contents") or []):
        parts = content.get("parts") or []
        for part in parts:
            response = part.get("functionResponse")
            if response:
                messages.append({"role": "tool", "tool_call_id": response.get("id") or response.get("name"),
                                 "content": json.dumps(response.get("response"))})
        calls = [{"id": p["functionCall"].get("id") or f"call_{index}_{k}", "type": "function",
                  "function": {"name": p["functionCall"]["name"], "arguments": json.dumps(p["functionCall"].get("args") or {})}}
                 for k, p in enumerate(p for p in parts if p.get("functionCall"))]
        text = _texts(parts)
        if text or calls:
            role = "assistant" if content.get("role") == "model" else "user"
            messages.append({"role": role, "content": text, **({"tool_calls": calls} if calls else {})})
    return messages


def response_body(completion: Mapping[str, Any]) -> dict[str, Any]:
    """A `GenerateContentResponse` with the same decision as a scripted chat completion."""
    message = completion["choices"][0]["message"]
    parts: list[dict[str, Any]] = []
    if message.get("content"):
        parts.append({"text": message["content"]})
    for call in message.get("tool_calls") or ():
        parts.append({"functionCall": {"name": call["function"]["name"], "args": json.loads(call["function"]["arguments"])}})
    usage = completion["usage"]
    thoughts = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    metadata = {"promptTokenCount": usage["prompt_tokens"], "candidatesTokenCount": usage["completion_tokens"] - (thoughts or 0),
                "totalTokenCount": usage["total_tokens"]}
    if "prompt_tokens_details" in usage:  # a turn's `usage` details (scripted_openai): Gemini's names
        metadata["cachedContentTokenCount"] = usage["prompt_tokens_details"].get("cached_tokens", 0)
    if thoughts is not None:
        metadata["thoughtsTokenCount"] = thoughts
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": metadata,
        "modelVersion": completion["model"],
        "responseId": completion["id"].replace("chatcmpl-", "genai-"),
    }


def stream_chunks(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The same response as streamed chunks: text in pieces, each function call whole, the finish
    reason and usage on the last chunk."""
    candidate = response["candidates"][0]
    base = {"modelVersion": response["modelVersion"], "responseId": response["responseId"]}
    chunks = []
    for part in candidate["content"]["parts"]:
        pieces = [{"text": part["text"][i:i + 16]} for i in range(0, len(part["text"]), 16)] if "text" in part else [part]
        chunks += [{**base, "candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}]} for p in pieces]
    last = {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": candidate["finishReason"], "index": 0}
    chunks.append({**base, "candidates": [last], "usageMetadata": response["usageMetadata"]})
    return chunks


def sse(chunks: list[dict[str, Any]]) -> list[bytes]:
    return [b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n" for chunk in chunks]
