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

from otel_agent_trace.providers import genai_replay
from otel_agent_trace.providers.genai_replay import stream_chunks  # noqa: F401  (the server's stream: the replay's)

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
    """A `GenerateContentResponse` with the same decision as a scripted chat completion (the wire
    form is the product's, `providers/genai_replay.response_body`: replay sends the same)."""
    message = completion["choices"][0]["message"]
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]), None) for c in message.get("tool_calls") or ()]
    usage = completion["usage"]
    thoughts = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    metadata = {"promptTokenCount": usage["prompt_tokens"], "candidatesTokenCount": usage["completion_tokens"] - (thoughts or 0),
                "totalTokenCount": usage["total_tokens"]}
    if "prompt_tokens_details" in usage:  # a turn's `usage` details (scripted_openai): Gemini's names
        metadata["cachedContentTokenCount"] = usage["prompt_tokens_details"].get("cached_tokens", 0)
    if thoughts is not None:
        metadata["thoughtsTokenCount"] = thoughts
    return genai_replay.response_body(message.get("content"), calls, usage=metadata, model_version=completion["model"],
                                      response_id=completion["id"].replace("chatcmpl-", "genai-"))


def sse(chunks: list[dict[str, Any]]) -> list[bytes]:
    return [b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n" for chunk in chunks]
