"""Canonical JSON and the hashes of contexts and messages.

What is hashed, exactly (docs/attributes.md repeats it):
- a message: sha256 of the canonical JSON of `Message.canonical()` (role, text content, tool
  calls with parsed arguments, tool_call_id, name); `agent_trace.context.message_hashes` holds the
  first 16 hex digits of each;
- a context: sha256 of the canonical JSON of `{"model", "messages": [full message hashes],
  "tools": [tool definitions], "params": {decision-relevant parameters}}`.
Canonical JSON = UTF-8, keys sorted, no whitespace (orjson OPT_SORT_KEYS). Hashing messages by
their hashes keeps the context hash O(new bytes) to compute when messages are cached, and it is
equal for equivalent encodings (a pydantic message object or a dict; string or parts content).
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable

import orjson

from otel_agent_trace.messages import Message

SHORT = 16
_OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def canonical_json(value: Any) -> bytes:
    """Sorted-key compact JSON bytes; unknown objects fall back to `str`."""
    return orjson.dumps(value, option=_OPTS, default=str)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def message_hash(message: Message) -> str:
    """Full sha256 hex of one normalized message."""
    return sha256_hex(canonical_json(message.canonical()))


def context_hash(model: str | None, message_hashes: Iterable[str], tools: Any, params: dict[str, Any]) -> str:
    """sha256 hex of the canonical context document (see module docstring).

    Fed to sha256 in the document's sorted-key order (messages, model, params, tools), piece
    by piece: the same bytes as `canonical_json` of the whole document, but the tool
    definitions, the same list object on every call, are encoded once (`_tools_json`)."""
    digest = hashlib.sha256(b'{"messages":')
    digest.update(canonical_json(list(message_hashes)))
    digest.update(b',"model":')
    digest.update(canonical_json(model))
    digest.update(b',"params":')
    digest.update(canonical_json(params or {}))
    digest.update(b',"tools":')
    digest.update(_tools_json(tools or []))
    digest.update(b"}")
    return digest.hexdigest()


_TOOLS_JSON: dict[tuple[int, ...], tuple[Any, bytes]] = {}


def _tools_json(tools: Any) -> bytes:
    """Canonical JSON of a tool list, cached by identity: providers hand the same cached plain
    copy every call (providers/_translate.py). Keyed like `plain_tools`, by the ids of the list
    and of each definition (the cache holds the list, so they stay valid): a list grown, shrunk
    or edited by replacement misses; a definition edited deep in place keeps its former JSON."""
    if not isinstance(tools, list):
        return canonical_json(tools)
    key = (id(tools), *map(id, tools))
    hit = _TOOLS_JSON.get(key)
    if hit is not None and hit[0] is tools:
        return hit[1]
    data = canonical_json(tools)
    if len(_TOOLS_JSON) >= 64:
        _TOOLS_JSON.clear()
    _TOOLS_JSON[key] = (tools, data)
    return data


def value_key(value: Any) -> str:
    """A short stable key of any JSON-able value (loop detection, argument equality)."""
    return sha256_hex(canonical_json(value))[:SHORT]
