"""Are the analyzer's reports byte-identical to a saved reference? (a check run around speed work)

    python bench/check_report_identity.py save DIR [--src SRC]   # reports of the code under SRC (default: this tree)
    python bench/check_report_identity.py compare DIR            # this tree's reports against DIR's

Reports checked: JSON and text of a 20 MB file of our span shape (bench/gen_otlp_file.py, made
once next to DIR), with one process and with two (`--jobs 2`: the chunked path), and JSON of TRAIL
GAIA (../shared/benchmarks/trail-gaia). Each is the CLI's own output file, compared byte for byte;
exit 1 names the reports that differ. SRC lets the reference come from an older commit exported
with `git archive COMMIT src | tar -x -C TMP` (run with TMP/src first on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIL = os.path.join(HERE, "..", "..", "shared", "benchmarks", "trail-gaia", "traces.jsonl.gz")
if not os.path.exists(TRAIL):
    TRAIL = "/work/shared/benchmarks/trail-gaia/traces.jsonl.gz"
# the report names its input: one path from every checkout (a git worktree's relative path differs)
TRAIL = os.path.realpath(TRAIL)


SHAPE_MB = 20.0  # --smoke: 0.3


def cases(directory: str) -> dict[str, list[str]]:
    shape = os.path.join(os.path.dirname(os.path.abspath(directory)), f"identity-{SHAPE_MB:g}mb.jsonl")
    if not os.path.exists(shape):
        subprocess.run([sys.executable, os.path.join(HERE, "gen_otlp_file.py"), "--mb", str(SHAPE_MB), shape], check=True)
    return {
        "shape20.json": [shape, "--format", "json", "--jobs", "1"],
        "shape20.txt": [shape, "--format", "text", "--jobs", "1", "--color", "never"],
        "shape20-jobs2.json": [shape, "--format", "json", "--jobs", "2"],
        "trail.json": [TRAIL, "--format", "json", "--jobs", "1"],
    }


def write_reports(directory: str, src: str | None) -> None:
    os.makedirs(directory, exist_ok=True)
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    for name, argv in cases(directory).items():
        out = os.path.join(directory, name)
        proc = subprocess.run([sys.executable, "-m", "otel_agent_trace.cli", "analyze", *argv, "-o", out,
                               "--progress", "never"], env=env)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{name}: analyze exited {proc.returncode}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["save", "compare"])
    parser.add_argument("directory")
    parser.add_argument("--src")
    parser.add_argument("--smoke", action="store_true", help="the test suite's run: a 0.3 MB shape file")
    args = parser.parse_args()
    if args.smoke:
        global SHAPE_MB
        SHAPE_MB = 0.3
    if args.mode == "save":
        write_reports(args.directory, args.src)
        return 0
    fresh = args.directory.rstrip("/") + ".now"
    write_reports(fresh, None)
    differ = []
    for name in cases(args.directory):
        with open(os.path.join(args.directory, name), "rb") as a, open(os.path.join(fresh, name), "rb") as b:
            ref, now = a.read(), b.read()
        print(f"{name}: {'identical' if ref == now else 'DIFFERENT'} ({len(ref)} / {len(now)} bytes)")
        if ref != now:
            differ.append(name)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
