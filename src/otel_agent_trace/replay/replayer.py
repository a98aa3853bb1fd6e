"""Matching each live request to a recorded step, and saying where a run leaves its recording.

Matching: the request's context hash equal to an unanswered recorded step's, else the next
recorded step in order when the request's messages are that step's (answers the replay itself
gave count as the recorded ones they stand for: a redacted recording replays redacted text, whose
hash differs). Anything else is a divergence, reported once, naming the first differing message;
`strict` raises `ReplayDivergence`, `fallthrough` lets this and every later call go live.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import orjson

from otel_agent_trace import hashing
from otel_agent_trace.json_text import parse_json_or_text
from otel_agent_trace.messages import ChatRequest, ChatResponse, Message
from otel_agent_trace.replay.errors import ReplayDivergence
from otel_agent_trace.replay.recording import Recording, RecordedStep

MODES = ("strict", "fallthrough")
TOOL_MODES = ("live", "recorded")
LIVE = object()  # no recorded answer: call the real thing


class Replayer:
    def __init__(self, recording: Recording, mode: str = "strict", tools: str = "live"):
        if mode not in MODES:
            raise ValueError(f"replay_mode must be one of {', '.join(MODES)}")
        if tools not in TOOL_MODES:
            raise ValueError(f"replay_tools must be one of {', '.join(TOOL_MODES)}")
        self.recording = recording
        self.mode = mode
        self.tools = tools
        self.used: set[int] = set()
        self.cursor = 0  # next recorded step in order
        self.calls = 0  # requests seen (the live step number)
        self.stand_for: dict[str, str] = {}  # short hash of an answer we gave -> recorded short hash
        self.diverged: str | None = None
        self.tools_used: set[int] = set()
        self._lock = threading.Lock()
        if tools == "recorded" and self.unstubbable():
            print(f"otel-agent-trace replay: replay_tools=recorded cannot stub {', '.join(self.unstubbable())}: the "
                  "recording inferred them from the conversation (they live in the agent's code) and they run live; "
                  "decorate them with @otel_agent_trace.tool or name them in OTEL_AGENT_TRACE_TOOLS to stub them",
                  file=sys.stderr)

    def tool_answer(self, name: str, arguments: Any) -> Any:
        """The recorded result of this tool call (same name and arguments, else the next unused
        call of that name), or LIVE when the recording has none; a recorded exception is raised."""
        key = hashing.canonical_json(parse_json_or_text(_plain(arguments)))
        with self._lock:
            candidates = [t for i, t in enumerate(self.recording.tools) if i not in self.tools_used and t.name == name]
            found = next((t for t in candidates if hashing.canonical_json(t.arguments) == key), None)
            found = found or (candidates[0] if candidates else None)
            if found is None:
                print(f"otel-agent-trace replay: no recorded call of tool {name}; it runs live", file=sys.stderr)
                return LIVE
            self.tools_used.add(self.recording.tools.index(found))
        if found.raised:
            raise found.exception()
        return found.result

    def unstubbable(self) -> list[str]:
        """Tools the recording inferred from the conversation: they live in the agent's code, so
        `replay_tools=recorded` cannot answer them (they run live)."""
        return sorted({t.name for t in self.recording.tools if t.source == "inferred"})

    @property
    def origin(self) -> str:
        return self.recording.trace_id

    def answer(self, request: ChatRequest) -> ChatResponse | None:
        """The recorded answer to `request`; None: go live (fallthrough after a divergence)."""
        with self._lock:
            step_no = self.calls
            self.calls += 1
            if self.diverged is not None:
                return None
            hashes = request.message_hashes or [hashing.message_hash(m) for m in request.messages]
            found = self._match(request, hashes)
            if isinstance(found, tuple):
                text, index = found
                self.diverged = f"step {step_no}: {text}"
                print(f"otel-agent-trace replay: {self.diverged}"
                      + ("; stopping (replay_mode=strict)" if self.mode == "strict" else "; going on live (replay_mode=fallthrough)"),
                      file=sys.stderr)
                if self.mode == "strict":
                    raise ReplayDivergence(f"replay of {self.recording.trace_id} diverged at {self.diverged}",
                                           step_no, index)
                return None
            self.used.add(found.index)
            self.cursor = max(self.cursor, self.recording.steps.index(found) + 1)
            response = found.response
            given = Message("assistant", response.content, tuple(response.tool_calls))
            if found.output_hash:
                self.stand_for[hashing.message_hash(given)[: hashing.SHORT]] = found.output_hash
            return response

    def _match(self, request: ChatRequest, hashes: list[str]) -> "RecordedStep | tuple[str, int | None]":
        context = hashing.context_hash(request.model, hashes, request.tools, request.params)
        steps = self.recording.steps
        for step in steps:
            if step.index not in self.used and step.context_hash == context:
                return step
        if self.cursor >= len(steps):
            return f"the recording has {len(steps)} model calls and this run makes more", None
        step = steps[self.cursor]
        short = [self.stand_for.get(h[: hashing.SHORT], h[: hashing.SHORT]) for h in hashes]
        if short == step.message_hashes:
            return step
        return self._difference(request, short, step.message_hashes)

    def _difference(self, request: ChatRequest, live: list[str], recorded: list[str]) -> tuple[str, int | None]:
        at = "the context differs from the recording at message"
        for i, (a, b) in enumerate(zip(live, recorded)):
            if a != b:
                return f"{at} {i} ({_describe(request.messages, i)})", i
        i = min(len(live), len(recorded))
        if len(live) > len(recorded):
            return f"{at} {i} ({_describe(request.messages, i)}, which the recording did not have)", i
        if len(live) < len(recorded):
            missing = self.recording.messages.get(recorded[i])
            what = _describe([missing], 0) if missing is not None else "a message"
            return f"{at} {i} (the recording had {what} there, this run has none)", i
        return "the model, tools or request parameters differ from the recording (the messages are the same)", None


def _describe(messages: list[Message], i: int) -> str:
    message = messages[i]
    if message.role == "tool":
        name = message.name or _caller(messages[:i], message.tool_call_id)
        return f"tool result of {name}" if name else "tool result"
    if message.role == "assistant" and message.tool_calls:
        return "assistant call of " + ", ".join(c.name for c in message.tool_calls)
    return f"{message.role} message"


def _caller(earlier: list[Message], call_id: str | None) -> str | None:
    for message in reversed(earlier):
        for call in message.tool_calls:
            if call.id == call_id:
                return call.name
    return None


def _plain(value: Any) -> Any:
    """Arguments as the recording wrote them (JSON types)."""
    return value if isinstance(value, (str, bytes)) else orjson.loads(orjson.dumps(value, default=str))
