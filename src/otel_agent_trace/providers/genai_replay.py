"""Replay for google-genai: the `GenerateContentResponse`s a recorded `ChatResponse` stands for.

`Models._generate_content` (and `AsyncModels`') gets one real `GenerateContentResponse`, made by
the SDK's own `GenerateContentResponse._from_response` (what the live method ends with, so
`.parsed` is filled for a `response_schema`) from the recorded answer in the Gemini API's wire
form: the text as one part, then a `functionCall` part per tool call. `_generate_content_stream`
gets a stream of them: text in 16-character pieces, each function call whole, the finish reason
and usage last (`stream_chunks`, the same chunks the scripted test server sends). The SDK's
public methods run on top unchanged: `generate_content` with automatic function calling runs the
functions for real (or answers them from the recording under `replay_tools=recorded`: they are
explicit tools, genai.as_tool), `chats` keep their history, `aio` awaits the same objects.

Call ids: Gemini often sends none, and the recorder names such a call by its place,
`call_{turn}_{k}`. A recorded id of exactly that form is sent back without an id, as the
provider sent it, so the agent's function responses, hence the next request's context hash,
are the recording's; any other id is sent as recorded.

Thought parts are not recorded, so a replayed response has none; an answer recorded with
`should_return_http_response` (no parsed candidates) replays as an empty response.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from otel_agent_trace.messages import ChatRequest, ChatResponse
from otel_agent_trace.providers._replayed import answer, is_async_client, stream
from otel_agent_trace.providers._translate import get as _get

PIECE = 16  # characters of text per streamed chunk


def response_body(text: str | None, calls: Iterable[tuple[str, Any, str | None]], *, finish: str = "STOP",
                  usage: Mapping[str, int] | None = None, model_version: str | None = None,
                  response_id: str | None = None) -> dict[str, Any]:
    """A `GenerateContentResponse` in the wire form: `calls` are (name, args, id or None)."""
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    for name, args, call_id in calls:
        parts.append({"functionCall": {**({"id": call_id} if call_id else {}), "name": name, "args": args}})
    body: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish,
                                           "index": 0}]}
    for key, value in (("usageMetadata", usage), ("modelVersion", model_version), ("responseId", response_id)):
        if value is not None:
            body[key] = dict(value) if key == "usageMetadata" else value
    return body


def stream_chunks(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The same response as streamed chunks: text in pieces, each function call whole, the finish
    reason and usage on the last chunk."""
    candidate = response["candidates"][0]
    base = {k: response[k] for k in ("modelVersion", "responseId") if k in response}
    chunks = []
    for part in candidate["content"]["parts"]:
        pieces = [{"text": part["text"][i:i + PIECE]} for i in range(0, len(part["text"]), PIECE)] \
            if "text" in part else [part]
        chunks += [{**base, "candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}]} for p in pieces]
    last = {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": candidate["finishReason"], "index": 0}
    usage = {"usageMetadata": response["usageMetadata"]} if "usageMetadata" in response else {}
    chunks.append({**base, "candidates": [last], **usage})
    return chunks


def recorded_body(response: ChatResponse, turn: int | None) -> dict[str, Any]:
    """The recorded answer as a `GenerateContentResponse` wire body (see the module docstring)."""
    calls = []
    for k, call in enumerate(response.tool_calls):
        try:
            args = json.loads(call.arguments or "{}")
        except ValueError:
            args = {}
        calls.append((call.name, args if isinstance(args, dict) else {}, None if call.id == f"call_{turn}_{k}" else call.id))
    return response_body(response.content, calls, finish=response.finish_reasons[0] if response.finish_reasons else "STOP",
                         usage=_usage(response), model_version=response.model, response_id=response.id)


def _usage(response: ChatResponse) -> dict[str, int] | None:
    """Gemini's counts: candidates exclude thoughts, which the recorder added to the output."""
    if response.input_tokens is None and response.output_tokens is None:
        return None
    prompt, output, thoughts = response.input_tokens or 0, response.output_tokens or 0, response.reasoning_tokens
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": output - (thoughts or 0),
             "totalTokenCount": prompt + output}
    if response.cache_read_tokens is not None:
        usage["cachedContentTokenCount"] = response.cache_read_tokens
    if thoughts is not None:
        usage["thoughtsTokenCount"] = thoughts
    return usage


def _sdk_response(body: dict[str, Any], config: Any, content_type: str) -> Any:
    """The SDK's object, built as the live method builds it (`response_schema` → `.parsed`)."""
    from google.genai import types

    schema = {"config": {k: _get(config, k) for k in ("response_schema", "response_json_schema")}} \
        if config is not None else {}
    result = types.GenerateContentResponse._from_response(response=body, kwargs=schema)
    result.sdk_http_response = types.HttpResponse(headers={"content-type": content_type})
    return result


def build(response: ChatResponse, request: ChatRequest, instance: Any, kwargs: dict[str, Any], method: str) -> Any:
    """`_generate_content`: one `GenerateContentResponse` (awaitable for `AsyncModels`)."""
    body = recorded_body(response, getattr(request, "turn", None))
    return answer(_sdk_response(body, kwargs.get("config"), "application/json"), is_async_client(instance))


def build_stream(response: ChatResponse, request: ChatRequest, instance: Any, kwargs: dict[str, Any],
                 method: str) -> Any:
    """`_generate_content_stream`: an iterator of chunks (for `AsyncModels` an awaitable of an
    async iterator, as the live method)."""
    is_async = is_async_client(instance)
    config = kwargs.get("config")
    chunks = [_sdk_response(c, config, "text/event-stream")
              for c in stream_chunks(recorded_body(response, getattr(request, "turn", None)))]
    return answer(stream(chunks, is_async), is_async)
