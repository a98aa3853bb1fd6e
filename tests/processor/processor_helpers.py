"""OTLP JSON Lines reading helpers for the processor tests."""

from pathlib import Path

import orjson


def read_spans(path):
    """Every span of an OTLP JSON Lines file, with its resource attributes beside it."""
    out = []
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        req = orjson.loads(line)
        for rs in req.get("resourceSpans", []):
            res = rs.get("resource", {})
            for ss in rs.get("scopeSpans", []):
                for span in ss.get("spans", []):
                    span["_resource"] = res
                    out.append(span)
    return out


def attrs(kvs):
    """OTLP JSON attribute list -> {key: python value} (int64 come as strings)."""
    out = {}
    for kv in kvs or []:
        out[kv["key"]] = _value(kv["value"])
    return out


def _value(v):
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return v["boolValue"]
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    return None


def strings(node):
    """All strings inside a decoded JSON node (keys and values)."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield k
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)
