"""`otel-agent-trace save` and `otel-agent-trace regress` (exit codes: 0 pass / saved, 1 a tier
gate failed, 2 unusable input)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

EXIT_FAILED, EXIT_UNUSABLE = 1, 2


def add_parsers(sub: Any) -> None:
    save = sub.add_parser("save", help="keep one recorded run as a case of a regression set")
    save.add_argument("trace_id", metavar="TRACE_ID", help="the run's trace id (a unique prefix is enough)")
    save.add_argument("files", metavar="FILE", nargs="+", help="trace files holding the run")
    save.add_argument("--to", required=True, metavar="DIR", help="the regression set's directory")
    save.add_argument("--tier", default="regular", choices=("core", "regular", "explore"))
    save.add_argument("--name", help="the case's name (default: status, origin tool and trace id)")
    regress = sub.add_parser("regress", help="check a regression set's cases (and new runs against them)")
    regress.add_argument("directory", metavar="DIR")
    regress.add_argument("--rules", help="team rules and assertions (JSON, or YAML with PyYAML)")
    regress.add_argument("--against", nargs="+", metavar="NEW_TRACES", help="new runs of the same tasks")


def run(args: argparse.Namespace) -> int:
    from otel_agent_trace.regress.cases import RegressError, save
    from otel_agent_trace.regress.check import regress, render

    try:
        if args.command == "save":
            case = save(args.trace_id, args.files, args.to, args.tier, args.name)
            status = case.meta["finding"]["status"]
            print(f"saved {case.name} [{case.tier}] ({status}) to {case.directory}")
            return 0
        summary = regress(args.directory, args.rules, args.against)
    except RegressError as exc:
        print(f"otel-agent-trace {args.command}: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    print(render(summary))
    return 0 if summary.gates_ok else EXIT_FAILED
