"""The pytest plugin, run in a subprocess on a regression set saved from recorded runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from demo_traces import record_demo_tickets

from otel_agent_trace.cli import main as cli_main


@pytest.fixture
def cases(tmp_path, demo_server, capsys):
    path = record_demo_tickets(tmp_path / "traces.jsonl", demo_server.base_url)
    cli_main(["analyze", "--format", "json", str(path)])
    runs = json.loads(capsys.readouterr().out)["runs"]
    directory = tmp_path / "cases"
    for run, tier, name in ((runs[0], "regular", "refund-ok"), (runs[1], "core", "refund-empty-lookup"),
                            (runs[3], "explore", "shipping-loop")):
        assert cli_main(["save", run["trace_id"], str(path), "--to", str(directory), "--tier", tier, "--name", name]) == 0
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"assert": {"no_unhandled_tool_error": True}}))
    return directory, rules


# plugins of the test venv that have nothing to do with ours (ours, and xdist's, load from their
# entry points as a user's do): importing them is most of each run's 2 s start (langsmith 0.8 s,
# hypothesis 0.7 s), paid again by each xdist worker
UNRELATED_PLUGINS = ("langsmith_plugin", "hypothesispytest", "benchmark", "anyio")


def pytest_run(cwd, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PYTEST_"))}
    unrelated = [arg for name in UNRELATED_PLUGINS for arg in ("-p", f"no:{name}")]
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *unrelated, "-rA", *map(str, args)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_each_case_is_a_test_with_a_readable_failure_and_junit_names(tmp_path, cases):
    directory, rules = cases
    junit = tmp_path / "junit.xml"
    run = pytest_run(tmp_path, "--agent-traces", directory, "--agent-traces-rules", rules, "--junitxml", junit)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "case refund-empty-lookup [core]: tool lookup_order returned [] at step 0" in run.stdout
    assert "1 failed, 1 passed, 1 xfailed" in run.stdout
    names = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert set(names) == {"refund-ok", "refund-empty-lookup", "shipping-loop"}
    assert {c.get("classname") for c in names.values()} == {"agent-traces"}
    failure = names["refund-empty-lookup"].find("failure")
    assert failure is not None and "tool lookup_order returned [] at step 0" in failure.get("message", "") + (failure.text or "")
    assert names["refund-ok"].find("failure") is None


def test_k_selects_cases_and_x_stops_at_the_first_failure(tmp_path, cases):
    directory, rules = cases
    only_ok = pytest_run(tmp_path, "--agent-traces", directory, "--agent-traces-rules", rules, "-k", "refund-ok")
    assert only_ok.returncode == 0 and "1 passed, 2 deselected" in only_ok.stdout, only_ok.stdout
    by_tier = pytest_run(tmp_path, "--agent-traces", directory, "--agent-traces-rules", rules, "-k", "core")
    assert by_tier.returncode == 1 and "1 failed, 2 deselected" in by_tier.stdout, by_tier.stdout
    stop = pytest_run(tmp_path, "--agent-traces", directory, "--agent-traces-rules", rules, "-x", "-k", "not explore")
    assert stop.returncode == 1 and "1 failed" in stop.stdout and "passed" not in stop.stdout.splitlines()[-1], stop.stdout


def test_an_unusable_set_is_a_usage_error(tmp_path):
    run = pytest_run(tmp_path, "--agent-traces", tmp_path / "missing")
    assert run.returncode == 4 and "--agent-traces:" in run.stderr and "not a directory" in run.stderr


def test_under_xdist_the_cases_are_distributed_and_judged_alike(tmp_path, cases):
    """`-n 2`: each worker collects the same items from the set; the controller's report and
    JUnit XML are those of a plain run."""
    directory, rules = cases
    junit = tmp_path / "junit-xdist.xml"
    run = pytest_run(tmp_path, "-n", "2", "--agent-traces", directory, "--agent-traces-rules", rules,
                     "--junitxml", junit)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "2 workers [3 items]" in run.stdout, run.stdout
    assert "case refund-empty-lookup [core]: tool lookup_order returned [] at step 0" in run.stdout
    assert "1 failed, 1 passed, 1 xfailed" in run.stdout
    names = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert set(names) == {"refund-ok", "refund-empty-lookup", "shipping-loop"}
    assert names["refund-empty-lookup"].find("failure") is not None and names["refund-ok"].find("failure") is None
    # -k still selects under xdist
    only_core = pytest_run(tmp_path, "-n", "2", "--agent-traces", directory, "--agent-traces-rules", rules, "-k", "core")
    assert only_core.returncode == 1 and "1 failed" in only_core.stdout and "passed" not in only_core.stdout.splitlines()[-1], \
        only_core.stdout
