"""User redaction rules: value patterns and key patterns, from code or a YAML/JSON file.

File (`OTEL_AGENT_TRACE_REDACT_RULES=rules.yaml`, JSON accepted too; YAML needs PyYAML)::

    rules:
      - name: ORDER             # the pseudonym tag: [ORDER:1a2b3c4d]
        regex: "ORD-\\d{6,}"    # every match inside any string value
      - name: ADDRESS
        keys: ["*.address", "shipping_*"]   # globs on attribute keys and JSON object keys:
                                            # the whole value becomes a pseudonym

Key rules match whole key names (globs, case-insensitive), so `*token*` would never be needed:
the built-in secret keys below match a last name segment exactly, which is why
`gen_ai.usage.input_tokens` never matches (the Collector's `.*token.*` masks it).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Keys whose string values are credentials whatever they look like (last segment, exact).
SECRET_KEYS = re.compile(
    r"(?i)(?:^|[._\-/])(?:authorization|proxy[_-]authorization|cookie|set[_-]cookie|x[_-]api[_-]key|api[_-]?key"
    r"|password|passwd|secret|client[_-]secret|private[_-]key|access[_-]token|refresh[_-]token|id[_-]token"
    r"|auth[_-]token|session[_-]token|bearer[_-]token)$"
)


@dataclass(frozen=True)
class ValueRule:
    name: str
    pattern: re.Pattern[str]


@dataclass(frozen=True)
class KeyRule:
    name: str
    pattern: re.Pattern[str]


@dataclass
class Rules:
    """Value rules (regex over every string) and key rules (whole value by key name)."""

    values: list[ValueRule] = field(default_factory=list)
    keys: list[KeyRule] = field(default_factory=list)

    def key_kind(self, key: str) -> str | None:
        """The pseudonym tag for a key whose whole value is sensitive, else None."""
        for rule in self.keys:
            if rule.pattern.search(key):
                return rule.name
        if SECRET_KEYS.search(key):
            return "SECRET"
        return None

    def add_regex(self, name: str, regex: str) -> None:
        self.values.append(ValueRule(_tag(name), re.compile(regex)))

    def add_keys(self, name: str, globs: Iterable[str]) -> None:
        for glob in globs:
            self.keys.append(KeyRule(_tag(name), re.compile(fnmatch.translate(glob), re.IGNORECASE)))


def _tag(name: str) -> str:
    tag = re.sub(r"[^A-Z0-9_]", "_", str(name).upper())
    return tag or "CUSTOM"


def parse_rules(data: Any) -> Rules:
    """Rules from the parsed file: `{"rules": [...]}` or a bare list of rule objects."""
    items = data.get("rules", []) if isinstance(data, dict) else data
    rules = Rules()
    for item in items or []:
        name = item.get("name", "CUSTOM")
        if item.get("regex"):
            rules.add_regex(name, item["regex"])
        for regex in item.get("regexes", []) or []:
            rules.add_regex(name, regex)
        keys = item.get("keys") or item.get("key")
        if keys:
            rules.add_keys(name, [keys] if isinstance(keys, str) else keys)
    return rules


def load_rules(path: str | None) -> Rules:
    """Read a rules file; `.json` (or JSON text) with the standard library, YAML with PyYAML."""
    if not path:
        return Rules()
    text = Path(path).read_text(encoding="utf-8")
    if path.endswith(".json") or text.lstrip().startswith(("{", "[")):
        return parse_rules(json.loads(text))
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(f"{path}: YAML rules need PyYAML (pip install pyyaml), or write JSON") from exc
    return parse_rules(yaml.safe_load(text))
