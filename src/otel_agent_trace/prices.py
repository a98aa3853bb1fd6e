"""A user's price table: model -> USD per million tokens, read from a JSON or YAML file.

One format for the recorder (`OTEL_AGENT_TRACE_PRICES=path` / `prices=`, used before genai-prices)
and the analyzer (the `prices` of a `--rules` file)::

    {"gpt-4o-mini": {"input": 0.15, "output": 0.60, "cache_read": 0.075},
     "claude-sonnet-4-5": {"input": 3, "output": 15, "cache_read": 0.30, "cache_write": 3.75}}

`input` and `output` are required; `cache_read` / `cache_write` default to `input` (no discount
assumed). The older `input_per_mtok` / `output_per_mtok` spellings are read too, and a file whose
top level has a `prices` key (a team rules file) is read from that key. A model id is found
exactly, else under the longest listed name it starts with (`gpt-4o-mini-2024-07-18` under
`gpt-4o-mini`); a model not listed has no price here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from otel_agent_trace import datafile

_FIELDS = ("input", "output", "cache_read", "cache_write")


class PriceFileError(datafile.DataFileError):
    """The price table is unusable (file, model and reason in the message)."""


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, input_tokens: int | None, output_tokens: int | None, cache_read_tokens: int | None = None,
             cache_write_tokens: int | None = None) -> float:
        """USD of one call. `input_tokens` is the whole input, cache reads and writes included
        (the GenAI conventions' meaning); reasoning is part of `output_tokens`."""
        read, write = cache_read_tokens or 0, cache_write_tokens or 0
        plain = max((input_tokens or 0) - read - write, 0)
        return (plain * self.input + read * self.cache_read + write * self.cache_write
                + (output_tokens or 0) * self.output) / 1e6


def table(raw: Any, source: str = "prices") -> dict[str, Rates]:
    """Validate a parsed price table (`source` names it in errors)."""
    if isinstance(raw, Mapping) and isinstance(raw.get("prices"), Mapping):
        raw = raw["prices"]
    if not isinstance(raw, Mapping):
        raise PriceFileError(f"{source}: expected an object of model -> prices, got {type(raw).__name__}")
    out = {}
    for model, entry in raw.items():
        if not isinstance(entry, Mapping):
            raise PriceFileError(f"{source}: {model}: expected an object with input and output, got {entry!r}")
        values = {}
        for name in _FIELDS:
            value = entry.get(name, entry.get(f"{name}_per_mtok"))
            if value is None:
                if name in ("input", "output"):
                    raise PriceFileError(f"{source}: {model}: '{name}' (USD per million tokens) missing")
                value = values["input"]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise PriceFileError(f"{source}: {model}: '{name}' must be a number >= 0, got {value!r}")
            values[name] = float(value)
        out[str(model)] = Rates(**values)
    return out


def as_table(raw: Mapping[str, Any]) -> Mapping[str, Rates]:
    """`raw` if already validated, else `table(raw)` (callers may pass the parsed JSON)."""
    return raw if all(isinstance(v, Rates) for v in raw.values()) else table(raw)


def load(path: str) -> dict[str, Rates]:
    """The price table of a JSON or YAML file."""
    return table(datafile.load(path), path)


def lookup(prices: Mapping[str, Rates], model: str | None) -> Rates | None:
    """The model's rates: exact id, else the longest listed name it starts with; None if absent."""
    if not model:
        return None
    hit = prices.get(model)
    if hit is None:
        names = [name for name in prices if model.startswith(name)]
        hit = prices[max(names, key=len)] if names else None
    return hit
