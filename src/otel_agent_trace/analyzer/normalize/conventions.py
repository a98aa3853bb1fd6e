"""What each foreign convention says about a span: its role and, per role, the facts we need.

- OpenInference (`openinference.span.kind`): AGENT → run, LLM → decision, TOOL → tool;
  messages in `llm.input_messages.N.message.*` / `llm.output_messages.N.message.tool_calls.M.tool_call.*`,
  tool name `tool.name`, arguments `input.value`, result `output.value`.
- OpenLLMetry (`traceloop.span.kind`, `gen_ai.prompt.N.*`, `gen_ai.completion.N.*`): agent
  (else workflow) → run, `llm.request.type` / prompt attributes → decision, tool → tool
  (`traceloop.entity.name|input|output`).
- GenAI semantic conventions (`gen_ai.operation.name`): invoke_agent → run, chat /
  text_completion / generate_content → decision, execute_tool → tool; messages in
  `gen_ai.input.messages` / `gen_ai.output.messages` (JSON: role + parts `text`, `tool_call`,
  `tool_call_response`), tools in `gen_ai.tool.*`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.json_text import parse_json_or_text
from otel_agent_trace.messages import Message, ToolCall, semconv_messages
from otel_agent_trace.semconv import (
    GEN_AI_AGENT_NAME,
    GEN_AI_COMPLETION_FIRST_ROLE,
    GEN_AI_COMPLETION_PREFIX,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OPERATION_NAME,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_PROMPT_FIRST_ROLE,
    GEN_AI_PROMPT_PREFIX,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    GEN_AI_USAGE_COMPLETION_TOKENS,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    GEN_AI_USAGE_PROMPT_TOKENS,
)

RUN, LLM, TOOL, OTHER = "run", "llm", "tool", "other"
_INDEXED = re.compile(r"^(\d+)\.(.*)$")


@dataclass
class Facts:
    convention: str
    role: str
    inputs: list[Message] = field(default_factory=list)  # LLM: the context it was given
    calls: list[ToolCall] = field(default_factory=list)  # LLM: the tool calls it decided
    output_text: str | None = None
    model: str | None = None
    tool_name: str | None = None
    call_id: str | None = None
    arguments: Any = None
    result: Any = None  # None: not recorded
    agent_name: str | None = None
    input_tokens: int | None = None  # LLM: usage, when the convention records it
    output_tokens: int | None = None


def facts_of(span: Span) -> Facts | None:
    a = span.attributes
    if "openinference.span.kind" in a:
        return _openinference(span)
    if ("traceloop.span.kind" in a or "llm.request.type" in a or GEN_AI_PROMPT_FIRST_ROLE in a
            or GEN_AI_COMPLETION_FIRST_ROLE in a):
        return _openllmetry(span)
    if GEN_AI_OPERATION_NAME in a:
        return _genai(span)
    return None


def _indexed(a: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """`prefix.0.x.y = v` attributes as [{'x.y': v}, ...] in index order."""
    return _indexed_each(a, (prefix,))[0]


def _indexed_each(a: dict[str, Any], prefixes: tuple[str, ...]) -> list[list[dict[str, Any]]]:
    """`_indexed` for each of `prefixes` (none the start of another), in one pass over `a`."""
    found: list[dict[int, dict[str, Any]]] = [{} for _ in prefixes]
    for key, value in a.items():
        if not key.startswith(prefixes):
            continue
        which = 0
        while not key.startswith(prefixes[which]):
            which += 1
        tail = key[len(prefixes[which]):]
        index, dot, rest = tail.partition(".")
        if not dot or not index.isdecimal():  # `\d+\.` (str.isdecimal is what `\d` accepts)
            continue
        if "\n" in rest:  # (rare) where `.*$` stops at a line break, the pattern decides
            match = _INDEXED.match(tail)
            if match is None:
                continue
            rest = match.group(2)
        number = int(index)
        group = found[which].get(number)
        if group is None:
            group = found[which][number] = {}
        group[rest] = value
    return [list(groups.values()) if len(groups) < 2 else [groups[i] for i in sorted(groups)] for groups in found]


def _count(value: Any) -> int | None:
    """A token count, given as an int or a decimal string (OpenInference exporters write both)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        count = int(value)
    except (TypeError, ValueError):
        return None
    return count if count >= 0 else None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


# --- OpenInference ---------------------------------------------------------------------------
def _oi_message(fields: dict[str, Any]) -> Message:
    content = fields.get("message.content")
    if content is None:
        parts = _indexed(fields, "message.contents.")
        content = "\n".join(str(p.get("message_content.text")) for p in parts if p.get("message_content.text")) or None
    # (most messages carry no tool call: a look through their few keys costs less than grouping)
    has_calls = any(key.startswith("message.tool_calls.") for key in fields)
    listed = _indexed(fields, "message.tool_calls.") if has_calls else ()
    calls = tuple(
        ToolCall(str(c.get("tool_call.id") or ""), str(c.get("tool_call.function.name") or ""),
                 _text(c.get("tool_call.function.arguments")) or "")
        for c in listed) if listed else ()
    return Message(str(fields.get("message.role") or ""), _text(content), calls,
                   _text(fields.get("message.tool_call_id")), _text(fields.get("message.name")))


