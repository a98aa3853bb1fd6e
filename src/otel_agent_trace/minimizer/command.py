"""`otel-agent-trace minimize`: arguments, the run, and the text / JSON report.

Exit codes: 0 a minimal case that reproduces the failure; 1 the budget ran out (the best case so
far is reported); 2 unusable arguments or input, or a harness that does not reproduce the failure.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

EXIT_OK, EXIT_BUDGET, EXIT_UNUSABLE = 0, 1, 2


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("minimize", help="shrink a failing run to its minimal failing case (delta debugging)",
                            description="Replay subsets of a recorded run's tool steps and keep the smallest one "
                                        "that fails with the same signature.")
    parser.add_argument("trace_file", metavar="TRACE_FILE", help="the recorded trace (OTLP JSON Lines, Jaeger JSON)")
    parser.add_argument("--trace-id", help="the run to minimize (a unique prefix); default: the only (failed) run")
    parser.add_argument("--harness", required=True, help="sandbox (built in: file and shell tools) or module:function")
    parser.add_argument("--signature", choices=("exact", "error", "output", "any"), default="exact",
                        help="what must match the original failure (any: seed 004's loose mode, unsound)")
    parser.add_argument("--strategy", choices=("ddmin", "ddmin+closure"), default="ddmin+closure")
    parser.add_argument("--workspace", metavar="DIR", help="sandbox: the task's inputs, copied into every sandbox")
    parser.add_argument("--output", metavar="PATH", help="sandbox: the file (relative to the sandbox) whose content "
                                                         "hash is the output in the signature")
    parser.add_argument("--expect", metavar="SHA256", help="sandbox: the correct output's sha256 (a prefix): PASS")
    parser.add_argument("--tool-kind", action="append", default=[], metavar="NAME=KIND",
                        help="sandbox: replay tool NAME (or glob, exec_*) as write|read|list|shell|python|noop (repeatable)")
    parser.add_argument("--time-limit", type=float, default=10.0, metavar="S", help="sandbox: seconds per step")
    parser.add_argument("--harness-timeout", type=float, metavar="S",
                        help="seconds one execution may take before it is reported as HARNESS_TIMEOUT "
                             "(default: 120; sandbox: --time-limit per step plus 120)")
    parser.add_argument("--max-executions", type=int, metavar="N", help="budget of replays (baseline included)")
    parser.add_argument("--compare", action="store_true", help="also run loose, strict and strict+closure and compare")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("-o", "--trace-out", metavar="FILE", help="write the minimal run as a trace file here")


def run(args: argparse.Namespace) -> int:
    from otel_agent_trace.minimizer.api import compare, minimize
    from otel_agent_trace.minimizer.trajectory import MinimizeError

    kinds = {}
    for item in args.tool_kind:
        name, sep, kind = item.partition("=")
        if not sep:
            print(f"otel-agent-trace: --tool-kind {item}: expected NAME=KIND", file=sys.stderr)
            return EXIT_UNUSABLE
        kinds[name] = kind
    options = dict(workspace=args.workspace, output=args.output, expect=args.expect, tool_kinds=kinds,
                   time_limit=args.time_limit, harness_timeout=args.harness_timeout,
                   max_executions=args.max_executions)
    try:
        result = minimize(args.trace_file, args.harness, trace_id=args.trace_id, strategy=args.strategy,
                          signature=args.signature, trace_out=args.trace_out, **options)
        compared = compare(result.trajectory, args.harness, signature=args.signature, **options) if args.compare else []
    except MinimizeError as exc:
        print(f"otel-agent-trace: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    for line in result.trajectory.bad_lines:
        print(f"otel-agent-trace: {line}", file=sys.stderr)
    result.source = args.trace_file
    if args.format == "json":
        import orjson

        data = result.as_dict()
        if compared:
            data["compare"] = [_compared(r) for r in compared]
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(render(result, compared))
    return EXIT_BUDGET if result.search.budget_exhausted else EXIT_OK


def _compared(result: Any) -> dict[str, Any]:
    return {"strategy": result.label, "steps": [s.position for s in result.minimal_steps],
            "executions": result.executions, "minimal_signature": result.minimal_signature,
            "reproduced": result.reproduced, "budget_exhausted": result.search.budget_exhausted}


def render(result: Any, compared: list[Any] = ()) -> str:
    search = result.search
    steps = result.trajectory.steps
    lines = [f"run {result.trajectory.trace_id}: {len(steps)} tool steps, failure {search.original}",
             f"strategy {search.strategy}, signature {search.mode}: "
             f"{len(search.minimal)} steps in {result.executions} executions"
             + (" (budget spent: best case so far)" if search.budget_exhausted else ""), ""]
    for step in result.minimal_steps:
        lines.append(f"  step {step.step_index}  {step.tool} {_short(step.arguments)}")
    lines.append("")
    for failure in search.harness_failures:
        lines.append(f"harness failed on steps {list(failure.positions)}: {failure.signature}")
    if not result.reproduced:
        lines.append(f"warning: the minimal case gives {result.minimal_signature}, not {search.original}")
    if compared:
        lines += [f"  {'strategy':<16}{'steps':>6}{'executions':>12}  same failure  signature"]
        for other in compared:
            lines.append(f"  {other.label:<16}{len(other.search.minimal):>6}{other.executions:>12}  "
                         f"{'yes' if other.reproduced else 'NO':<12}  {other.minimal_signature}")
        lines.append("")
    if result.trace_file:
        lines.append(f"minimal run written to {result.trace_file} (trace {result.trace_id})")
    lines.append(f"to keep it as a regression case: {result.save_command()}")
    return "\n".join(lines) + "\n"


def _short(value: Any, limit: int = 100) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit - 3] + "..."
