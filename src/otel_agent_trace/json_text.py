"""`parse_json_or_text`: attribute values that may hold JSON text, parsed when they do."""

from __future__ import annotations

from typing import Any

import orjson  # (a dependency; the analysis parses tool arguments with it per call)

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
