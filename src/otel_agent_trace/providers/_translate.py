"""What every provider's translation needs: reading SDK objects or dicts alike, plain JSON
copies of request values, and identity caches for the messages and tool lists an agent re-sends
on every call (normalizing and hashing them once, not once per step)."""

from __future__ import annotations

import inspect
from typing import Any, Callable

from otel_agent_trace import hashing
from otel_agent_trace._failopen import safely
from otel_agent_trace.messages import Message
from otel_agent_trace.recorder.stream import wrap_stream


def get(obj: Any, key: str, default: Any = None) -> Any:
    """`obj[key]` of a dict, `obj.key` of an SDK object."""
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def tokens(usage: Any, input_key: str, output_key: str, *, cache_read: tuple[str, ...] = (),
           cache_write: tuple[str, ...] = (), reasoning: tuple[str, ...] = (),
           input_excludes_cache: bool = False) -> dict[str, int | None]:
    """A usage object's token counts as `ChatResponse` fields. The detail counts are read along
    key paths (`("prompt_tokens_details", "cached_tokens")`); `input_tokens` is the total input
    cached tokens included, as in the GenAI conventions (anthropic reports them apart:
    `input_excludes_cache`)."""
    def path(keys: tuple[str, ...]) -> int | None:
        value = usage
        for key in keys:
            value = get(value, key)
            if value is None:
                return None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    if usage is None:
        return {}
    read, write = path(cache_read) if cache_read else None, path(cache_write) if cache_write else None
    total = get(usage, input_key)
    if input_excludes_cache and isinstance(total, int) and (read or write):
        total += (read or 0) + (write or 0)
    return {"input_tokens": total, "output_tokens": get(usage, output_key), "cache_read_tokens": read,
            "cache_write_tokens": write, "reasoning_tokens": path(reasoning) if reasoning else None}


def content_text(content: Any) -> str | None:
    """Text of a message content: a string, or the text parts of a list joined by newlines."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        texts = []
        for part in content:
            kind = get(part, "type")
            if kind in ("text", "input_text", "output_text"):
                texts.append(get(part, "text") or "")
            elif kind:
                texts.append(f"[{kind}]")
        return "\n".join(texts)
    return str(content)


def plain(value: Any) -> Any:
    """A JSON-able copy of an SDK value (pydantic models, NotGiven/Omit sentinels dropped; a
    pydantic class, as `parse(response_format=Model)` takes, gives its JSON schema)."""
    if isinstance(value, type):
        schema = getattr(value, "model_json_schema", None)
        return {"name": value.__name__, "schema": schema()} if schema else value.__name__
    if hasattr(value, "model_dump"):
        return value.model_dump(exclude_none=True)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if not is_omitted(v)}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def is_omitted(value: Any) -> bool:
    return type(value).__name__ in ("NotGiven", "Omit")


_MESSAGE_CACHE: dict[int, tuple[Any, Any, Any, Message, str]] = {}


def normalized(raw: Any, to_message: Callable[[Any], Message]) -> tuple[Message, str]:
    """(Message, full hash) of a request message, cached by identity: an agent re-sends the same
    message objects every turn. A hit needs the same object with the same `content` and
    `tool_calls` objects, so replacing a message's content is seen; a message edited deeper in
    place (a tool call's arguments) keeps its former hash until it is replaced."""
    if type(raw) is dict:  # the common case, read without a call per key
        content, calls = raw.get("content"), raw.get("tool_calls")
    else:
        content, calls = get(raw, "content"), get(raw, "tool_calls")
    hit = _MESSAGE_CACHE.get(id(raw))
    if hit is not None and hit[0] is raw and hit[1] is content and hit[2] is calls:
        return hit[3], hit[4]
    message = to_message(raw)
    digest = hashing.message_hash(message)
    if len(_MESSAGE_CACHE) >= 2048:  # holds the message objects: keep it small
        _MESSAGE_CACHE.clear()
    _MESSAGE_CACHE[id(raw)] = (raw, content, calls, message, digest)
    return message, digest


_TOOLS_CACHE: dict[tuple[int, ...], tuple[Any, list[Any]]] = {}


def plain_tools(tools: Any) -> list[Any]:
    """Tool definitions as plain JSON, cached by identity: agents pass the same list every call.

    The key holds the ids of the list and of each definition (and the cache a reference to the
    list, so the ids stay valid); a list rebuilt or edited by replacement misses the cache.
    """
    key = (id(tools), *map(id, tools))
    hit = _TOOLS_CACHE.get(key)
    if hit is not None and hit[0] is tools:
        return hit[1]
    copy = plain(list(tools))
    if len(_TOOLS_CACHE) >= 64:
        _TOOLS_CACHE.clear()
    _TOOLS_CACHE[key] = (tools, copy)
    return copy


def proxied_parse(parse: Any, invocation: Any, accumulator: Callable[[], Any]) -> Any:
    """A raw response's `parse()` that hands the caller our stream proxy (`with_raw_response`
    with `stream=True`): the invocation stops when that stream is consumed."""

    def wrap(stream: Any) -> Any:
        return wrap_stream(stream, invocation, accumulator(), hasattr(stream, "__aiter__"))

    def proxied(*args: Any, **kwargs: Any) -> Any:
        stream = parse(*args, **kwargs)
        if inspect.isawaitable(stream):  # an async client's parse() (`with_streaming_response`)
            async def settled() -> Any:
                return wrap(await stream)
            return settled()
        return wrap(stream)

    return proxied


def awaited_parse(result: Any, invocation: Any, stop: Callable[[Any], None]) -> bool:
    """An async client's `with_streaming_response`: `parse()` is a coroutine the caller awaits in
    its block, so the invocation stops (`stop(parsed)`) when it does. False for other responses."""
    parse = getattr(result, "parse", None)
    if not inspect.iscoroutinefunction(parse):
        return False
    invocation.defer()

    async def parsed(*args: Any, **kwargs: Any) -> Any:
        try:
            value = await parse(*args, **kwargs)
        except BaseException as exc:
            invocation.fail(exc)
            raise
        safely("raw.parse.stop", stop, value)
        return value

    result.parse = parsed
    return True
