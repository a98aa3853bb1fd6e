"""Failing coding-agent runs for `minimize`, recorded for real: the `openai` client against the
scripted model server, the agent loop of scenario_agent.py, and decorated file/shell tools that
act on a real directory, under the instrumentor with the `agent_trace_file` exporter.

Each Case is one task: the workspace it starts from, the model's scripted tool calls (the bug is
in one of them), the output file the failure shows in (or None: the failing step's error), and
the positions of the tool steps a correct minimal case holds. Shared by tests/test_minimize.py
and bench/bench_minimize.py.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scenario_agent import call, run_loop, schema_for


@dataclass
class Case:
    name: str
    task: str  # the user message (the scripted server's key)
    turns: list[dict[str, Any]]
    expected: set[int]  # positions of the causal tool steps
    output: str | None = None
    workspace: dict[str, str] = field(default_factory=dict)
    shape: str = ""


def agent_tools(root: Path) -> dict[str, Any]:
    """The agent's real tools, acting in `root`, declared to the recorder (reads=/writes=)."""
    import otel_agent_trace

    path_env = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", os.defpath)

    @otel_agent_trace.tool(writes="path")
    def write_file(path: str, content: str) -> str:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        return "ok"

    @otel_agent_trace.tool(reads="path")
    def read_file(path: str) -> str:
        return (root / path).read_text()

    @otel_agent_trace.tool
    def run_shell(command: str) -> dict[str, Any]:
        done = subprocess.run(command, shell=True, cwd=root, capture_output=True, text=True, timeout=30,
                              env={**os.environ, "PATH": path_env})
        if done.returncode:
            return {"exit_code": done.returncode, "error": done.stderr.strip().splitlines()[-1:] or ["failed"]}
        return {"exit_code": 0, "stdout": done.stdout}

    @otel_agent_trace.tool
    def python(code: str) -> dict[str, Any]:
        return run_shell.__wrapped__(f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}")

    return {"write_file": write_file, "read_file": read_file, "run_shell": run_shell, "python": python}


SCHEMAS = [
    schema_for("write_file", {"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"]),
    schema_for("read_file", {"path": {"type": "string"}}, ["path"]),
    schema_for("run_shell", {"command": {"type": "string"}}, ["command"]),
    schema_for("python", {"code": {"type": "string"}}, ["code"]),
]


