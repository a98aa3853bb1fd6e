"""The normalized step model shared by the recorder and the analyzer.

Everything here is plain data and pure functions, importable without the OpenTelemetry SDK:
attribute names, the enums of outcomes, phases, error types and link relations, the normalized
message model providers translate into. The detectors that classify results, arguments,
contexts and answers live in `detectors.py`. The recorder
and the analyzer both import this module and never each other.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import orjson  # (a dependency; the analysis parses tool arguments with it per call)

# The instrumentation scope of every span the recorder creates: what "ours" means to the processor
# (which stamps `agent_trace.*` only on these) and to the analyzer (see normalize.is_ours).
INSTRUMENTATION_SCOPE = "otel_agent_trace"

# --- attribute names (our own, under agent_trace.) -------------------------------------------
RUN_NAME = "agent_trace.run.name"
RUN_IMPLICIT = "agent_trace.run.implicit"
RUN_AGENTS = "agent_trace.run.agents"  # framework agents that ran as the body of an entry point / agent_run
# the trace id (32 hex) of the run this run resumes (a LangGraph thread resumed after `interrupt`, once
# the interrupted run had ended); the run span also links to that run's span, relation `resumes`
RUN_RESUMES = "agent_trace.run.resumes"
# a run span ended early because its tracer provider shut down (value: "provider_shutdown")
RUN_ENDED_BY = "agent_trace.run.ended_by"
# the `run_outcome` span: an exception that failed a run after a flush had already exported it;
# its parent is the run span, this attribute names that span's id (lowercase hex)
RUN_OUTCOME_SPAN = "run_outcome"
RUN_OUTCOME_OF = "agent_trace.run_outcome.of"
# the `guardrail_tripped` event on a run (openai-agents): the guardrail, its kind (input, output,
# tool_input, tool_output) and, for a tool's guardrail, what it did (reject_content, raise_exception)
GUARDRAIL_EVENT = "guardrail_tripped"
GUARDRAIL_NAME = "agent_trace.guardrail.name"
GUARDRAIL_KIND = "agent_trace.guardrail.kind"
GUARDRAIL_BEHAVIOR = "agent_trace.guardrail.behavior"
STEP_INDEX = "agent_trace.step.index"
STEP_KIND = "agent_trace.step.kind"
STEP_TOOL_CALLS = "agent_trace.step.tool_calls"
CONTEXT_HASH = "agent_trace.context.hash"
CONTEXT_MESSAGE_HASHES = "agent_trace.context.message_hashes"
CONTEXT_MESSAGES = "agent_trace.context.messages"
# how many leading messages a step's context shares with the previous step's: its
# `message_hashes` then list only the messages after them (`context_hashes` expands them)
CONTEXT_SHARED_PREFIX = "agent_trace.context.shared_prefix"
# with content capture: JSON `[{"hash", "message"}]` of the messages a step's context shows first
CONTEXT_NEW_MESSAGES = "agent_trace.context.new_messages"
# a field of an item of `new_messages`: its message is a tool result that an `execute_tool` span
# of the run holds whole as `gen_ai.tool.call.result`; the message carries no `content`, this
# names that span's id (16 hex) instead of writing the result twice (the analyzer restores it)
NEW_MESSAGE_CONTENT_FROM = "content_from"
TOOL_OUTCOME = "agent_trace.tool.outcome"
TOOL_SOURCE = "agent_trace.tool.source"  # "explicit" (decorator / dispatcher) | "inferred"
LIFECYCLE_PHASE = "agent_trace.lifecycle.phase"
ERROR_TYPE = "agent_trace.error.type"
DEPENDS_ON = "agent_trace.depends_on"
DEPENDS_ON_RELATIONS = "agent_trace.depends_on.relations"
LINK_RELATION = "agent_trace.link.relation"
LOOP_COUNT = "agent_trace.loop.count"
COST_USD = "agent_trace.usage.cost_usd"  # a chat's price (cost.py), summed per run by the analyzer

# --- GenAI semantic convention names we write (semconv gen_ai.*) ------------------------------
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_SYSTEM = "gen_ai.system"  # deprecated by provider.name; still read by Jaeger and peers
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature"
GEN_AI_REQUEST_TOP_P = "gen_ai.request.top_p"
GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE_SEMCONV = "error.type"
# the `gen_ai.evaluation.result` event (a span event, or a log record with this event name)
GEN_AI_EVALUATION_RESULT = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"

# roles whose messages instruct rather than converse: every conversation of an agent shares them
INSTRUCTION_ROLES = ("system", "developer")

OP_INVOKE_AGENT = "invoke_agent"
OP_CHAT = "chat"
OP_EXECUTE_TOOL = "execute_tool"
STEP_SPAN_PREFIX = "agent_step"


class Outcome(str, enum.Enum):
    """What a tool execution produced (`agent_trace.tool.outcome`)."""

    OK = "ok"
    EXCEPTION = "exception"
    ERROR_RESULT = "error_result"
    EMPTY_RESULT = "empty_result"
    TIMEOUT = "timeout"


class Phase(str, enum.Enum):
    """Error lifecycle phase (`agent_trace.lifecycle.phase`), after seed 001."""

    ORIGIN = "origin"
    PROPAGATE = "propagate"
    RECOVERED = "recovered"
    CRITICAL = "critical"


class ErrorType(str, enum.Enum):
    """`agent_trace.error.type`: an enum, never free text."""

    TOOL_EXCEPTION = "tool_exception"
    TOOL_ERROR_RESULT = "tool_error_result"
    TOOL_EMPTY_RESULT = "tool_empty_result"
    TOOL_TIMEOUT = "tool_timeout"
    INVALID_ARGUMENTS = "invalid_arguments"
    UNKNOWN_TOOL = "unknown_tool"
    LOOP_DETECTED = "loop_detected"
    BUDGET_EXCEEDED = "budget_exceeded"
    FINAL_ANSWER_INVALID = "final_answer_invalid"
    FABRICATED_VALUE = "fabricated_value"
    CONTEXT_DROPPED = "context_dropped"
    LLM_ERROR = "llm_error"
    TRUNCATED_OUTPUT = "truncated_output"
    # an exception left the agent's entrypoint / agent_run block
    RUN_EXCEPTION = "run_exception"
    # analyzer only: a verdict from outside the run says it failed (analyzer/verdicts.py)
    KNOWN_FAILED = "known_failed"  # `analyze --all-failed`
    EVALUATION_FAILED = "evaluation_failed"  # a failing `gen_ai.evaluation.result`
    WRONG_ANSWER = "wrong_answer"  # the final answer differs from the expected one (`analyze --expected`)


class Relation(str, enum.Enum):
    """`agent_trace.link.relation` of a dependency link."""

    DECIDED_BY = "decided_by"
    CONSUMES = "consumes"
    DATA = "data"
    RESOURCE = "resource"
    RETRY_OF = "retry_of"
    DELEGATED_TO = "delegated_to"  # a sub-agent's run -> the step or tool that delegated to it
    # a resumed run -> the run it resumes, in another trace (a link only: no `depends_on` mirror,
    # which holds span ids of the same trace; `agent_trace.run.resumes` holds the trace id)
    RESUMES = "resumes"


STRONG_RELATIONS = frozenset({Relation.DECIDED_BY.value, Relation.DATA.value, Relation.RESOURCE.value})

OUTCOME_ERROR_TYPE = {
    Outcome.EXCEPTION: ErrorType.TOOL_EXCEPTION,
    Outcome.ERROR_RESULT: ErrorType.TOOL_ERROR_RESULT,
    Outcome.EMPTY_RESULT: ErrorType.TOOL_EMPTY_RESULT,
    Outcome.TIMEOUT: ErrorType.TOOL_TIMEOUT,
}

# --- normalized messages ----------------------------------------------------------------------
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


# --- JSON or text ----------------------------------------------------------------------------
# what a JSON text can start with (orjson: JSON whitespace, no BOM, no NaN or Infinity)
_JSON_FIRST = frozenset('{["-0123456789tfn \t\n\r')


def parse_json_or_text(text: Any) -> Any:
    """Parse JSON text if it is JSON, else return it unchanged (text whose first character can
    start no JSON value is returned without a parse: a failed parse costs ~10 us, plain-text
    answers and messages are common)."""
    if not isinstance(text, (str, bytes)):
        return text
    if text.__class__ is str and text[:1] not in _JSON_FIRST:
        return text
    try:
        return orjson.loads(text)
    except (orjson.JSONDecodeError, TypeError):
        return text


def __getattr__(name: str) -> Any:
    """`classify_result` moved to `detectors.py` (one module of detectors); this alias keeps old
    imports working until their callers import it from there."""
    if name == "classify_result":
        from otel_agent_trace.detectors import classify_result

        return classify_result
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- GenAI semantic-convention messages (gen_ai.input.messages / gen_ai.output.messages) ------
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
