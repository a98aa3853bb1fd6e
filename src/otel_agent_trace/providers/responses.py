"""OpenAI Responses API (`responses.create` / `parse`, streams, `with_raw_response`) → the normalized model.

Only translation lives here; the recorder (`recorder/calls.py`) owns the wrapper and the spans.
`instructions` become a system message, input items messages: `function_call` items an
assistant message's tool calls (consecutive ones grouped, like one Chat Completions message),
`function_call_output` items tool results. A request chained by `previous_response_id` holds only
the new items, so its context is the previous response's context and output plus those items:
a bounded map keeps each recorded response's context (messages and their hashes), and the
context hash equals that of the same conversation sent whole. A request in a server-side
`conversation` is read the same way: the map also keeps each conversation's context after its
last recorded response, seeded by `conversations.create(items=...)` (items added to a
conversation any other way are not seen). `Responses.stream` calls `create` with `stream=True`,
so one wrapper covers it.

Built-in tools run on the server inside one response: each `web_search_call`,
`file_search_call` or `code_interpreter_call` output item becomes an `execute_tool` span
(`web_search`, ...) under the step, opened when the response is read, with the item's query or
code as arguments and its status as outcome (`completed` ok, anything else an error result).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from otel_agent_trace import hashing
from otel_agent_trace._failopen import safely
from otel_agent_trace.messages import ChatRequest, ChatResponse, Message, ToolCall
from otel_agent_trace.providers._translate import (
    awaited_parse, content_text, get as _get, is_omitted, plain, plain_tools, proxied_parse, tokens,
)
from otel_agent_trace.providers import responses_replay
from otel_agent_trace.recorder.calls import chat_wrapper
from otel_agent_trace.recorder.handler import installed_handler
from otel_agent_trace.recorder.stream import wrap_stream
from otel_agent_trace.integration import Integration, patches

MODULE = "openai.resources.responses.responses"
TARGETS = ("Responses.create", "AsyncResponses.create", "Responses.parse", "AsyncResponses.parse")

DECISION_PARAMS = (
    "temperature", "top_p", "tool_choice", "parallel_tool_calls", "max_output_tokens", "max_tool_calls",
    "reasoning", "text", "truncation",
)
# item types that carry no conversation text of their own (reasoning is counted by the usage)
_SKIPPED = frozenset({"reasoning", "item_reference"})
CONVERSATIONS_MODULE = "openai.resources.conversations.conversations"
CONVERSATION_TARGETS = ("Conversations.create", "AsyncConversations.create")
ITEMS_MODULE = "openai.resources.conversations.items"
ITEMS_TARGETS = ("Items.create", "AsyncItems.create")
# built-in tool call items → (tool name, the fields that are its arguments, the fields that are its result)
BUILT_IN = {
    "web_search_call": ("web_search", ("action",), ("status",)),
    "file_search_call": ("file_search", ("queries",), ("status", "results")),
    "code_interpreter_call": ("code_interpreter", ("code", "container_id"), ("status", "outputs")),
}
_CONTEXTS_MAX = 512


class _Contexts:
    """response id → (messages, hashes) of the context after that response, bounded (LRU)."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, tuple[list[Message], list[str]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, response_id: Any) -> tuple[list[Message], list[str]] | None:
        with self._lock:
            hit = self._items.get(response_id) if isinstance(response_id, str) else None
            if hit is not None:
                self._items.move_to_end(response_id)
            return hit

    def put(self, response_id: Any, messages: list[Message], hashes: list[str]) -> None:
        if not isinstance(response_id, str):
            return
        with self._lock:
            self._items[response_id] = (messages, hashes)
            while len(self._items) > _CONTEXTS_MAX:
                self._items.popitem(last=False)


CONTEXTS = _Contexts()


def to_messages(items: Any) -> list[Message]:
    """Input or output items → messages; consecutive `function_call` items join the assistant
    message before them (an output's text and its calls are one decision)."""
    if isinstance(items, str):
        return [Message(role="user", content=items)]
    messages: list[Message] = []
    for item in items or ():
        kind = _get(item, "type")
        if kind == "function_call":
            call = ToolCall(id=_get(item, "call_id") or "", name=_get(item, "name") or "",
                            arguments=_get(item, "arguments") or "")
            last = messages[-1] if messages else None
            if last is not None and last.role == "assistant" and not last.tool_call_id:
                messages[-1] = Message(role="assistant", content=last.content,
                                       tool_calls=last.tool_calls + (call,))
            else:
                messages.append(Message(role="assistant", tool_calls=(call,)))
        elif kind == "function_call_output":
            output = _get(item, "output")
            messages.append(Message(role="tool", content=content_text(output), tool_call_id=_get(item, "call_id")))
        elif kind in (None, "message"):
            messages.append(Message(role=_get(item, "role") or "user", content=content_text(_get(item, "content"))))
        elif kind not in _SKIPPED:  # built-in tool calls and other items: kept as a marker
            messages.append(Message(role="assistant", content=f"[{kind}]"))
    return messages