def record(case: Case, directory: Path) -> tuple[Path, Path]:
    """Run `case`'s agent under the recorder; returns (trace file, workspace it started from)."""
    import openai
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    import otel_agent_trace
    from otel_agent_trace.exporter import AgentTraceFileExporter
    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    workspace, agent_dir = directory / f"{case.name}-workspace", directory / f"{case.name}-agent"
    for folder in (workspace, agent_dir):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    for name, text in case.workspace.items():
        (workspace / name).write_text(text)
    shutil.copytree(workspace, agent_dir, dirs_exist_ok=True)
    trace = directory / f"{case.name}.jsonl"
    trace.unlink(missing_ok=True)
    provider = TracerProvider(resource=Resource.create({"service.name": "coding-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(str(trace))))
    instrumentor = otel_agent_trace.AgentTraceInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
    instrumentor.instrument(tracer_provider=provider)
    turns = case.turns + [{"content": "Done."}]
    try:
        with ScriptedOpenAIServer({case.task: turns}) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
            with otel_agent_trace.agent_run(case.name):
                run_loop(client, case.task, agent_tools(agent_dir), schemas=SCHEMAS,
                         system="You are a coding agent working in a project directory.")
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    return trace, workspace


# --- the cases ------------------------------------------------------------------------------------
COUNT_PY = ("import collections, json\nwords = open('data.txt').read().split()\n"
            "json.dump(collections.Counter(words), open('out.json', 'w'), sort_keys=True)\n")

WORDCOUNT = Case("wordcount", "Compute the word counts of data.txt into out.json", [
    call("run_shell", command="ls"),
    call("write_file", path="scratch.txt", content="thinking about the task"),
    call("read_file", path="data.txt"),
    call("write_file", path="count.py", content=COUNT_PY),  # the bug: no lower()
    call("run_shell", command="python count.py"),
    call("write_file", path="notes.md", content="Counting words for the report."),
    call("read_file", path="out.json"),
], expected={3, 4}, output="out.json", workspace={"data.txt": "The cat saw the dog. the end\n"},
    shape="seed 004: script + run, noise around")

TWO_WRITERS = Case("two_writers", "Total the price list with tax into total.txt", [
    call("write_file", path="config.json", content='{"tax": 0.2}'),
    call("run_shell", command="ls"),
    call("write_file", path="report.py", content=(
        "import json, sys\ntax = json.load(open(sys.argv[1]))['tax']\n"
        "total = sum(float(line.split(',')[1]) for line in open('prices.csv') if line.strip())\n"
        "open('total.txt', 'w').write('%.2f' % (total * (1 + tax)))\n")),
    call("write_file", path="notes.md", content="Tax is applied on top of the prices."),
    call("write_file", path="config.json", content='{"tax": 20}'),  # the bug: a percentage, not a rate
    call("run_shell", command="python report.py config.json"),
    call("read_file", path="total.txt"),
], expected={2, 4, 5}, output="total.txt", workspace={"prices.csv": "apple,3\npear,5\n"},
    shape="two writers of one file: only the last counts")

TWO_INPUTS = Case("two_inputs", "Merge a.csv and b.csv into merged.csv", [
    call("write_file", path="a.csv", content="x\n1\n2\n"),
    call("write_file", path="b.csv", content="x\n3\n4\n"),
    call("read_file", path="a.csv"),
    call("write_file", path="merge.py", content=(
        "import sys\nrows = []\nfor name in sys.argv[1:3]:\n"
        "    rows += open(name).read().splitlines()[1:-1]\n"  # the bug: drops each file's last row
        "open('merged.csv', 'w').write('x\\n' + '\\n'.join(rows) + '\\n')\n")),
    call("write_file", path="scratch.txt", content="merge then check"),
    call("run_shell", command="python merge.py a.csv b.csv"),
], expected={0, 1, 3, 5}, output="merged.csv", shape="a script reading two inputs")

LATE_CRASH = Case("late_crash", "Filter input.txt by the threshold in settings.json", [
    call("write_file", path="settings.json", content='{"threshold": "high"}'),  # the bug: not a number
    call("run_shell", command="ls"),
    call("write_file", path="filter.py", content=(
        "import json\nlimit = json.load(open('settings.json'))['threshold']\n"
        "values = [int(v) for v in open('input.txt').read().split()]\n"
        "kept = ' '.join(str(v) for v in values if v > limit)\nopen('filtered.txt', 'w').write(kept)\n")),
    call("write_file", path="notes.md", content="Keep the values above the threshold."),
    call("read_file", path="input.txt"),
    call("run_shell", command="python filter.py settings.json"),
], expected={0, 2, 5}, output="filtered.txt", workspace={"input.txt": "5 2 7 3\n"},
    shape="a failing step whose cause is 5 steps earlier")

AVERAGE = Case("average", "Average the numbers of data.txt into avg.txt", [
    call("run_shell", command="ls"),
    call("read_file", path="data.txt"),
    call("python", code=("nums = [int(v) for v in open('data.txt').read().split()]\n"
                         "open('avg.txt', 'w').write(str(sum(nums) // len(nums)))\n")),  # the bug: //
    call("write_file", path="notes.md", content="The average goes to avg.txt."),
], expected={2}, output="avg.txt", workspace={"data.txt": "1 2 4\n"}, shape="one python step is the whole case")

BAD_DATA = Case("bad_data", "Compute the mean of values.txt into mean.txt", [
    call("run_shell", command="ls"),
    call("write_file", path="stats.py", content=(
        "import sys\nvals = [float(v) for v in open(sys.argv[1]).read().split()]\n"
        "open('mean.txt', 'w').write('%.3f' % (sum(vals) / len(vals)))\n")),
    call("write_file", path="values.txt", content="1\n2\n3\n3\n"),  # the bug: a duplicated row
    call("read_file", path="values.txt"),
    call("run_shell", command="python stats.py values.txt"),
    call("write_file", path="summary.md", content="The mean is in mean.txt."),
], expected={1, 2, 4}, output="mean.txt", shape="the script is right, the data the agent wrote is not")

HIDDEN_FILE = Case("hidden_file", "Sum the generated numbers into sum.txt", [
    call("write_file", path="gen.py", content="open('nums.txt', 'w').write(' '.join(str(i) for i in range(1, 5)))\n"),
    call("run_shell", command="python gen.py"),  # writes nums.txt: no recorded writer
    call("write_file", path="sum.py", content=(
        "import sys\nopen('sum.txt', 'w').write(str(sum(int(v) for v in open(sys.argv[1]).read().split())))\n")),
    call("run_shell", command="ls"),
    call("run_shell", command="python sum.py nums.txt"),
], expected={0, 1, 2, 4}, output="sum.txt", shape="a file written by a script: no recorded writer, no edge")

REWRITTEN = Case("rewritten", "Clean raw.txt into clean.txt", [
    call("write_file", path="clean.py", content="open('clean.txt', 'w').write(open('raw.txt').read().strip().lower())\n"),
    call("run_shell", command="python clean.py"),
    call("write_file", path="clean.py", content="open('clean.txt', 'w').write(open('raw.txt').read().strip('. '))\n"),
    call("run_shell", command="python clean.py"),  # the regression: the second version forgets lower()
    call("read_file", path="clean.txt"),
], expected={2, 3}, output="clean.txt", workspace={"raw.txt": " Hello World. \n"},
    shape="the script written twice, run twice: the last pair is the case")

LONG_NOISE = Case("long_noise", "Count the lines of log.txt into lines.txt", [
    call("run_shell", command="ls"),
    call("read_file", path="log.txt"),
    call("write_file", path="plan.md", content="read, count, write"),
    call("run_shell", command="wc -l log.txt"),
    call("write_file", path="scratch.txt", content="wc counts newlines"),
    call("read_file", path="plan.md"),
    call("write_file", path="todo.md", content="count lines"),
    call("write_file", path="lines.py", content=(
        "open('lines.txt', 'w').write(str(len(open('log.txt').read().split('\\n'))))\n")),  # the bug: +1
    call("write_file", path="notes.md", content="lines.txt holds the count"),
    call("run_shell", command="python lines.py"),
    call("read_file", path="lines.txt"),
    call("run_shell", command="ls"),
], expected={7, 9}, output="lines.txt", workspace={"log.txt": "a\nb\nc\n"}, shape="12 steps, 10 of them noise")

WRONG_FLAG = Case("wrong_flag", "Convert temps.txt to fahrenheit into converted.txt", [
    call("write_file", path="convert.py", content=(
        "import sys\nto_f = sys.argv[2] == '--fahrenheit'\nvals = [float(v) for v in open(sys.argv[1]).read().split()]\n"
        "out = [v * 9 / 5 + 32 if to_f else v for v in vals]\n"
        "open('converted.txt', 'w').write(' '.join('%.1f' % v for v in out))\n")),
    call("read_file", path="temps.txt"),
    call("write_file", path="notes.md", content="convert with the flag"),
    call("run_shell", command="python convert.py temps.txt --celsius"),  # the bug: the model's argument
], expected={0, 3}, output="converted.txt", workspace={"temps.txt": "0 100\n"},
    shape="a model-decision bug: the wrong flag in the command")

CRASH_IMPORT = Case("crash_import", "Plot the data with a script", [
    call("run_shell", command="ls"),
    call("write_file", path="plot.py", content="import numpyy\nprint('plotted')\n"),  # the bug: a typo
    call("write_file", path="notes.md", content="plot.py draws the chart"),
    call("run_shell", command="python plot.py"),
    call("write_file", path="scratch.txt", content="try again later"),
], expected={1, 3}, output=None, shape="TOOL_ERROR from the run, no output file declared")

SHADOWED_DATA = Case("shadowed_data", "Aggregate data.csv with cfg.json into agg.txt", [
    call("write_file", path="data.csv", content="k,v\na,1\n"),  # the bug: overwrote the input, rows lost
    call("run_shell", command="ls"),
    call("write_file", path="cfg.json", content='{"column": 1}'),
    call("write_file", path="agg.py", content=(
        "import json, sys\ncol = json.load(open(sys.argv[2]))['column']\n"
        "rows = [line.split(',') for line in open(sys.argv[1]).read().split()[1:]]\n"
        "open('agg.txt', 'w').write(str(sum(int(r[col]) for r in rows)))\n")),
    call("read_file", path="data.csv"),
    call("run_shell", command="python agg.py data.csv cfg.json"),
], expected={0, 2, 3, 5}, output="agg.txt", workspace={"data.csv": "k,v\na,1\nb,2\nc,3\n"},
    shape="the agent overwrote a workspace input; the script needs it, its config and itself")

# not one of the 12: three steps where a noise step fails on its own once its writer is gone,
# so "still failing?" (loose mode) accepts it as the minimal case
LOOSE_TRAP = Case("loose_trap", "Summarize sales.txt into summary.txt", [
    call("write_file", path="summary.py", content="open('summary.txt', 'w').write(open('sales.txt').read().upper())\n"),
    call("run_shell", command="python summary.py"),  # the bug: upper() where the task wanted a total
    call("read_file", path="summary.txt"),
], expected={0, 1}, output="summary.txt", workspace={"sales.txt": "north 3\nsouth 4\n"},
    shape="built for loose mode's false failure")

CASES = [WORDCOUNT, TWO_WRITERS, TWO_INPUTS, LATE_CRASH, AVERAGE, BAD_DATA, HIDDEN_FILE, REWRITTEN, LONG_NOISE,
         WRONG_FLAG, CRASH_IMPORT, SHADOWED_DATA]

