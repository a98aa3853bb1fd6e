"""Value flow: which earlier tool produced a value a tool now uses (`data`), and which tool
wrote a resource a tool now reads or runs (`resource`). Both are strong dependencies.

Which values are *distinctive* (can identify something, so that meeting one again is evidence of
flow, not coincidence) is defined once, in `detectors.py`, with the fabricated-value check.

Resources: a tool *writes* the path-like values of its arguments when it declares so
(`@tool(writes="path")`) or when its name says so (write/save/create/put/upload/store/append/
edit/mkdir/touch/set/update/delete); any later tool whose arguments mention a written path *reads*
it (`run_shell("python count.py")` after `write_file("count.py")`), or it declares `reads=`.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from otel_agent_trace.detectors import distinctive_values, leaves, value_key
from otel_agent_trace.json_text import parse_json_or_text

__all__ = ["declared_values", "distinctive_values", "is_writer", "leaves", "path_arguments", "path_like",
           "value_key"]

_WRITER = re.compile(r"(write|save|create|put|upload|store|append|edit|mkdir|touch|set|update|delete|remove)", re.I)
_PATHLIKE = re.compile(r"^[\w.\-~/]*[./][\w.\-~/]*$")


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
