"""`agent_trace.context.hash` stays the documented hash when a caller re-sends one tool list
object it has changed in between (the recorder caches the tools' canonical JSON by identity)."""

from __future__ import annotations

import hashlib
import json

from span_helpers import attrs

import otel_agent_trace
from otel_agent_trace import ChatRequest, ChatResponse, Message


def _canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _documented_hash(model, messages, tools, params) -> str:
    """docs/attributes.md: sha256 of {"model", "messages": [full message hashes], "tools", "params"}."""
    hashes = [hashlib.sha256(_canonical({"role": m.role, "content": m.content})).hexdigest() for m in messages]
    return hashlib.sha256(_canonical({"model": model, "messages": hashes, "tools": tools, "params": params})).hexdigest()


def _tool(name):
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}


def test_context_hash_follows_a_tool_list_changed_in_place(instrument):
    traced = instrument()
    tools = [_tool("lookup_order")]
    messages = [Message(role="system", content="Be brief."), Message(role="user", content="Where is A1001?")]
    seen = []
    with otel_agent_trace.agent_run("tools-change"):
        for change in (None, lambda: tools.append(_tool("refund")), lambda: tools.__setitem__(0, _tool("cancel")),
                       lambda: tools.pop()):
            if change is not None:
                change()
            with otel_agent_trace.record_chat(ChatRequest(model="m", messages=list(messages), tools=tools,
                                                          params={"temperature": 0.5})) as chat:
                chat.stop(ChatResponse(content="ok"))
            seen.append(_documented_hash("m", messages, json.loads(json.dumps(tools)), {"temperature": 0.5}))
    steps = traced.named("agent_step")
    assert len(steps) == 4
    assert [attrs(s)["agent_trace.context.hash"] for s in steps] == seen
    assert len(set(seen)) == 4
