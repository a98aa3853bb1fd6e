"""A model call's price in USD (`agent_trace.usage.cost_usd`), from pydantic's `genai-prices`.

Optional: `pip install otel-agent-trace[cost]`. Without it (or for a model the library does not
know) a chat span has no cost attribute: never a guessed one, never an error. Why that library
and not a table of our own: prices change every few weeks; genai-prices is a maintained,
MIT-licensed data set (hundreds of models across providers, dated price changes, tiered and
cached-token prices) with no dependency beyond pydantic and httpx2, which the clients already
bring. Its bundled snapshot is used as installed: no price update is fetched at run time.

Importing it takes ~1 s (its pydantic models and data), so `preload()` starts that in a
daemon thread when the instrumentor starts; the first priced call waits for it (at most
`_WAIT_S`), later ones pay ~0.3-1 ms. Lookups that found no price are remembered.
"""

from __future__ import annotations

import importlib.util
import threading
from typing import Any

from otel_agent_trace._failopen import log_once

COST_USD = "agent_trace.usage.cost_usd"
_WAIT_S = 10.0
# our gen_ai.provider.name (and litellm's provider prefixes) → genai-prices provider ids
_PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "gcp.gemini": "google", "gcp.vertex_ai": "google",
              "gemini": "google", "vertex_ai": "google", "azure": "azure", "groq": "groq", "mistral": "mistral",
              "deepseek": "deepseek", "aws.bedrock": "aws", "bedrock": "aws", "x_ai": "x-ai", "xai": "x-ai"}

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


def cost_usd(model: str | None, provider: str | None, input_tokens: int | None, output_tokens: int | None) -> float | None:
    """USD of one call, or None (no library, unknown model, no usage)."""
    if not model or (input_tokens is None and output_tokens is None):
        return None
    preload()
    if not _loaded.wait(_WAIT_S) or _prices is None:
        return None
    provider_id = _PROVIDERS.get(provider or "")
    if provider and model.startswith(provider + "/"):  # litellm's `openai/gpt-4o-mini`
        model = model[len(provider) + 1:]
    key = (model, provider_id)
    if key in _unpriced:
        return None
    usage = _prices.Usage(input_tokens=input_tokens or 0, output_tokens=output_tokens or 0)
    try:
        price = _prices.calc_price(usage, model, provider_id=provider_id)
    except LookupError:  # a model the library does not know: no cost rather than a wrong one
        if len(_unpriced) < 1024:
            _unpriced.add(key)
        return None
    return float(price.total_price)
