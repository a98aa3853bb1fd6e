"""A small JSON Schema validator for what agents declare: tool parameters and final answers.

It checks the keywords tool definitions use in practice: `type` (also a list of types),
`required`, `properties`, `additionalProperties: false`, `items`, `enum`, `const`,
`minimum`/`maximum`, `minLength`/`maxLength`, `minItems`/`maxItems`, `pattern`, `anyOf`/`oneOf`.
Other keywords are ignored (never a false error). It runs on every tool call, so it is
deliberately tiny and allocation-free on success; full validators cost more than the call.
"""

from __future__ import annotations

import re
from typing import Any

_TYPES: dict[str, Any] = {
    "object": dict,
    "array": (list, tuple),
    "string": str,
    "boolean": bool,
    "null": type(None),
}


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    expected = _TYPES.get(name)
    return True if expected is None else isinstance(value, expected)


def errors(value: Any, schema: Any, path: str = "$", limit: int = 10) -> list[str]:
    """Violations of `schema` by `value`, as `"$.a.b: reason"` strings (at most `limit`)."""
    out: list[str] = []
    _check(value, schema, path, out, limit)
    return out


def _check(value: Any, schema: Any, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit or not isinstance(schema, dict):
        return
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(_is_type(value, k) for k in kinds):
            out.append(f"{path}: expected {'/'.join(map(str, kinds))}, got {type(value).__name__}")
            return
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path}: {value!r} not one of {schema['enum']!r}")
    if "const" in schema and value != schema["const"]:
        out.append(f"{path}: expected {schema['const']!r}")
    for keyword in ("anyOf", "oneOf"):
        options = schema.get(keyword)
        if isinstance(options, list) and options and not any(not errors(value, o, path, 1) for o in options):
            out.append(f"{path}: matches none of {keyword}")
    if isinstance(value, dict):
        for name in schema.get("required") or ():
            if name not in value:
                out.append(f"{path}: missing required property {name!r}")
        properties = schema.get("properties") or {}
        for name, item in value.items():
            if name in properties:
                _check(item, properties[name], f"{path}.{name}", out, limit)
            elif schema.get("additionalProperties") is False:
                out.append(f"{path}: unexpected property {name!r}")
    elif isinstance(value, (list, tuple)):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _check(item, items, f"{path}[{i}]", out, limit)
        _bounds(len(value), schema, "minItems", "maxItems", path, "items", out)
    elif isinstance(value, str):
        _bounds(len(value), schema, "minLength", "maxLength", path, "characters", out)
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and re.search(pattern, value) is None:
            out.append(f"{path}: does not match {pattern!r}")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _bounds(value, schema, "minimum", "maximum", path, "", out)


def _bounds(size: float, schema: dict, low: str, high: str, path: str, unit: str, out: list[str]) -> None:
    if isinstance(schema.get(low), (int, float)) and size < schema[low]:
        out.append(f"{path}: {size} is below {low} {schema[low]} {unit}".rstrip())
    if isinstance(schema.get(high), (int, float)) and size > schema[high]:
        out.append(f"{path}: {size} is above {high} {schema[high]} {unit}".rstrip())
