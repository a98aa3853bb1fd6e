"""Value flow: which earlier tool produced a value a tool now uses (`data`), and which tool
wrote a resource a tool now reads or runs (`resource`). Both are strong dependencies.

A value is *distinctive* when it can identify something, so that meeting it again is evidence
of flow, not coincidence:
- a number whose absolute value is >= 10 (ids, amounts; not 0, 1, counters or booleans);
- a string (a JSON leaf, or a token of free text split on white space, quotes and brackets) of
  3+ characters that contains a digit and a letter or 3+ digits (`A1001`, `C-77`, `2026-11-30`;
  not a range like `3-5`), or that contains one of `/ . _ - @ :` with 4+ characters and a letter
  (`count.py`, `src/app`, `a@b.io`, `user_id`).
Plain words (`shipped`, `true`, `null`) and one-letter strings are never distinctive. Numbers in
text (`$25.00`) are read as numbers, so they meet the same value in JSON (`25.0`).

Resources: a tool *writes* the path-like values of its arguments when it declares so
(`@tool(writes="path")`) or when its name says so (write/save/create/put/upload/store/append/
edit/mkdir/touch/set/update/delete); any later tool whose arguments mention a written path *reads*
it (`run_shell("python count.py")` after `write_file("count.py")`), or it declares `reads=`.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Iterator

from otel_agent_trace.model import parse_json_or_text

_SEPARATORS = r"\s\"'`()\[\]{}<>,;=|"
# a token that can be distinctive holds a digit or one of / . _ - @ : (plain words never are)
_CANDIDATE = re.compile(rf"[^{_SEPARATORS}]*[\d/._@:\-][^{_SEPARATORS}]*")
_SPACE = re.compile(r"\s")
_DIGIT = re.compile(r"\d")
_ALPHA = re.compile(r"[^\W\d_]")
_MARK = re.compile(r"[/._\-@:]")
_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3}){1,3}|\d+)?(?:\.\d+)?(?:[eE][+-]?\d+)?")
_TRIM = "$€£¥.,:;!?*#%"
_WRITER = re.compile(r"(write|save|create|put|upload|store|append|edit|mkdir|touch|set|update|delete|remove)", re.I)
_PATHLIKE = re.compile(r"^[\w.\-~/]*[./][\w.\-~/]*$")
MAX_SCAN_CHARS = 65536  # values past this many characters of one result/argument are not indexed
_CACHE_CHARS = 8_000_000  # bound of the cache below, in characters of text held
_cache: dict[str, frozenset[str]] = {}  # text -> its keys: contexts repeat across steps and runs
_cached_chars = 0


def value_key(value: Any) -> str | None:
    """The key of a distinctive value, else None (see the module docstring)."""
    if value is None or value is True or value is False:
        return None
    if isinstance(value, (int, float)):
        return f"n:{float(value):g}" if abs(value) >= 10 else None
    if not isinstance(value, str):
        return None
    text = value.strip().strip(_TRIM) if len(value) < 256 else value.strip()
    if len(text) < 3:
        return None
    if _NUMBER.fullmatch(text) and _DIGIT.search(text):
        number = float(text.replace(",", ""))
        return f"n:{number:g}" if abs(number) >= 10 else None
    if _DIGIT.search(text):  # an id (A1001, C-77) or a long code (2026-11-30); not a range like 3-5
        return f"s:{text}" if _ALPHA.search(text) or len(_DIGIT.findall(text)) >= 3 else None
    if len(text) >= 4 and _MARK.search(text) and _ALPHA.search(text) and not _SPACE.search(text):
        return f"s:{text}"
    return None


def leaves(value: Any, depth: int = 0) -> Iterator[Any]:
    """Scalar leaves of a JSON-like value; text yields its candidate tokens instead."""
    if depth > 32:
        return
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from leaves(item, depth + 1)
    elif isinstance(value, str):
        if len(value) <= 64 and not _SPACE.search(value):
            yield value  # an identifier-like string is one value
        else:  # text: its tokens are the values (only those that can be distinctive)
            yield from _CANDIDATE.findall(value, 0, MAX_SCAN_CHARS)
    else:
        yield value


def distinctive_values(payload: Any) -> frozenset[str]:
    """Keys of the distinctive values in a tool result, arguments or message text.

    JSON text is parsed first, so `'{"id": "A1"}'` and `{"id": "A1"}` give the same keys. Results
    for text are cached (bounded): the same content reappears in every step's context.
    """
    text = payload if isinstance(payload, str) else None
    if text is not None:
        cached = _cache.get(text)
        if cached is not None:
            return cached
        payload = parse_json_or_text(text[:MAX_SCAN_CHARS] if len(text) > MAX_SCAN_CHARS else text)
    keys = frozenset(k for k in map(value_key, leaves(payload)) if k is not None)
    if text is not None:
        global _cached_chars
        if _cached_chars + len(text) > _CACHE_CHARS:
            _cache.clear()
            _cached_chars = 0
        _cache[text] = keys
        _cached_chars += len(text)
    return keys


def is_writer(tool_name: str) -> bool:
    return bool(_WRITER.search(tool_name))


def path_like(values: Iterable[str]) -> set[str]:
    """The string value keys that look like paths or keys of a store (`count.py`, `/tmp/x`)."""
    return {k for k in values if k.startswith("s:") and _PATHLIKE.match(k[2:])}


def path_arguments(arguments: Any) -> set[str]:
    """Path-like values given directly as arguments (`write_file(path="count.py", content=...)`):
    what a writer writes; tokens inside free text (the file's content) are not."""
    parsed = parse_json_or_text(arguments) if isinstance(arguments, str) else arguments
    if not isinstance(parsed, dict):
        return set()
    keys = {value_key(v) for v in parsed.values() if isinstance(v, str) and len(v) <= 256 and not any(c.isspace() for c in v)}
    return path_like(k for k in keys if k)


def declared_values(arguments: Any, names: Iterable[str]) -> set[str]:
    """Path-like value keys of the named arguments (for `@tool(reads=..., writes=...)`)."""
    parsed = parse_json_or_text(arguments) if isinstance(arguments, str) else arguments
    if not isinstance(parsed, dict):
        return set()
    keys: set[str] = set()
    for name in names:
        if name in parsed:
            for leaf in leaves(parsed[name]):
                if isinstance(leaf, str) and leaf.strip():
                    keys.add(value_key(leaf) or f"s:{leaf.strip()}")
    return keys
