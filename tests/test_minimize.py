"""`otel-agent-trace minimize` on runs recorded for real (tests/minimize_cases.py): the seed's
7-step case, loose mode's false failure, sandbox isolation, harnesses that crash or hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import minimize_harnesses
from minimize_cases import LOOSE_TRAP, WORDCOUNT, record
from otel_agent_trace.cli import main
from otel_agent_trace.minimizer import MinimizeError, Sandbox, Signature, Step, compare, minimize
from otel_agent_trace.minimizer.signature import same_failure


@pytest.fixture(scope="module")
def wordcount(tmp_path_factory):
    """The seed's 7-step run, recorded once: (trace file, workspace)."""
    return record(WORDCOUNT, tmp_path_factory.mktemp("wordcount"))


@pytest.fixture(scope="module")
def loose_trap(tmp_path_factory):
    return record(LOOSE_TRAP, tmp_path_factory.mktemp("loose_trap"))


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(["minimize", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_seven_step_case_gives_the_two_causal_steps_within_three_executions(wordcount, capsys):
    trace, workspace = wordcount
    code, out, _ = cli(capsys, trace, "--harness", "sandbox", "--workspace", workspace, "--output", "out.json",
                       "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert [(s["tool"], s["arguments"].get("path") or s["arguments"].get("command")) for s in report["minimal_steps"]] \
        == [("write_file", "count.py"), ("run_shell", "python count.py")]
    assert [s["step_index"] for s in report["minimal_steps"]] == [3, 4]
    assert report["executions"] <= 3
    assert report["strategy"] == "ddmin+closure"
    assert report["signature"].startswith("WRONG_OUTPUT(") and report["minimal_signature"] == report["signature"]


def test_strict_ddmin_finds_the_same_two_steps_with_more_executions(wordcount):
    trace, workspace = wordcount
    strict = minimize(trace, strategy="ddmin", workspace=str(workspace), output="out.json")
    closure = minimize(trace, workspace=str(workspace), output="out.json")
    assert [s.position for s in strict.minimal_steps] == [3, 4] == [s.position for s in closure.minimal_steps]
    assert strict.reproduced and closure.reproduced
    assert strict.executions > closure.executions


def test_loose_mode_accepts_a_different_failure_on_the_case_built_for_it(loose_trap):
    trace, workspace = loose_trap
    loose, strict, closure = compare(trace, workspace=str(workspace), output="summary.txt")
    assert loose.label == "loose" and loose.search.mode == "any"
    # loose: the run still "fails" once the script is gone, but for another reason
    assert {s.position for s in loose.minimal_steps} != LOOSE_TRAP.expected
    assert not loose.reproduced
    assert loose.minimal_signature != loose.signature and loose.minimal_signature.split("(")[0] in (
        "NO_OUTPUT", "TOOL_ERROR")
    for right in (strict, closure):  # the same search with signatures finds the real case
        assert {s.position for s in right.minimal_steps} == LOOSE_TRAP.expected and right.reproduced


def test_compare_in_the_text_report(wordcount, capsys):
    trace, workspace = wordcount
    code, out, _ = cli(capsys, trace, "--harness", "sandbox", "--workspace", workspace, "--output", "out.json",
                       "--compare")
    assert code == 0
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip().startswith(("loose ", "strict"))}
    assert rows["loose"][3] == "NO" and rows["strict"][3] == rows["strict+closure"][3] == "yes"
    assert int(rows["strict+closure"][2]) < int(rows["strict"][2])
    assert "otel-agent-trace save " in out and "--expect-signature 'WRONG_OUTPUT(" in out


def step(position: int, tool: str, **arguments) -> Step:
    return Step(position, position, tool, arguments, f"{position:016x}")


def test_each_execution_starts_fresh_and_leaves_the_user_directory_alone(tmp_path, monkeypatch):
    cwd, workspace = tmp_path / "cwd", tmp_path / "workspace"
    cwd.mkdir()
    workspace.mkdir()
    (workspace / "data.txt").write_text("original")
    monkeypatch.chdir(cwd)
    sandbox = Sandbox(str(workspace), output="out.txt")
    first = sandbox([step(0, "write_file", path="leak.txt", content="from the first execution"),
                     step(1, "write_file", path="data.txt", content="changed"),
                     step(2, "run_shell", command="cat leak.txt data.txt > out.txt")])
    assert first.signature.kind == "WRONG_OUTPUT"
    second = sandbox([step(3, "read_file", path="leak.txt")])  # the first execution's file is gone
    assert second.signature == Signature("TOOL_ERROR", "FileNotFoundError: [Errno 2] No such file or directory: 'leak.txt'")
    third = sandbox([step(4, "run_shell", command="cat data.txt > out.txt")])  # the workspace was not changed
    assert third.signature == Signature("WRONG_OUTPUT", _sha("original")[:12])
    assert (workspace / "data.txt").read_text() == "original"
    assert sorted(os.listdir(workspace)) == ["data.txt"]
    assert os.listdir(cwd) == []
    escape = sandbox([step(5, "write_file", path="../outside.txt", content="x")])
    assert escape.signature.detail.startswith("PermissionError")
    assert not (tmp_path / "outside.txt").exists()


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def test_sandbox_environment_is_clean_and_its_python_is_ours(monkeypatch):
    monkeypatch.setenv("OTEL_AGENT_TRACE_FILE", "/tmp/should-not-leak.jsonl")
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    code = "import os, sys; print(sys.prefix == %r, sorted(k for k in os.environ if k.startswith(('OTEL', 'PYTHONPATH'))))"
    outcome = Sandbox()([step(0, "run_shell", command=f'python -c "{code % sys.prefix}"')])
    assert outcome.signature == Sandbox()([step(0, "run_shell", command="echo 'True []'")]).signature


def test_tool_kinds_by_name_and_glob():
    sandbox = Sandbox(tool_kinds={"exec_*": "shell", "scribble": "write"})
    assert [sandbox.kind_of(step(0, name)) for name in ("exec_cmd", "scribble", "read_file", "bash", "lookup_order")] \
        == ["shell", "write", "read", "shell", "noop"]
    outcome = sandbox([step(0, "scribble", path="a.txt", content="hi"), step(1, "exec_cmd", command="cat a.txt")])
    assert outcome.signature == Sandbox()([step(0, "python", code="print('hi', end='')")]).signature
    assert sandbox.pure(step(0, "exec_cmd", command="ls -la | wc -l")) and not sandbox.pure(
        step(0, "exec_cmd", command="ls > listing.txt"))
    with pytest.raises(MinimizeError, match="tool kind"):
        Sandbox(tool_kinds={"x": "teleport"})


def test_sandbox_time_and_output_limits(tmp_path):
    slow = Sandbox(time_limit=0.5)([step(0, "run_shell", command="sleep 5")])
    assert slow.signature == Signature("TOOL_ERROR", "TimeoutError: step ran over 0.5 s")
    loud = Sandbox(output_limit=1000)([step(0, "python", code="print('x' * 100000)")])
    assert loud.signature.kind == "WRONG_OUTPUT"
    # the captured stdout is cut at 1000 bytes
    assert loud.signature == Sandbox()([step(0, "python", code="print('x' * 1000, end='')")]).signature


def test_minimize_never_touches_the_working_directory(wordcount, tmp_path, monkeypatch):
    trace, workspace = wordcount
    before = {p.name: p.read_bytes() for p in Path(workspace).iterdir()}
    monkeypatch.chdir(tmp_path)
    minimize(trace, workspace=str(workspace), output="out.json", strategy="ddmin")
    assert os.listdir(tmp_path) == []
    assert {p.name: p.read_bytes() for p in Path(workspace).iterdir()} == before


def test_a_crashing_or_hanging_harness_is_reported_and_the_search_goes_on(wordcount, capsys, monkeypatch):
    trace, workspace = wordcount
    monkeypatch.setattr(minimize_harnesses, "WORKSPACE", str(workspace))
    monkeypatch.setattr(minimize_harnesses, "OUTPUT", "out.json")
    monkeypatch.setattr(minimize_harnesses, "CRASH_ON", {(0, 1, 2)})
    monkeypatch.setattr(minimize_harnesses, "HANG_ON", {(3,)})
    monkeypatch.setattr(minimize_harnesses, "HANG_SECONDS", 5.0)
    # (the timeout leaves room for a replay of all 7 steps on a busy machine, ~0.5 s alone)
    code, out, err = cli(capsys, trace, "--harness", "minimize_harnesses:flaky", "--strategy", "ddmin",
                         "--harness-timeout", "3", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    failures = {tuple(f["steps"]): f["signature"] for f in report["harness_failures"]}
    assert failures == {(0, 1, 2): "HARNESS_ERROR(RuntimeError: connection to the sandbox host lost)",
                        (3,): "HARNESS_TIMEOUT(no answer after 3 s)"}
    assert [s["step_index"] for s in report["minimal_steps"]] == [3, 4]  # the search went on
    assert report["log"][-1]["steps"] == [4]  # and past the hung candidate
    monkeypatch.setattr(minimize_harnesses, "HANG_ON", set())
    code, out, _ = cli(capsys, trace, "--harness", "minimize_harnesses:flaky", "--strategy", "ddmin")
    assert "harness failed on steps [0, 1, 2]: HARNESS_ERROR(RuntimeError: connection to the sandbox host lost)" in out


def test_a_harness_may_answer_with_text(wordcount, monkeypatch):
    trace, workspace = wordcount
    monkeypatch.setattr(minimize_harnesses, "WORKSPACE", str(workspace))
    monkeypatch.setattr(minimize_harnesses, "OUTPUT", "out.json")
    result = minimize(trace, "minimize_harnesses:as_text")
    assert result.reproduced
    # a harness without `pure()` does not say that `ls` changed nothing, so the `data` edge from the
    # script (it names data.txt, first seen in the listing) keeps `ls` in the closure
    assert [s.position for s in result.minimal_steps] == [0, 3, 4]
    assert result.trajectory.depends[3] == [(0, "data")]


def test_minimal_trace_file_is_analysable(wordcount, tmp_path, capsys):
    from otel_agent_trace.analyzer.analysis import analyze

    trace, workspace = wordcount
    out_file = tmp_path / "minimal.jsonl"
    code, out, _ = cli(capsys, trace, "--harness", "sandbox", "--workspace", workspace, "--output", "out.json",
                       "-o", out_file, "--format", "json")
    assert code == 0
    report = json.loads(out)
    analysis = analyze([str(out_file)])
    assert not analysis.bad_lines and not analysis.unreadable
    [finding] = analysis.findings
    run = finding.run
    assert run.trace_id == report["minimal_trace"]["trace_id"] != report["trace_id"]
    assert run.root.attr("agent_trace.minimized.from_trace") == report["trace_id"]
    assert [t.attr("gen_ai.tool.name") for t in run.tools] == ["write_file", "run_shell"]
    [run_step] = [t for t in run.tools if t.attr("gen_ai.tool.name") == "run_shell"]
    assert run_step.attr("agent_trace.depends_on.relations") == ["decided_by", "resource"]
    assert report["save_command"] == (f"otel-agent-trace save {out_file} --trace-id {run.trace_id} "
                                      f"--expect-signature '{report['signature']}'")
    assert main(["show", run.trace_id[:8], str(out_file)]) == 0


def test_a_file_of_several_runs_needs_trace_id(wordcount, loose_trap, tmp_path, capsys):
    both = tmp_path / "both.jsonl"
    both.write_bytes(Path(wordcount[0]).read_bytes() + Path(loose_trap[0]).read_bytes())
    code, _, err = cli(capsys, both, "--harness", "sandbox")
    assert code == 2 and "2 runs match; choose one with --trace-id" in err
    wanted = json.loads(Path(loose_trap[0]).read_text().splitlines()[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    code, out, err = cli(capsys, both, "--harness", "sandbox", "--trace-id", wanted[:10], "--workspace", loose_trap[1],
                         "--output", "summary.txt", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["trace_id"] == wanted and [s["tool"] for s in report["minimal_steps"]] == ["write_file", "run_shell"]


def test_budget_reports_the_best_case_so_far(wordcount, capsys):
    trace, workspace = wordcount
    code, out, _ = cli(capsys, trace, "--harness", "sandbox", "--workspace", workspace, "--output", "out.json",
                       "--strategy", "ddmin", "--max-executions", "3", "--format", "json")
    assert code == 1
    report = json.loads(out)
    assert report["budget_exhausted"] and report["executions"] == 3
    assert [s["step_index"] for s in report["minimal_steps"]] == [3, 4, 5, 6]  # verified, not yet minimal
    assert report["reproduced"]


def test_unusable_input_exits_2(wordcount, tmp_path, capsys):
    trace, workspace = wordcount
    code, _, err = cli(capsys, tmp_path / "missing.jsonl", "--harness", "sandbox")
    assert code == 2 and "missing.jsonl" in err
    code, _, err = cli(capsys, trace, "--harness", "no_such_module:run")
    assert code == 2 and "cannot import no_such_module" in err
    right = _sha(json.dumps({"cat": 1, "dog.": 1, "end": 1, "saw": 1, "the": 3}, sort_keys=True))
    code, _, err = cli(capsys, trace, "--harness", "sandbox", "--workspace", workspace, "--output", "out.json",
                       "--expect", "0" * 64)
    assert code == 0  # an expectation the output does not meet: still WRONG_OUTPUT
    code, _, err = cli(capsys, trace, "--harness", "sandbox", "--workspace", workspace, "--output", "out.json",
                       "--expect", _sha_of_replay(trace, workspace))
    assert code == 2 and "gives PASS: nothing to minimize" in err
    assert right  # (the correct output would hash differently from the recorded one)
    with pytest.raises(MinimizeError, match="unknown signature mode"):
        minimize(trace, signature="nearly")


def _sha_of_replay(trace, workspace) -> str:
    """The sha256 of out.json after replaying every recorded step."""
    from otel_agent_trace.minimizer.trajectory import load

    sandbox = Sandbox(str(workspace), output="out.json", keep=True)
    sandbox(load(str(trace)).steps)
    data = Path(sandbox.last_root, "work", "out.json").read_bytes()
    import hashlib
    import shutil

    shutil.rmtree(sandbox.last_root)
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("mode, candidate, same", [
    ("exact", Signature("TOOL_ERROR", "KeyError: 'a'"), True),
    ("exact", Signature("TOOL_ERROR", "KeyError: 'b'"), False),
    ("error", Signature("TOOL_ERROR", "KeyError: 'b'"), True),
    ("error", Signature("TOOL_ERROR", "ValueError: 'a'"), False),
    ("output", Signature("TOOL_ERROR", "ValueError: 'a'"), True),
    ("any", Signature("NO_OUTPUT"), True),
    ("any", Signature("PASS"), False),
    ("any", Signature("HARNESS_ERROR", "OSError: x"), False),
])
def test_signature_modes(mode, candidate, same):
    assert same_failure(Signature("TOOL_ERROR", "KeyError: 'a'"), candidate, mode) is same


def test_signature_text_round_trips():
    assert Signature.parse("WRONG_OUTPUT(969a12dd4967)") == Signature("WRONG_OUTPUT", "969a12dd4967")
    assert Signature.parse("DB_STATE(rows=3)") == Signature("DB_STATE", "rows=3")  # a harness's own kind
    assert str(Signature.parse("NO_OUTPUT")) == "NO_OUTPUT"
    with pytest.raises(ValueError):
        Signature.parse("no output")


def test_minimize_is_exported_lazily():
    code = ("import sys, otel_agent_trace\n"
            "assert 'otel_agent_trace.minimizer' not in sys.modules\n"
            "from otel_agent_trace.minimizer.api import minimize\n"
            "assert otel_agent_trace.minimize is minimize\n"
            "assert not any(m.startswith('otel_agent_trace.recorder') for m in sys.modules), 'recorder imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True)