def _conversation_key(conversation: Any) -> str | None:
    """The map key of a `conversation` (an id, `{"id": ...}` or an SDK object)."""
    if is_omitted(conversation) or conversation is None:
        return None
    conversation = conversation if isinstance(conversation, str) else _get(conversation, "id")
    return f"conversation:{conversation}" if isinstance(conversation, str) else None


def parse_request(kwargs: dict[str, Any]) -> ChatRequest:
    prior = CONTEXTS.get(kwargs.get("previous_response_id")) or CONTEXTS.get(_conversation_key(kwargs.get("conversation")))
    messages, hashes = (list(prior[0]), list(prior[1])) if prior else ([], [])
    instructions = kwargs.get("instructions")
    if isinstance(instructions, str) and instructions and not (messages and messages[0].role == "system"):
        messages.insert(0, Message(role="system", content=instructions))
        hashes.insert(0, hashing.message_hash(messages[0]))
    new = to_messages(kwargs.get("input")) if not is_omitted(kwargs.get("input")) else []
    messages += new
    hashes += [hashing.message_hash(m) for m in new]
    tools = kwargs.get("tools")
    params = {k: plain(kwargs[k]) for k in DECISION_PARAMS if k in kwargs and not is_omitted(kwargs[k])}
    return ChatRequest(
        model=kwargs.get("model") if isinstance(kwargs.get("model"), str) else None,
        messages=messages,
        message_hashes=hashes,
        tools=plain_tools(tools) if isinstance(tools, (list, tuple)) else [],
        params=params,
        stream=bool(kwargs.get("stream") is True),
    )


def parse_response(result: Any) -> ChatResponse:
    output = _get(result, "output") or []
    answer = to_messages([item for item in output if _get(item, "type") in ("message", "function_call")])
    texts = [m.content for m in answer if m.content]
    usage = _get(result, "usage")
    status = _get(result, "status")
    return ChatResponse(
        model=_get(result, "model"),
        id=_get(result, "id"),
        content="\n".join(texts) if texts else None,
        tool_calls=[call for m in answer for call in m.tool_calls],
        finish_reasons=[str(status)] if status else [],
        **tokens(usage, "input_tokens", "output_tokens", cache_read=("input_tokens_details", "cached_tokens"),
                 reasoning=("output_tokens_details", "reasoning_tokens")),
    )


def _remember(request: ChatRequest, result: Any) -> None:
    """Keep the context after this response, for a request chained by `previous_response_id`
    or continuing its `conversation`."""
    output = to_messages(_get(result, "output") or [])
    messages = request.messages + output
    hashes = (list(request.message_hashes or [hashing.message_hash(m) for m in request.messages])
              + [hashing.message_hash(m) for m in output])
    CONTEXTS.put(_get(result, "id"), messages, hashes)
    conversation = _conversation_key(_get(result, "conversation"))
    if conversation is not None:
        CONTEXTS.put(conversation, messages, hashes)


def _seed_conversation(conversation: Any, items: Any) -> None:
    messages = to_messages(items) if items is not None and not is_omitted(items) else []
    CONTEXTS.put(_conversation_key(conversation), messages, [hashing.message_hash(m) for m in messages])


def _add_to_conversation(conversation: Any, items: Any) -> None:
    """`conversations.items.create`: the items join the end of the conversation's context (of an
    unknown conversation, they are all the context known)."""
    key = _conversation_key(conversation)
    prior = CONTEXTS.get(key)
    messages, hashes = (list(prior[0]), list(prior[1])) if prior else ([], [])
    new = to_messages(items) if items is not None and not is_omitted(items) else []
    CONTEXTS.put(key, messages + new, hashes + [hashing.message_hash(m) for m in new])


