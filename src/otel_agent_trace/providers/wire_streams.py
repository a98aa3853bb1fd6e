"""Provider wire formats as streams: an answer's body expanded into the stream events the
provider's API sends for it, and their server-sent-events framing.

Product code, shared by two users that must agree: replay (`providers/anthropic_replay.py`,
`responses_replay.py` turn a recorded answer into the SDK's real stream event objects) and the
scripted test server (`scripted_servers/scripted_anthropic.py`, `scripted_responses.py` send them over
HTTP). Plain dicts in, plain dicts (or bytes) out; no SDK imported.
"""

from __future__ import annotations

import json
from typing import Any, Mapping


def anthropic_stream_events(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An anthropic Messages `message` as its `RawMessageStreamEvent`s (text in pieces, tool
    input as JSON deltas)."""
    start = {**message, "content": [], "stop_reason": None,
             "usage": {**message["usage"], "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
            text = block["text"]
            events += [{"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": text[i:i + 16]}} for i in range(0, len(text), 16)]
        else:
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {**block, "input": {}}})
            arguments = json.dumps(block["input"])
            half = len(arguments) // 2
            events += [{"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": part}}
                       for part in (arguments[:half], arguments[half:])]
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                   "usage": {"output_tokens": message["usage"]["output_tokens"]}})
    events.append({"type": "message_stop"})
    return events


def responses_stream_events(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An OpenAI Responses `response` as its `ResponseStreamEvent`s: created, each item (text and
    arguments as deltas), completed."""
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": started},
                                    {"type": "response.in_progress", "response": started}]
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": {**item, "status": "in_progress", "content": []}})
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            events.append({"type": "response.content_part.added", **where,
                           "part": {"type": "output_text", "text": "", "annotations": []}})
            for start in range(0, len(text), 16):
                events.append({"type": "response.output_text.delta", **where, "delta": text[start:start + 16],
                               "logprobs": []})
            events.append({"type": "response.output_text.done", **where, "text": text, "logprobs": []})
            events.append({"type": "response.content_part.done", **where, "part": item["content"][0]})
        else:
            args = item["arguments"]
            half = len(args) // 2
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": {**item, "status": "in_progress", "arguments": ""}})
            for delta in (args[:half], args[half:]):
                events.append({"type": "response.function_call_arguments.delta", "item_id": item["id"],
                               "output_index": index, "delta": delta})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": response})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


def sse(events: list[dict[str, Any]]) -> bytes:
    """Named server-sent events (`event:` its type, `data:` its JSON), as both APIs send them."""
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def chat_sse(chunks: list[dict[str, Any]]) -> bytes:
    """Chat Completions chunks as server-sent events, ended by `[DONE]`."""
    return b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"
