"""OTLP JSON values read field by field: an AnyValue, an id given as hex or base64, an attribute
list or an integer field that says what is wrong (`report.bad`) and keeps what is usable. Shared
by the span reader (otlp_json.py) and the log reader (otlp_logs.py)."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from otel_agent_trace.analyzer.spans import InputReport

MAX_ATTRIBUTE_CHARS = 1 << 20  # 1 MiB of text per attribute value; longer values are truncated
_HEX = frozenset("0123456789abcdefABCDEF")


def any_value(value: Any) -> Any:
    """Plain Python value of an OTLP AnyValue (int64 given as strings become ints)."""
    if not isinstance(value, dict) or not value:
        return None
    if len(value) != 1:
        raise ValueError(f"AnyValue with {len(value)} fields")
    kind, inner = next(iter(value.items()))
    if kind == "stringValue":
        if not isinstance(inner, str):
            raise TypeError(f"stringValue is {type(inner).__name__}")
        return inner
    if kind == "intValue":
        if isinstance(inner, bool) or not isinstance(inner, (int, str)):
            raise TypeError(f"intValue is {type(inner).__name__}")
        return int(inner)
    if kind == "doubleValue":
        if isinstance(inner, str) and inner in ("NaN", "Infinity", "-Infinity"):
            return float(inner.replace("Infinity", "inf"))
        if isinstance(inner, bool) or not isinstance(inner, (int, float)):
            raise TypeError(f"doubleValue is {type(inner).__name__}")
        return float(inner)
    if kind == "boolValue":
        if not isinstance(inner, bool):
            raise TypeError(f"boolValue is {type(inner).__name__}")
        return inner
    if kind == "arrayValue":
        return [any_value(v) for v in (inner or {}).get("values") or ()]
    if kind == "kvlistValue":
        return {kv["key"]: any_value(kv.get("value")) for kv in (inner or {}).get("values") or ()}
    if kind == "bytesValue":
        return inner
    raise ValueError(f"unknown AnyValue kind {kind!r}")



def attributes_careful(raw: Any, line: int, report: InputReport, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if raw is None:
        return out
    if not isinstance(raw, list):
        report.bad(line, f"{where}: attributes is {type(raw).__name__}, not a list; dropped")
        return out
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            report.bad(line, f"{where}: attribute without a string key dropped: {short(item)}")
            continue
        key = item["key"]
        try:
            value = any_value(item.get("value"))
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            report.bad(line, f"{where}: attribute {key!r} dropped: {type(exc).__name__}: {exc}")
            continue
        if isinstance(value, str) and len(value) > MAX_ATTRIBUTE_CHARS:
            report.bad(line, f"{where}: attribute {key!r} is {len(value)} characters; truncated to {MAX_ATTRIBUTE_CHARS}")
            value = value[:MAX_ATTRIBUTE_CHARS]
        out[key] = value
    return out



def int_field(raw: dict, keys: tuple[str, ...], line: int, report: InputReport, where: str) -> int:
    for key in keys:
        if key in raw:
            value = raw[key]
            try:
                if isinstance(value, bool) or isinstance(value, float):
                    raise TypeError(type(value).__name__)
                return int(value or 0)
            except (TypeError, ValueError) as exc:
                report.bad(line, f"{where}: {key} unreadable ({short(value)}: {exc}); read as 0")
                return 0
    return 0



def enum_field(value: Any, names: dict[str, int], highest: int, line: int, report: InputReport, where: str, what: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= highest:
        return value
    if isinstance(value, str) and value in names:
        return names[value]
    report.warn(line, f"{where}: unknown {what} {short(value)}; read as unset")
    return 0



def short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."



def hex_id(value: Any, size: int) -> str:
    """Lowercase hex of an id given as hex (OTLP JSON) or base64 (protobuf JSON mapping)."""
    if not value:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"id is {type(value).__name__}, not a string")
    text = value
    if len(text) == size * 2 and _HEX.issuperset(text):
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"bad id {short(text)}") from None
    if len(raw) != size:
        raise ValueError(f"bad id {short(text)}")
    return raw.hex()