def conversation_created(wrapped: Any, instance: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
    """`conversations.create(items=...)`: the new conversation's context is its items."""
    return _then(wrapped(*args, **kwargs), lambda result: _seed_conversation(result, kwargs.get("items")))


def items_added(wrapped: Any, instance: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
    """`conversations.items.create(conversation_id, items=...)`, once the server took them."""
    conversation = args[0] if args else kwargs.get("conversation_id")
    return _then(wrapped(*args, **kwargs), lambda result: _add_to_conversation(conversation, kwargs.get("items")))


def _then(result: Any, remember: Any) -> Any:
    """`remember(result)` (fail-open) after a sync result, or after the awaited async one."""
    if hasattr(result, "__await__"):
        return _awaited_then(result, remember)
    safely("responses.conversation", remember, result)
    return result


async def _awaited_then(awaitable: Any, remember: Any) -> Any:
    result = await awaitable
    safely("responses.conversation", remember, result)
    return result


def record_built_in_tools(invocation: Any, result: Any) -> None:
    """Each built-in tool call of a response as an `execute_tool` span in the step's run."""
    handler = installed_handler()
    if handler is None or getattr(invocation, "run", None) is None:
        return
    for item in _get(result, "output") or ():
        spec = BUILT_IN.get(_get(item, "type"))
        if spec is None:
            continue
        name, argument_fields, result_fields = spec
        arguments = {f: plain(_get(item, f)) for f in argument_fields if _get(item, f) is not None}
        outcome = {f: plain(_get(item, f)) for f in result_fields if _get(item, f) is not None}
        tool = handler.tool(name, arguments, call_id=_get(item, "id"))
        status = _get(item, "status")
        tool.stop(outcome if status == "completed" else f"Error: {name} {status}")


class StreamAccumulator:
    """Rebuilds the response from `ResponseStreamEvent`s: the final `response.*` event carries
    it whole; a stream broken before that keeps the items completed so far."""

    def __init__(self, request: ChatRequest, invocation: Any = None) -> None:
        self.request = request
        self.invocation = invocation  # its built-in tool calls are recorded from the final response
        self.final: Any = None
        self.items: list[Any] = []
        self.text: list[str] = []
        self.model: str | None = None
        self.id: str | None = None

    def add(self, event: Any) -> None:
        kind = _get(event, "type") or ""
        response = _get(event, "response")
        if response is not None:
            self.model = self.model or _get(response, "model")
            self.id = self.id or _get(response, "id")
            if kind in ("response.completed", "response.incomplete", "response.failed"):
                self.final = response
        elif kind == "response.output_item.done":
            self.items.append(_get(event, "item"))
        elif kind == "response.output_text.delta":
            self.text.append(_get(event, "delta") or "")

    def response(self) -> ChatResponse:
        if self.final is not None:
            _remember(self.request, self.final)
            if self.invocation is not None:
                safely("responses.built_in_tools", record_built_in_tools, self.invocation, self.final)
            return parse_response(self.final)
        partial = parse_response({"output": self.items, "model": self.model, "id": self.id})
        if partial.content is None and self.text:
            partial.content = "".join(self.text)
        return partial


def _request(instance: Any, args: tuple, kwargs: dict[str, Any]) -> ChatRequest:
    return parse_request(kwargs)


def end_call(invocation: Any, result: Any) -> Any:
    """Stop the invocation with the parsed response (a stream: hand it to a proxy that will);
    `with_raw_response` gives an `APIResponse` whose `parse()` the SDK caches."""
    response = result
    if _get(result, "output") is None and hasattr(result, "http_response") and hasattr(result, "parse"):
        if getattr(result, "_stream", False) or invocation.request.stream:  # (with_streaming_response: no _stream)
            invocation.defer()
            result.parse = proxied_parse(result.parse, invocation, lambda: StreamAccumulator(invocation.request, invocation))
            return result
        if awaited_parse(result, invocation, lambda parsed: _stop(invocation, parsed)):
            return result
        response = result.parse()
    if _get(response, "output") is None and (hasattr(response, "__aiter__") or hasattr(response, "__iter__")):
        invocation.defer()
        accumulator = StreamAccumulator(invocation.request, invocation)
        return wrap_stream(response, invocation, accumulator, hasattr(response, "__aiter__"))
    _stop(invocation, response)
    return result


def _stop(invocation: Any, response: Any) -> None:
    _remember(invocation.request, response)
    # before the stop, as a stream's accumulator does: an answered implicit run's last step ends with it
    safely("responses.built_in_tools", record_built_in_tools, invocation, response)
    invocation.stop(parse_response(response))


wrapper = chat_wrapper(_request, end_call, "openai.responses", responses_replay.build)
INTEGRATION = Integration("openai.responses", patches(MODULE, TARGETS, wrapper)
                          + patches(CONVERSATIONS_MODULE, CONVERSATION_TARGETS, conversation_created)
                          + patches(ITEMS_MODULE, ITEMS_TARGETS, items_added))
