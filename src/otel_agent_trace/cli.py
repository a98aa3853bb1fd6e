"""`otel-agent-trace`: the command line.

`analyze FILE... [--format text|json|md|html] [--rules FILE]`, `show TRACE_ID FILE...`,
`minimize TRACE_FILE --harness sandbox|module:function` (minimizer/command.py),
`serve --listen HOST:PORT --findings PATH` (serve/command.py). Exit codes: 0 every input read; 1 some lines were bad
(the rest was still analysed); 2 unusable arguments or an unreadable file.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

import orjson

EXIT_OK, EXIT_BAD_LINES, EXIT_UNUSABLE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="otel-agent-trace", description="Debug LLM agents from their traces.")
    sub = parser.add_subparsers(dest="command", required=True)
    analyze = sub.add_parser("analyze", help="find where each failed run's error originated")
    analyze.add_argument("paths", nargs="*", metavar="FILE",
                         help="OTLP JSON (Lines; .gz, .zst), Jaeger JSON: files, directories or globs")
    _input_options(analyze)
    analyze.add_argument("--format", choices=("text", "json", "md", "html"), default="text")
    analyze.add_argument("--output", "-o", help="write the report here instead of stdout")
    analyze.add_argument("--rules", help="critical-failure rules (JSON, or YAML with PyYAML), added to the built-ins")
    analyze.add_argument("--expected", metavar="FILE",
                         help="expected answers, JSON Lines of {\"input\"|\"task_id\"|\"trace_id\": ..., \"answer\": ...}: "
                              "a run whose final answer differs is failed (wrong_answer)")
    analyze.add_argument("--all-failed", action="store_true",
                         help="every run in the input is known to have failed (an eval's or a benchmark's failures): "
                              "each is reported failed, with the places most likely to hold its mistake")
    analyze.add_argument("--budget-usd", type=float, metavar="USD",
                         help="a run's cost budget: summary.metrics.reliability.cost_within_budget (needs prices)")
    analyze.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                         help="ANSI colour in the text report (auto: when stdout is a terminal)")
    analyze.add_argument("--jobs", "-j", type=int, default=0, metavar="N",
                         help="worker processes for large plain inputs (0, the default: one per core; 1: none)")
    from otel_agent_trace.analyzer.judge.command import add_options as add_judge

    add_judge(analyze)
    analyze.add_argument("--engine", choices=("local", "dask"), default="local",
                         help="dask: the analysis on a Dask cluster (extra [dask]; --jobs: LocalCluster workers)")
    analyze.add_argument("--scheduler", metavar="ADDRESS", help="--engine dask: the scheduler (default: a LocalCluster)")
    show = sub.add_parser("show", help="replay one run step by step (context delta, decision, tools, phase)")
    show.add_argument("trace_id", metavar="TRACE_ID", help="trace id (a unique prefix is enough)")
    show.add_argument("paths", nargs="*", metavar="FILE", help="OTLP JSON Lines files, directories or globs")
    _input_options(show)
    show.add_argument("--rules", help="critical-failure rules file")
    show.add_argument("--all-failed", action="store_true", help="every run in the input is known to have failed")
    show.add_argument("--expected", metavar="FILE", help="expected answers (JSON Lines), as for analyze")
    show.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    from otel_agent_trace.minimizer.command import add_parser as add_minimize

    add_minimize(sub)
    from otel_agent_trace.regress.command import add_parsers as add_regress

    add_regress(sub)
    from otel_agent_trace.serve.command import add_parser as add_serve

    add_serve(sub)
    return parser


def _input_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("remote inputs and reading")
    group.add_argument("--jaeger", metavar="URL", help="fetch traces from a Jaeger query service (needs --service)")
    group.add_argument("--service", help="the Jaeger service whose traces to fetch")
    group.add_argument("--tempo", metavar="URL", help="fetch traces from Tempo (with --traceql)")
    group.add_argument("--traceql", default="{ status = error }", help="TraceQL query for --tempo")
    group.add_argument("--lookback", default="1h", help="how far back to fetch (30m, 1h, 2d; default 1h)")
    group.add_argument("--limit", type=int, default=100, help="at most this many traces per fetch (default 100)")
    group.add_argument("--memory-budget", type=int, default=256, metavar="MB",
                       help="JSON read between spills of pending traces to a temporary file (default 256)")
    group.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                       help="progress bar on stderr (auto: on a terminal, for inputs over 2 s)")


def _read_inputs(args: argparse.Namespace, streaming: bool = False, rules: list | None = None,
                 trace_prefix: str | None = None, judge: Any = None):
    """analyze() over the files and remote sources of `args`; None (after a message) when unusable.

    `streaming`: analyze_reduced() instead (findings reduced as they come; `rules` applied then;
    `judge`: its verdicts written into the runs' entries, in one process).
    `trace_prefix`: only the traces whose id starts with it are analysed (`show`)."""
    from otel_agent_trace.analyzer.analysis import analyze
    from otel_agent_trace.analyzer.inputs import Progress, Remote, expand
    from otel_agent_trace.analyzer.report.reduce import analyze_reduced

    remotes = []
    if args.jaeger:
        if not args.service:
            print("otel-agent-trace: --jaeger needs --service", file=sys.stderr)
            return None
        remotes.append(Remote("jaeger", args.jaeger, service=args.service, lookback=args.lookback, limit=args.limit))
    if args.tempo:
        remotes.append(Remote("tempo", args.tempo, traceql=args.traceql,
                              lookback=args.lookback if args.lookback != "1h" else None, limit=args.limit))
    if args.jaeger or args.tempo:
        from otel_agent_trace.analyzer.readers.remote import parse_duration

        try:
            parse_duration(args.lookback)
        except ValueError as exc:
            print(f"otel-agent-trace: {exc}", file=sys.stderr)
            return None
    if not args.paths and not remotes:
        print("otel-agent-trace: give input files, --jaeger URL --service S, or --tempo URL", file=sys.stderr)
        return None
    import os

    total = sum(os.path.getsize(p) for p in expand(args.paths) if os.path.isfile(p))
    progress = Progress(total, enabled=None if args.progress == "auto" else args.progress == "always")
    budget = max(args.memory_budget, 1) * 1024 * 1024
    if streaming and getattr(args, "engine", "local") == "dask":
        return _dask_inputs(args, rules, remotes)
    if streaming:
        form = getattr(args, "format", None)
        return analyze_reduced(args.paths, remotes, budget_bytes=budget, progress=progress, rules=rules,
                               html=form == "html", encoded=form == "json" and judge is None,
                               jobs=1 if judge is not None else args.jobs or _cores(),
                               wrap=judge.wrap if judge is not None else None)
    return analyze(args.paths, remotes, budget_bytes=budget, progress=progress, trace_prefix=trace_prefix)


def _dask_inputs(args: argparse.Namespace, rules: list | None, remotes: list):
    """`analyze --engine dask` (analyzer/engines/dask.py); None (after a message) when unusable."""
    from otel_agent_trace.analyzer.engines import dask as dask_engine
    from otel_agent_trace.analyzer.report.reduce import reducer

    if remotes or args.format == "html":
        print("otel-agent-trace: --engine dask reads files, for the text, json and md reports", file=sys.stderr)
        return None
    try:
        return dask_engine.analyze_reduced(args.paths, rules, reducer(encoded=args.format == "json"),
                                           args.scheduler, args.jobs or None)
    except dask_engine.DaskMissing as exc:
        print(f"otel-agent-trace: {exc}", file=sys.stderr)
        return None


def _cores() -> int:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse: 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if args.command == "analyze":
        return _analyze(args)
    if args.command == "show":
        return _show(args)
    if args.command == "minimize":
        from otel_agent_trace.minimizer.command import run as run_minimize

        return run_minimize(args)
    if args.command == "serve":
        from otel_agent_trace.serve.command import run as run_serve

        return run_serve(args)
    if args.command in ("save", "regress"):
        from otel_agent_trace.regress.command import run as run_regress

        return run_regress(args)
    return EXIT_UNUSABLE


def _color(args: argparse.Namespace) -> bool:
    import os

    if args.color == "auto":
        return sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    return args.color == "always"


def _rules(args: argparse.Namespace) -> tuple[list | None, dict] | None:
    """(rules: the built-ins, the evaluations' source, the --rules file's and the verdict sources
    asked for; team config); None (after a message) when unusable."""
    from otel_agent_trace.analyzer.critical_rules import RulesError, load_config, load_rules

    try:
        rules, config = load_rules(getattr(args, "rules", None)), load_config(getattr(args, "rules", None))
    except RulesError as exc:
        print(f"otel-agent-trace: {exc}", file=sys.stderr)
        return None
    if getattr(args, "all_failed", False):  # a verdict from outside: analyzer/verdicts.py
        from otel_agent_trace.analyzer.verdicts import AllFailed

        rules = [*rules, AllFailed()]
    if getattr(args, "expected", None):  # answers known from outside: analyzer/expected.py
        from otel_agent_trace.analyzer.expected import ExpectedAnswers, ExpectedError

        try:
            source = ExpectedAnswers.load(args.expected)
        except ExpectedError as exc:
            print(f"otel-agent-trace: {exc}", file=sys.stderr)
            return None
        for problem in source.problems:
            print(f"otel-agent-trace: {problem}", file=sys.stderr)
        args.expected_problems = len(source.problems)
        rules = [*rules, source]
    return rules, config


def _exit_code(analysis: Any, args: argparse.Namespace | None = None) -> int:
    """0 every input read; 1 some lines bad (the rest analysed; the --expected file's too); 2 an
    unreadable input."""
    bad = analysis.bad_lines or getattr(args, "expected_problems", 0)
    return EXIT_UNUSABLE if analysis.unreadable else EXIT_BAD_LINES if bad else EXIT_OK


def _show(args: argparse.Namespace) -> int:
    from otel_agent_trace.analyzer.enrich import apply_rules
    from otel_agent_trace.analyzer.show import render as render_replay

    loaded = _rules(args)
    if loaded is None:
        return EXIT_UNUSABLE
    rules, _ = loaded
    wanted = args.trace_id.lower()
    analysis = _read_inputs(args, trace_prefix=wanted)  # the other traces are not analysed
    if analysis is None:
        return EXIT_UNUSABLE
    if rules is not None:
        apply_rules(analysis, rules)
    found = [f for f in analysis.findings if f.run.trace_id.startswith(wanted)]
    if not found:
        print(f"otel-agent-trace: no run with trace id {args.trace_id} in the inputs", file=sys.stderr)
        return EXIT_UNUSABLE
    sys.stdout.write("\n".join(render_replay(f, color=_color(args)) for f in found))
    return _exit_code(analysis, args)


def _analyze(args: argparse.Namespace) -> int:
    loaded = _rules(args)
    if loaded is None:
        return EXIT_UNUSABLE
    rules, config = loaded
    prices = config.get("prices") if isinstance(config.get("prices"), dict) else None
    judge = None
    if args.judge:  # (without --judge nothing of the judge is imported, nothing is sent)
        from otel_agent_trace.analyzer.judge.command import start as start_judge

        judge = start_judge(args, prices)
        if judge is None:
            return EXIT_UNUSABLE
    # streaming: each finding is reduced to what the report needs as it comes (memory bounded by
    # the budget and the largest trace, not the file); --rules are applied while locating
    analysis = _read_inputs(args, streaming=True, rules=rules, judge=judge)
    if analysis is None:
        return EXIT_UNUSABLE
    from otel_agent_trace.analyzer.report.json_report import to_dict

    data = to_dict(analysis, prices, args.budget_usd)
    if judge is not None:
        data["judge"] = judge.summary()
    if args.format == "json":
        text: str | bytes = orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"
    elif args.format == "md":
        from otel_agent_trace.analyzer.report.markdown import render as render_md

        text = render_md(analysis, data)
    elif args.format == "html":
        from otel_agent_trace.analyzer.report.html import render as render_html

        text = render_html(analysis, data)
    else:
        from otel_agent_trace.analyzer.report.text import render

        text = render(analysis, color=_color(args) and not args.output, data=data)
    if judge is not None and args.format in ("text", "md"):
        text += f"\n{judge.line()}\n"
    _write(text, args.output)
    if judge is not None:
        print(f"otel-agent-trace: {judge.line()}", file=sys.stderr)
    for item in analysis.inputs:
        if item.error:
            print(f"otel-agent-trace: {item.path}: {item.error}", file=sys.stderr)
        for bad in item.bad_lines:
            print(f"otel-agent-trace: {item.path}:{bad.line}: {bad.reason}", file=sys.stderr)
        for note in item.warnings:
            print(f"otel-agent-trace: {item.path}:{note.line}: warning: {note.reason}", file=sys.stderr)
    return _exit_code(analysis, args)


def _write(text: str | bytes, path: str | None) -> None:
    """The report to `path` or stdout. The JSON report comes as UTF-8 bytes, written as they are:
    to stdout's binary buffer when it has one (a replaced stdout may have none)."""
    if path:
        with open(path, "wb") as handle:
            handle.write(text if isinstance(text, bytes) else text.encode("utf-8"))
    elif isinstance(text, bytes) and getattr(sys.stdout, "buffer", None) is not None:
        sys.stdout.flush()  # (what was written before goes first)
        sys.stdout.buffer.write(text)
    else:
        sys.stdout.write(text if isinstance(text, str) else text.decode("utf-8"))


def run() -> int:
    """The console script: `main` in a process that ends with it. The cyclic collector stays off
    (the analysis holds no cycles, see `inputs.no_gc`): turning it back on after the analysis
    would cost one collection over everything still held, ~0.1 s on 200 MB. `analyze` and `show`
    then end the process at once (`_exit_now`)."""
    import gc

    gc.disable()
    argv = sys.argv[1:]
    code = main(argv)
    if argv[:1] in (["analyze"], ["show"]):
        _exit_now(code)
    return code


def _exit_now(code: int) -> None:
    """Ends the process without the interpreter's teardown, which frees every report object one
    by one (~0.1 s after 200 MB). Safe for the reading commands only: their output is written and
    flushed here, their workers joined and their files closed, and they record nothing (no
    exporter or atexit work to lose)."""
    import os

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(run())
