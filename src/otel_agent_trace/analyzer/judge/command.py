"""`analyze --judge` on the command line: its flags and the judge they configure. Importing this
module imports neither the judge's client nor `openai`: the parser stays cheap, and without
`--judge` nothing of the judge runs."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Mapping


def add_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("judge (optional: asks an LLM where unproven failures originated)")
    group.add_argument("--judge", action="store_true",
                       help="ask an OpenAI-compatible endpoint about failed runs without a proven origin "
                            "(needs the [judge] extra; OPENAI_BASE_URL / OPENAI_API_KEY as the openai client reads them)")
    group.add_argument("--judge-model", metavar="NAME", help="the judge's model (OTEL_AGENT_TRACE_JUDGE_MODEL)")
    group.add_argument("--judge-base-url", metavar="URL",
                       help="the endpoint (OTEL_AGENT_TRACE_JUDGE_BASE_URL, else OPENAI_BASE_URL)")
    group.add_argument("--judge-strategy", choices=("all-at-once", "step-by-step", "binary-search"),
                       help="how candidates are searched (default all-at-once: one request a run)")
    group.add_argument("--judge-top", type=int, metavar="N", help="candidate places judged per run (default 3)")
    group.add_argument("--judge-max-calls", type=int, metavar="N", help="requests sent at most (default 20)")
    group.add_argument("--judge-max-tokens", type=int, metavar="N",
                       help="prompt + completion tokens spent at most (default 200000)")
    group.add_argument("--judge-cache", metavar="DIR",
                       help="verdict cache (default $XDG_CACHE_HOME/otel-agent-trace/judge; 'off': none)")
    group.add_argument("--judge-response-format", choices=("json_schema", "json_object"),
                       help="structured outputs (json_schema, default) or JSON mode, for endpoints without them")


def start(args: argparse.Namespace, prices: Mapping[str, Any] | None) -> Any:
    """The judge `args` configure, or None after a message on stderr (unusable settings, no
    `openai` client, no key)."""
    from otel_agent_trace.analyzer.judge.client import JudgeUnavailable
    from otel_agent_trace.analyzer.judge.judge import Judge
    from otel_agent_trace.analyzer.judge.settings import JudgeSettings

    strategy = args.judge_strategy.replace("-", "_") if args.judge_strategy else None
    try:
        settings = JudgeSettings.from_env(model=args.judge_model, base_url=args.judge_base_url, strategy=strategy,
                                          top=args.judge_top, max_calls=args.judge_max_calls,
                                          max_tokens=args.judge_max_tokens, cache=args.judge_cache,
                                          response_format=args.judge_response_format)
        return Judge(settings, prices)
    except (ValueError, JudgeUnavailable) as exc:
        print(f"otel-agent-trace: {exc}", file=sys.stderr)
        return None
