"""`otel-agent-trace`: the command line.

`analyze FILE... [--format text|json]`. Exit codes: 0 every input read; 1 some lines were bad
(the rest was still analysed); 2 unusable arguments or an unreadable file.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

import orjson

EXIT_OK, EXIT_BAD_LINES, EXIT_UNUSABLE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="otel-agent-trace", description="Debug LLM agents from their traces.")
    sub = parser.add_subparsers(dest="command", required=True)
    analyze = sub.add_parser("analyze", help="find where each failed run's error originated")
    analyze.add_argument("paths", nargs="+", metavar="FILE", help="OTLP JSON Lines files, directories or globs")
    analyze.add_argument("--format", choices=("text", "json"), default="text")
    analyze.add_argument("--output", "-o", help="write the report here instead of stdout")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse: 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if args.command == "analyze":
        return _analyze(args)
    return EXIT_UNUSABLE


def _analyze(args: argparse.Namespace) -> int:
    from otel_agent_trace.analyzer.analysis import analyze

    analysis = analyze(args.paths)
    if args.format == "json":
        from otel_agent_trace.analyzer.report.json_report import to_dict

        text = orjson.dumps(to_dict(analysis), option=orjson.OPT_INDENT_2).decode() + "\n"
    else:
        from otel_agent_trace.analyzer.report.text import render

        text = render(analysis)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    for item in analysis.inputs:
        if item.error:
            print(f"otel-agent-trace: {item.path}: {item.error}", file=sys.stderr)
        for bad in item.bad_lines:
            print(f"otel-agent-trace: {item.path}:{bad.line}: {bad.reason}", file=sys.stderr)
    if analysis.unreadable:
        return EXIT_UNUSABLE
    return EXIT_BAD_LINES if analysis.bad_lines else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
