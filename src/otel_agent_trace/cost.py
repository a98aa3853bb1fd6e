"""A model call's price in USD (`agent_trace.usage.cost_usd`), from pydantic's `genai-prices`.

Optional: `pip install otel-agent-trace[cost]`. Without it (or for a model the library does not
know) a chat span has no cost attribute: never a guessed one, never an error. Why that library
and not a table of our own: prices change every few weeks; genai-prices is a maintained,
MIT-licensed data set (hundreds of models across providers, dated price changes, tiered and
cached-token prices) with no dependency beyond pydantic and httpx2, which the clients already
bring. Its bundled snapshot is used as installed: no price update is fetched at run time.

A user price file (`OTEL_AGENT_TRACE_PRICES`, see prices.py) is consulted first: a model it lists
is priced from it, other models by the library. Cached-input and reasoning tokens are priced
apart where the client reports them (the library knows each model's cache and reasoning rates).

Importing it takes ~1 s (its pydantic models and data), so `preload()` starts that in a
daemon thread when the instrumentor starts; the first priced call waits for it (at most
`_WAIT_S`), later ones pay ~0.3-1 ms. Lookups that found no price are remembered.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import threading
from typing import Any

from otel_agent_trace._failopen import log_once
from otel_agent_trace.model import COST_USD  # noqa: F401 - (defined with the attribute names; imported from here too)
from otel_agent_trace.prices import Rates, load, lookup

_WAIT_S = 10.0
# our gen_ai.provider.name (and litellm's provider prefixes) → genai-prices provider ids
_PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "gcp.gemini": "google", "gcp.vertex_ai": "google",
              "gemini": "google", "vertex_ai": "google", "azure": "azure", "groq": "groq", "mistral": "mistral",
              "deepseek": "deepseek", "aws.bedrock": "aws", "bedrock": "aws", "x_ai": "x-ai", "xai": "x-ai"}

_log = logging.getLogger(__name__)
_loaded = threading.Event()
_lock = threading.Lock()
_prices: Any = None  # the genai_prices module once imported
_started = False
_unpriced: set[tuple[str, str | None]] = set()


def available() -> bool:
    """Is the optional price library installed (without importing it)?"""
    try:
        return importlib.util.find_spec("genai_prices") is not None
    except (ImportError, ValueError):  # blocked (`sys.modules["genai_prices"] = None`)
        return False


def preload() -> None:
    """Start importing the price library in the background (once; nothing if absent)."""
    global _started
    with _lock:
        if _started:
            return
        _started = True
    if not available():
        _loaded.set()
        return
    threading.Thread(target=_load, name="agent-trace-prices", daemon=True).start()


def _load() -> None:
    global _prices
    try:
        import genai_prices

        _prices = genai_prices
    except Exception as exc:  # a broken install: no costs, one warning
        log_once("cost: genai-prices", exc)
    finally:
        _loaded.set()


def cost_usd(model: str | None, provider: str | None, input_tokens: int | None, output_tokens: int | None,
             cache_read_tokens: int | None = None, cache_write_tokens: int | None = None,
             reasoning_tokens: int | None = None, prices: str | None = None) -> float | None:
    """USD of one call, or None (unknown model, no usage, no library and no user price). `prices`:
    the user's price file, consulted first; a broken one gives no cost at all (one warning)."""
    if not model or (input_tokens is None and output_tokens is None):
        return None
    bare = model[len(provider) + 1:] if provider and model.startswith(provider + "/") else model  # litellm's
    if prices:
        table = _user_table(prices)
        if table is None:
            return None
        rates = lookup(table, model) or lookup(table, bare)
        if rates is not None:
            return rates.cost(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
    preload()
    if not _loaded.wait(_WAIT_S) or _prices is None:
        return None
    provider_id = _PROVIDERS.get(provider or "")
    key = (bare, provider_id)
    if key in _unpriced:
        return None
    # input/output are totals; the library prices the cached and reasoning parts of them apart
    usage = _prices.Usage(input_tokens=input_tokens or 0, output_tokens=output_tokens or 0,
                          cache_read_tokens=cache_read_tokens or None, cache_write_tokens=cache_write_tokens or None,
                          output_reasoning_tokens=reasoning_tokens or None)
    try:
        price = _prices.calc_price(usage, bare, provider_id=provider_id)
    except LookupError:  # a model the library does not know: no cost rather than a wrong one
        if len(_unpriced) < 1024:
            _unpriced.add(key)
        return None
    return float(price.total_price)


@functools.lru_cache(maxsize=8)
def _user_table(path: str) -> dict[str, Rates] | None:
    """The user's price file, read once per path; None (and one warning) if unusable."""
    try:
        return load(path)
    except ValueError as exc:
        _log.warning("otel-agent-trace: price file not used, no cost recorded: %s", exc)
        return None