def _openinference(span: Span) -> Facts:
    a = span.attributes
    kind = str(a.get("openinference.span.kind", "")).upper()
    if kind == "AGENT":
        return Facts("openinference", RUN, agent_name=_text(a.get("agent.name")) or span.name)
    if kind == "LLM":
        outputs_of, inputs_of = _indexed_each(a, ("llm.output_messages.", "llm.input_messages."))
        outputs = [_oi_message(m) for m in outputs_of]
        return Facts("openinference", LLM, inputs=[_oi_message(m) for m in inputs_of],
                     calls=[c for m in outputs for c in m.tool_calls],
                     output_text="\n".join(m.content for m in outputs if m.content) or _text(a.get("output.value")),
                     model=_text(a.get("llm.model_name")),
                     input_tokens=_count(a.get("llm.token_count.prompt")),
                     output_tokens=_count(a.get("llm.token_count.completion")))
    if kind == "TOOL":
        return Facts("openinference", TOOL, tool_name=_text(a.get("tool.name")) or span.name,
                     call_id=_text(a.get("tool_call.id") or a.get("tool.id")),
                     arguments=a.get("tool_call.function.arguments", a.get("input.value")), result=a.get("output.value"))
    return Facts("openinference", OTHER)


# --- OpenLLMetry ------------------------------------------------------------------------------
def _ollm_message(fields: dict[str, Any]) -> Message:
    calls = tuple(ToolCall(str(c.get("id") or ""), str(c.get("name") or ""), _text(c.get("arguments")) or "")
                  for c in _indexed(fields, "tool_calls."))
    return Message(str(fields.get("role") or ""), _text(fields.get("content")), calls, _text(fields.get("tool_call_id")))


def _openllmetry(span: Span) -> Facts:
    a = span.attributes
    kind = str(a.get("traceloop.span.kind", "")).lower()
    if kind in ("agent", "workflow"):
        facts = Facts("openllmetry", RUN, agent_name=_text(a.get("traceloop.entity.name")) or span.name)
        facts.model = kind  # agent or workflow: an agent wins over its workflow (see normalize)
        return facts
    if kind == "tool":
        return Facts("openllmetry", TOOL, tool_name=_text(a.get("traceloop.entity.name")) or span.name,
                     arguments=_unwrap(a.get("traceloop.entity.input"), "inputs"),
                     result=_unwrap(a.get("traceloop.entity.output"), "outputs"))
    if "llm.request.type" in a or GEN_AI_PROMPT_FIRST_ROLE in a or GEN_AI_COMPLETION_FIRST_ROLE in a:
        outputs = [_ollm_message(m) for m in _indexed(a, GEN_AI_COMPLETION_PREFIX)]
        return Facts("openllmetry", LLM, inputs=[_ollm_message(m) for m in _indexed(a, GEN_AI_PROMPT_PREFIX)],
                     calls=[c for m in outputs for c in m.tool_calls],
                     output_text="\n".join(m.content for m in outputs if m.content) or None,
                     model=_text(a.get(GEN_AI_REQUEST_MODEL) or a.get(GEN_AI_RESPONSE_MODEL)),
                     input_tokens=_count(a.get(GEN_AI_USAGE_INPUT_TOKENS, a.get(GEN_AI_USAGE_PROMPT_TOKENS))),
                     output_tokens=_count(a.get(GEN_AI_USAGE_OUTPUT_TOKENS, a.get(GEN_AI_USAGE_COMPLETION_TOKENS))))
    return Facts("openllmetry", OTHER)


def _unwrap(value: Any, key: str) -> Any:
    parsed = parse_json_or_text(value)
    if isinstance(parsed, dict) and key in parsed and len(parsed) <= 3:
        inner = parsed[key]
        return inner if isinstance(inner, str) else value if inner is None else _dumps(inner)
    return value


def _dumps(value: Any) -> str:
    import orjson

    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


# --- GenAI semantic conventions ----------------------------------------------------------------
_LLM_OPS = {"chat", "text_completion", "generate_content"}


def _genai(span: Span) -> Facts:
    a = span.attributes
    op = str(a.get(GEN_AI_OPERATION_NAME))
    if op == "invoke_agent":
        return Facts("genai", RUN, agent_name=_text(a.get(GEN_AI_AGENT_NAME)) or span.name)
    if op == "execute_tool":
        return Facts("genai", TOOL, tool_name=_text(a.get(GEN_AI_TOOL_NAME)) or span.name.removeprefix("execute_tool "),
                     call_id=_text(a.get(GEN_AI_TOOL_CALL_ID)), arguments=a.get(GEN_AI_TOOL_CALL_ARGUMENTS),
                     result=a.get(GEN_AI_TOOL_CALL_RESULT))
    if op in _LLM_OPS:
        outputs = semconv_messages(a.get(GEN_AI_OUTPUT_MESSAGES))
        return Facts("genai", LLM, inputs=semconv_messages(a.get(GEN_AI_INPUT_MESSAGES)),
                     calls=[c for m in outputs for c in m.tool_calls],
                     output_text="\n".join(m.content for m in outputs if m.content) or None,
                     model=_text(a.get(GEN_AI_REQUEST_MODEL) or a.get(GEN_AI_RESPONSE_MODEL)))
    return Facts("genai", OTHER)
