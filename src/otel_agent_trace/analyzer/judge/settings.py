"""What the user configures for the judge: keywords in code, `--judge-*` flags, or
`OTEL_AGENT_TRACE_JUDGE_*` environment variables (a keyword wins, then the variable, then the
default). The endpoint and key are the `openai` client's own when not given here: it reads
`OPENAI_BASE_URL` and `OPENAI_API_KEY` itself."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any

ENV_PREFIX = "OTEL_AGENT_TRACE_JUDGE_"
STRATEGIES = ("all_at_once", "step_by_step", "binary_search")
RESPONSE_FORMATS = ("json_schema", "json_object")
CACHE_OFF = "off"


class JudgeSettingsError(ValueError):
    """A judge setting is unusable (the message names it)."""


@dataclass(frozen=True)
class JudgeSettings:
    """The judge's settings (docs/configuration.md, "Judge")."""

    model: str | None = None  # required: the judge's model name at the endpoint
    base_url: str | None = None  # None: the client's OPENAI_BASE_URL, else api.openai.com
    api_key: str | None = None  # None: the client's OPENAI_API_KEY (never a command-line flag)
    strategy: str = "all_at_once"  # all_at_once | step_by_step | binary_search
    top: int = 3  # candidate places judged per run (the report's first ones, filled by their neighbours); 0: all
    max_calls: int = 20  # requests sent, over the whole report (cached answers are free)
    max_tokens: int = 200_000  # prompt + completion tokens, over the whole report
    answer_tokens: int = 400  # completion tokens one answer may use
    step_chars: int = 1500  # characters of one step shown to the judge (input, output, tools each)
    cache: str | None = None  # verdict cache directory; None: $XDG_CACHE_HOME/otel-agent-trace/judge; "off"
    response_format: str = "json_schema"  # json_schema | json_object (endpoints without structured outputs)
    timeout: float = 60.0  # seconds per request
    prices: str | None = None  # price file for the cost line; None: OTEL_AGENT_TRACE_PRICES, then genai-prices

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: Any) -> "JudgeSettings":
        """Keywords (None: not given), then `OTEL_AGENT_TRACE_JUDGE_<NAME>`, then defaults."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(k for k in overrides if k not in names)
        if unknown:
            raise TypeError(f"unknown judge setting(s): {', '.join(unknown)} (known: {', '.join(sorted(names))})")
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = overrides.get(f.name)
            variable = ENV_PREFIX + f.name.upper()
            if raw is None:
                raw = env.get(variable)
                if f.name == "prices" and not raw:
                    raw = env.get("OTEL_AGENT_TRACE_PRICES")
                if raw is None or raw == "":
                    continue
            values[f.name] = _convert(f.name, f.default, raw, variable)
        if "strategy" in values:
            values["strategy"] = str(values["strategy"]).replace("-", "_").lower()
        settings = cls(**values)
        settings.check()
        return settings

    def check(self) -> None:
        if self.strategy not in STRATEGIES:
            raise JudgeSettingsError(f"judge strategy must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}")
        if self.response_format not in RESPONSE_FORMATS:
            raise JudgeSettingsError(f"judge response format must be one of {', '.join(RESPONSE_FORMATS)}, "
                                     f"got {self.response_format!r}")
        for name in ("top", "max_calls", "max_tokens", "answer_tokens", "step_chars"):
            if getattr(self, name) < 0 or (name in ("answer_tokens", "step_chars") and getattr(self, name) == 0):
                raise JudgeSettingsError(f"judge {name} must be a positive number, got {getattr(self, name)}")
        if not self.model:
            raise JudgeSettingsError("the judge needs a model: --judge-model NAME or OTEL_AGENT_TRACE_JUDGE_MODEL")

    def cache_dir(self, environ: dict[str, str] | None = None) -> str | None:
        """The cache directory, None when the cache is off."""
        if self.cache == CACHE_OFF:
            return None
        if self.cache:
            return self.cache
        env = os.environ if environ is None else environ
        base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "otel-agent-trace", "judge")


def _convert(name: str, default: Any, raw: Any, variable: str) -> Any:
    try:
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
    except (TypeError, ValueError):
        raise JudgeSettingsError(f"{variable}: not a number: {raw!r}") from None
    return raw.strip() if isinstance(raw, str) else raw
