"""The normalized message model providers translate into (`Message`, `ToolCall`, `ChatRequest`,
`ChatResponse`) and its GenAI semantic-convention form (`gen_ai.*.messages`: `to_semconv`,
`semconv_messages`). Plain data, no SDK."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from otel_agent_trace.json_text import parse_json_or_text
from otel_agent_trace.semconv import CONTEXT_MESSAGE_HASHES, CONTEXT_SHARED_PREFIX


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model requested: id, name and arguments (raw JSON text as sent)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Message:
    """One message of a context, provider-neutral.

    `content` is the text (parts joined); `tool_calls` the calls an assistant message carries;
    `tool_call_id` the call a `tool` message answers.
    """

    role: str
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def canonical(self) -> dict[str, Any]:
        """The dict that is hashed: equal for equivalent encodings of the same message."""
        out: dict[str, Any] = {"role": self.role}
        if self.content:
            out["content"] = self.content
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": parse_json_or_text(c.arguments)}
                for c in self.tool_calls
            ]
        if self.tool_call_id:
            out["tool_call_id"] = self.tool_call_id
        if self.name:
            out["name"] = self.name
        return out


@dataclass
class ChatRequest:
    """What the model was asked: the decision-relevant part of a chat request."""

    model: str | None
    messages: list[Message]
    tools: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)  # temperature, tool_choice, ...
    stream: bool = False
    provider: str = "openai"
    # full sha256 of each message (hashing.message_hash), when the provider already has them
    message_hashes: list[str] | None = None
    # when the call began, for a call recorded after it returned (a framework callback)
    started_ns: int | None = None


@dataclass
class ChatResponse:
    """What the model decided."""

    model: str | None = None
    id: str | None = None
    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reasons: list[str] = field(default_factory=list)
    input_tokens: int | None = None  # the whole input, cached tokens included
    output_tokens: int | None = None  # the whole output, reasoning tokens included
    cache_read_tokens: int | None = None  # of input_tokens: read from the provider's prompt cache
    cache_write_tokens: int | None = None  # of input_tokens: written to it (anthropic's cache creation)
    reasoning_tokens: int | None = None  # of output_tokens: reasoning / thinking


def to_semconv(message: Message, finish_reason: str | None = None) -> dict[str, Any]:
    """The GenAI semantic conventions' shape of a message: role + parts (text, tool_call)."""
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "text", "content": message.content})
    for call in message.tool_calls:
        parts.append({"type": "tool_call", "id": call.id, "name": call.name,
                      "arguments": parse_json_or_text(call.arguments)})
    out: dict[str, Any] = {"role": message.role, "parts": parts}
    if finish_reason:
        out["finish_reason"] = finish_reason
    return out


def semconv_messages(value: Any) -> list[Message]:
    """Messages of a semconv messages attribute (JSON text or parsed); unreadable items skipped."""
    parsed = parse_json_or_text(value)
    out: list[Message] = []
    if not isinstance(parsed, list):
        return out
    for m in parsed:
        if not isinstance(m, dict):
            continue
        texts, calls, answered = [], [], None
        for part in m.get("parts") or ():
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text":
                texts.append(str(part.get("content", "")))
            elif kind == "tool_call":
                args = part.get("arguments")
                calls.append(ToolCall(str(part.get("id") or ""), str(part.get("name") or ""),
                                      args if isinstance(args, str) else orjson.dumps(args).decode()))
            elif kind == "tool_call_response":
                answered = str(part.get("id") or "") or None
                response = part.get("response", part.get("result"))
                texts.append(response if isinstance(response, str) else orjson.dumps(response, default=str).decode())
        if "content" in m and not texts:
            texts.append(str(m["content"]))
        tool_call_id = m.get("tool_call_id")
        out.append(Message(str(m.get("role") or ""), "\n".join(texts) or None, tuple(calls),
                           answered or (str(tool_call_id) if tool_call_id else None)))
    return out


def context_hashes(previous: list[str] | None, attributes: Any) -> list[str] | None:
    """A step's whole context (its messages' short hashes, in order), from its attributes and the
    previous step's whole context: `message_hashes` alone when the step names no shared prefix
    (the first step, a rewritten history, traces written before the prefix existed); else the
    previous step's first `shared_prefix` hashes, then the listed ones. None when unknown (no
    hashes recorded, or a prefix whose previous step is not known)."""
    hashes = attributes.get(CONTEXT_MESSAGE_HASHES)
    if not isinstance(hashes, (list, tuple)):
        return None
    prefix = attributes.get(CONTEXT_SHARED_PREFIX)
    if not isinstance(prefix, int) or isinstance(prefix, bool) or prefix <= 0:
        return list(hashes)
    if previous is None or prefix > len(previous):
        return None
    return previous[:prefix] + list(hashes)
