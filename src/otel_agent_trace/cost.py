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
`_WAIT_S`). Lookups that found no price are remembered.

A library lookup costs ~130 us or more per call (the model match, then Decimal arithmetic over
its unit registry), so a model's rates are kept per (model, provider) after its first priced
call, as `prices.Rates` per input-size tier, when they are per-token prices: no time-of-day
price, no unit billed from usage other than the token counts we report. A price with a start date is kept until the next start date. Other
models are priced by the library every call. tests/test_cost.py checks the cached rates against
the library over every model of its snapshot.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import importlib.util
import logging
import threading
import time
from decimal import Decimal
from typing import Any

from otel_agent_trace._failopen import log_once
from otel_agent_trace.semconv import COST_USD
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
# (model, provider id) -> (kept rates, or None for "price with the library", valid until this POSIX time)
_rates: dict[tuple[str, str | None], tuple[_Bands | None, float]] = {}
_RATES_MAX = 1024
# the ModelPrice fields kept as Rates; any other priced unit (requests, reasoning apart, ...)
# may be billed from usage we do not report, so such a model stays with the library
_FLAT_FIELDS = {"input_mtok": "input", "output_mtok": "output", "cache_read_mtok": "cache_read",
                "cache_write_mtok": "cache_write"}
# units billed only from usage we never report (web searches, audio, images, 1-hour cache writes, ...):
# they add nothing to a call we price (checked against the library by tests/test_cost.py)
_UNREPORTED_UNITS = frozenset({
    "web_searches_kcount", "storage_searches_kcount", "cache_write_1h_mtok", "input_audio_mtok", "output_audio_mtok",
    "cache_audio_read_mtok", "audio_hours", "input_audio_hours", "input_image_mtok", "output_image_mtok",
    "cache_image_read_mtok", "input_document_kpages", "input_annotated_document_kpages", "input_video_mtok",
    "output_video_mtok"})


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
    if _prices is None:  # loaded once: afterwards no lock, no event wait per priced call
        preload()
        if not _loaded.wait(_WAIT_S) or _prices is None:
            return None
    provider_id = _PROVIDERS.get(provider or "")
    key = (bare, provider_id)
    if key in _unpriced:
        return None
    cached = _rates.get(key)
    if cached is not None and cached[0] is not None and time.time() < cached[1]:
        return cached[0].cost(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
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
    if cached is None or time.time() >= cached[1]:
        _remember_rates(key, price)
    return float(price.total_price)


def _remember_rates(key: tuple[str, str | None], price: Any) -> None:
    """Keep the model's rates from a library result when they can be kept (see the module docstring);
    otherwise remember that the library prices this model, until its price can next change."""
    if len(_rates) >= _RATES_MAX:
        return
    try:
        rates, until = _kept_rates(price.model_price), _valid_until(price.model.prices)
    except Exception as exc:  # a library whose shapes changed: keep pricing with it
        log_once("cost: rates cache", exc)
        rates, until = None, float("inf")
    _rates[key] = (rates, until)


@dataclasses.dataclass(frozen=True)
class _Bands:
    """A model's token rates by input size: `rates[i]` applies when the call's input tokens exceed
    `starts[i]` (the library's "cliff" tiers: crossing a tier prices every token at its rate)."""

    starts: tuple[int, ...]  # starts[0] == -1: the base rates
    rates: tuple[Rates, ...]

    def cost(self, input_tokens: int | None, output_tokens: int | None, cache_read_tokens: int | None,
             cache_write_tokens: int | None) -> float:
        band = 0
        for i in range(len(self.starts) - 1, 0, -1):
            if (input_tokens or 0) > self.starts[i]:
                band = i
                break
        return self.rates[band].cost(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)


def _kept_rates(model_price: Any) -> _Bands | None:
    """The model's rates as bands of `Rates`, or None when the library must price it (a unit priced
    from something other than the four token counts we report: per request, reasoning apart, ...)."""
    fields = {}
    for field, value in vars(model_price).items():
        if value is None or field in _UNREPORTED_UNITS:
            continue
        if field not in _FLAT_FIELDS:
            return None
        fields[_FLAT_FIELDS[field]] = value
    starts = sorted({tier.start for value in fields.values() if not isinstance(value, Decimal) for tier in value.tiers})
    bands = []
    for start in [-1, *starts]:
        at = {name: float(_price_at(value, start)) for name, value in fields.items()}
        at.setdefault("input", 0.0)
        at.setdefault("output", 0.0)
        at.setdefault("cache_read", at["input"])  # no cache rate: the library bills cached input as input
        at.setdefault("cache_write", at["input"])
        bands.append(Rates(**at))
    return _Bands((-1, *starts), tuple(bands))


def _price_at(value: Any, start: int) -> Decimal:
    """A field's price in the band that begins above `start` input tokens."""
    if isinstance(value, Decimal):
        return value
    price = value.base
    for tier in value.tiers:  # sorted ascending by the library
        if start >= tier.start:
            price = tier.price
    return price


def _valid_until(prices: Any) -> float:
    """Until when the price in force now stays in force: forever for a plain price, the next start
    date for dated prices, now (never cached) for a price that changes with the time of day."""
    conditions = prices if isinstance(prices, (list, tuple)) else ()
    now = time.time()
    until = float("inf")
    for conditional in conditions:
        constraint = conditional.constraint
        if constraint is None:
            continue
        start = getattr(constraint, "start_date", None)
        if start is None:
            return now  # a time-of-day price (or an unknown kind of constraint)
        start_ts = datetime.datetime.combine(start, datetime.time(), tzinfo=datetime.timezone.utc).timestamp() \
            if not isinstance(start, datetime.datetime) else start.timestamp()
        if start_ts > now:
            until = min(until, start_ts)
    return until


@functools.lru_cache(maxsize=8)
def _user_table(path: str) -> dict[str, Rates] | None:
    """The user's price file, read once per path; None (and one warning) if unusable."""
    try:
        return load(path)
    except ValueError as exc:
        _log.warning("otel-agent-trace: price file not used, no cost recorded: %s", exc)
        return None
