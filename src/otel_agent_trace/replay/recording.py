"""A recorded run read back for replay: each step's context and the model's answer to it.

Read with the analyzer's readers (`minimizer.trajectory.select_run` picks the run as `minimize`
does); nothing here imports the recorder or the SDK. A step's context is its message hashes
(`agent_trace.context.message_hashes`) and the messages it added (`agent_trace.context.new_messages`,
content capture only); the answer is its chat span's `gen_ai.output.messages`, usage and ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from otel_agent_trace.json_text import parse_json_or_text
from otel_agent_trace.messages import ChatResponse, Message, semconv_messages
from otel_agent_trace.semconv import (
    CONTEXT_HASH,
    CONTEXT_MESSAGE_HASHES,
    CONTEXT_NEW_MESSAGES,
    ERROR_TYPE_SEMCONV,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_RESPONSE_ID,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    OUTPUT_MESSAGE_HASH,
    STEP_INDEX,
    TOOL_OUTCOME,
    TOOL_SOURCE,
)
from otel_agent_trace.replay.errors import CONTENT_SETTING, RecordedToolError, ReplayUnavailable


@dataclass
class RecordedStep:
    index: int
    context_hash: str | None
    message_hashes: list[str]  # short hashes, in context order
    response: ChatResponse
    output_hash: str | None  # short hash of the answer as the recording saw it


@dataclass
class RecordedTool:
    name: str
    arguments: Any
    result: Any
    source: str | None
    outcome: str | None = None
    error: str | None = None  # the recorded exception's status text ("Type: message")
    error_type: str | None = None  # its class name (`error.type`)

    @property
    def raised(self) -> bool:
        """It raised in the recording (a TimeoutError is recorded as outcome `timeout`)."""
        return self.outcome == "exception" or (self.outcome == "timeout" and self.error_type is not None)

    def exception(self) -> Exception:
        """The recorded exception, to raise again: a `RecordedToolError` named like the original
        and with its message, so an agent that sends `f"{type(e).__name__}: {e}"` or `str(e)` back
        to the model sends what it sent in the recording."""
        name = (self.error_type or "").rpartition(".")[2]
        message = self.error or f"{self.name}: an exception"
        if name and message.startswith(name + ": "):
            message = message[len(name) + 2:]
        if not name.isidentifier():
            return RecordedToolError(f"{self.name} raised in the recording: {message}")
        return type(name, (RecordedToolError,), {"__module__": RecordedToolError.__module__})(message)


@dataclass
class Recording:
    path: str
    trace_id: str
    steps: list[RecordedStep]
    messages: dict[str, Message] = field(default_factory=dict)  # short hash -> message
    tools: list[RecordedTool] = field(default_factory=list)


def load(path: str, trace_id: str | None = None) -> Recording:
    """The run of `trace_id` (a unique prefix) in `path`, else its only run, ready to replay."""
    from otel_agent_trace.minimizer.trajectory import MinimizeError, select_run

    try:
        run, _bad = select_run(path, trace_id)
    except MinimizeError as exc:
        raise ReplayUnavailable(str(exc).replace("--trace-id", "a trace id (FILE#TRACE_ID)")) from None
    where = f"{path}#{run.trace_id}"
    messages: dict[str, Message] = {}
    steps: list[RecordedStep] = []
    for step in run.steps:
        chat = next((c for c in run.chats if c.parent_id == step.span_id), None)
        index = step.attributes.get(STEP_INDEX)
        if chat is None or GEN_AI_OUTPUT_MESSAGES not in chat.attributes:
            raise ReplayUnavailable(
                f"{where}: step {index} has no recorded model answer: the trace was recorded without content "
                f"capture; record it again with {CONTENT_SETTING}")
        for item in parse_json_or_text(step.attributes.get(CONTEXT_NEW_MESSAGES)) or ():
            if isinstance(item, dict) and isinstance(item.get("message"), dict):
                found = from_canonical(item["message"])
                if found is not None:
                    messages[str(item.get("hash"))] = found
        outputs = semconv_messages(chat.attributes[GEN_AI_OUTPUT_MESSAGES])
        if not outputs:
            raise ReplayUnavailable(
                f"{where}: step {index}'s recorded answer is unreadable (clipped?); record it again with a larger "
                "OTEL_AGENT_TRACE_MAX_ATTRIBUTE_BYTES")
        out = outputs[0]
        attrs = chat.attributes
        steps.append(RecordedStep(
            index=index if isinstance(index, int) else len(steps),
            context_hash=step.attributes.get(CONTEXT_HASH),
            message_hashes=list(step.attributes.get(CONTEXT_MESSAGE_HASHES) or ()),
            response=ChatResponse(
                model=attrs.get(GEN_AI_RESPONSE_MODEL), id=attrs.get(GEN_AI_RESPONSE_ID), content=out.content,
                tool_calls=list(out.tool_calls), finish_reasons=list(attrs.get(GEN_AI_RESPONSE_FINISH_REASONS) or ()),
                input_tokens=attrs.get(GEN_AI_USAGE_INPUT_TOKENS), output_tokens=attrs.get(GEN_AI_USAGE_OUTPUT_TOKENS)),
            output_hash=attrs.get(OUTPUT_MESSAGE_HASH)))
    if not steps:
        raise ReplayUnavailable(f"{where}: the run made no model call to replay")
    tools = [RecordedTool(str(t.attributes.get(GEN_AI_TOOL_NAME) or t.name.split(" ", 1)[-1]),
                          parse_json_or_text(t.attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS)),
                          parse_json_or_text(t.attributes.get(GEN_AI_TOOL_CALL_RESULT)),
                          t.attributes.get(TOOL_SOURCE), t.attributes.get(TOOL_OUTCOME),
                          t.status_message or None, t.attributes.get(ERROR_TYPE_SEMCONV)) for t in run.tools]
    return Recording(path, run.trace_id, steps, messages, tools)


def from_canonical(raw: dict[str, Any]) -> Message | None:
    """A message of `new_messages` (`Message.canonical()` form) back as a `Message`."""
    from otel_agent_trace.messages import ToolCall

    calls = tuple(ToolCall(str(c.get("id") or ""), str(c.get("name") or ""),
                           c["arguments"] if isinstance(c.get("arguments"), str) else _dumps(c.get("arguments")))
                  for c in raw.get("tool_calls") or () if isinstance(c, dict))
    return Message(str(raw.get("role") or ""), raw.get("content"), calls, raw.get("tool_call_id"), raw.get("name"))


def _dumps(value: Any) -> str:
    import orjson

    return orjson.dumps(value).decode()
