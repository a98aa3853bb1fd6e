"""The judge in the report path: `Judge.wrap(reduce)` is the reducer the CLI hands to the
streaming analysis with `--judge`. Each finding is reduced as usual; when its entry is a failed
run without a proven first place, the judge is asked about it while the run's spans are still
alive (the dossier needs them) and the verdict is written into the entry before the reports read
it. Runs are judged in the order the analysis finds them (one process: `--judge` analyses with
`--jobs 1`, so the budget and the cache are one), until the budget is spent.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from otel_agent_trace.analyzer.judge import dossier as dossiers
from otel_agent_trace.analyzer.judge.client import JudgeClient
from otel_agent_trace.analyzer.judge.settings import JudgeSettings
from otel_agent_trace.analyzer.judge.strategies import STRATEGIES
from otel_agent_trace.analyzer.judge.verdict import apply, unproven


class Judge:
    """One report's judge: its client (budget, cache, ledger) and settings."""

    def __init__(self, settings: JudgeSettings, prices: Mapping[str, Any] | None = None):
        self.settings = settings
        self.client = JudgeClient(settings, _pricer(settings, prices))

    def wrap(self, reduce: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """`reduce` with the judge's verdict written into each judged run's entry."""

        def judged(finding: Any) -> Any:
            summary = reduce(finding)
            if summary.data is not None and unproven(summary.data):
                try:
                    self.judge(finding, summary.data)
                except Exception as exc:  # noqa: BLE001 - a fault of the judge never costs the report
                    self.client.ledger.errors += 1
                    summary.data["judge"] = {"verdict": None, "why": f"judge error: {type(exc).__name__}: {exc}"}
                if summary.html is not None:  # (rendered before the verdict: again, with it)
                    from otel_agent_trace.analyzer.report.html import run_section

                    summary.html = run_section(summary.data, finding)
            return summary

        return judged

    def judge(self, finding: Any, entry: dict[str, Any]) -> None:
        """Ask about one run; its entry gets the verdict, or `judge.verdict: null` and why."""
        settings, ledger = self.settings, self.client.ledger
        if self.client.spent():
            ledger.runs_skipped += 1
            entry["judge"] = {"verdict": None, "why": self.client.given_up or "budget spent"}
            return
        dossier = dossiers.build(finding, entry, settings.top, settings.step_chars)
        if not dossier.steps:
            entry["judge"] = {"verdict": None, "why": "no step to judge"}
            return
        before = (ledger.malformed, ledger.refused, ledger.failed, ledger.over_budget)
        verdict = STRATEGIES[settings.strategy](dossier, self.client.ask)
        ledger.runs_judged += 1
        if verdict is None:
            after = (ledger.malformed, ledger.refused, ledger.failed, ledger.over_budget)
            why = [name for name, a, b in zip(("malformed answer", "refused", "request failed", "budget spent"),
                                              before, after) if b > a]
            entry["judge"] = {"verdict": None, "why": ", ".join(why) or "no step was judged the decisive mistake"}
            return
        ledger.verdicts += 1
        apply(entry, dossier, verdict, settings.model or "", settings.strategy)

    def summary(self) -> dict[str, Any]:
        """The report's `judge` section: settings that shaped it and what it spent."""
        s = self.settings
        return {"model": s.model, "strategy": s.strategy, "top": s.top, "max_calls": s.max_calls,
                "max_tokens": s.max_tokens, "cache": s.cache_dir(), **self.client.ledger.as_dict(),
                **({"stopped": self.client.given_up} if self.client.given_up else {})}

    def line(self) -> str:
        """The cost line printed at the end of a report."""
        d = self.client.ledger
        cost = "cost unknown (no price for the model)" if d.cost_usd is None else f"${d.cost_usd:.4f}"
        text = (f"judge {self.settings.model} ({self.settings.strategy.replace('_', ' ')}): {d.runs_judged} run(s) "
                f"judged, {d.verdicts} verdict(s); {d.requests} request(s), {d.cached} cached; "
                f"{d.prompt_tokens} prompt + {d.completion_tokens} completion tokens, {cost}")
        problems = [f"{n} {what}" for n, what in ((d.malformed, "malformed"), (d.refused, "refused"),
                                                 (d.failed, "failed"), (d.over_budget, "over budget"),
                                                 (d.runs_skipped, "run(s) not judged"),
                                                 (d.errors, "judge error(s)")) if n]
        if problems:
            text += "; " + ", ".join(problems)
        if self.client.given_up:
            text += f"; stopped: {self.client.given_up}"
        return text


def _pricer(settings: JudgeSettings, prices: Mapping[str, Any] | None) -> Callable[[int, int], float | None]:
    """USD of one request: the `--rules` prices table, else the price file, else genai-prices."""
    from otel_agent_trace import cost
    from otel_agent_trace.prices import as_table, lookup

    rates = lookup(as_table(prices), settings.model) if prices else None

    def price(prompt: int, completion: int) -> float | None:
        if rates is not None:
            return rates.cost(prompt, completion)
        return cost.cost_usd(settings.model, None, prompt, completion, prices=settings.prices)

    return price
