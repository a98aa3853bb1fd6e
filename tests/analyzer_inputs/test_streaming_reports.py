"""The CLI's streaming path (findings reduced as they come) gives the same reports as analyze()."""

from __future__ import annotations

import json

from inputs_support import failing_run, healthy_run, line, span

from otel_agent_trace.analyzer.analysis import analyze
from otel_agent_trace.analyzer.report.reduce import analyze_reduced
from otel_agent_trace.analyzer.enrich import apply_rules
from otel_agent_trace.analyzer.report import fleet, html, markdown, text
from otel_agent_trace.analyzer.report.fleet import DETAIL_ALL_RUNS, EXAMPLES_PER_GROUP
from otel_agent_trace.analyzer.report.json_report import to_dict
from otel_agent_trace.analyzer.critical_rules import Rule, load_rules
from otel_agent_trace.cli import main as cli_main


def _file(tmp_path):
    ok = [dict(s, status={}) for s in failing_run(2)]
    orphan = span(f"{1:032x}", "00000001000000ff", "00000001deadbeef", "orphan", 9)
    path = tmp_path / "t.jsonl"
    path.write_text(line(failing_run(0)) + line(failing_run(1)[:3]) + line(failing_run(1)[3:] + [orphan]) + line(ok))
    return str(path)


def test_reduced_reports_equal_full_reports(tmp_path):
    path = _file(tmp_path)
    full, reduced = analyze([path]), analyze_reduced([path], html=True)
    prices = {"gpt-4o-mini": {"input_per_mtok": 1, "output_per_mtok": 2}}
    assert to_dict(reduced, prices) == to_dict(full, prices)
    data = to_dict(full)
    assert data["inputs"][0]["warnings"] and data["inputs"][0]["warnings"][0].keys() == {"line", "reason"}
    assert html.render(reduced, to_dict(reduced)) == html.render(full, data)
    assert markdown.render(reduced) == markdown.render(full)
    assert text.render(reduced) == text.render(full)


def test_json_written_from_encoded_entries_is_the_report_of_the_dicts(tmp_path):
    """`--format json` encodes each run's entry where the run was found (`encode_entry`) and
    writes the report around them: the bytes `orjson.dumps(to_dict(...), OPT_INDENT_2)` gives,
    to a file and to stdout, with strings that JSON escapes (newline, quote, backslash, non-ASCII)."""
    import subprocess
    import sys

    import orjson

    odd = failing_run(3)
    odd[-1] = dict(odd[-1], attributes=[a if a["key"] != "gen_ai.agent.name" else
                                        {"key": a["key"], "value": {"stringValue": 'sup\nport "ü" \\ \u2028'}}
                                        for a in odd[-1]["attributes"]])
    path = tmp_path / "odd.jsonl"
    path.write_text(open(_file(tmp_path)).read() + line(odd))
    expected = orjson.dumps(to_dict(analyze([str(path)])), option=orjson.OPT_INDENT_2) + b"\n"
    assert b'sup\\nport \\"\xc3\xbc\\"' in expected  # the odd name is in, escaped
    reduced = analyze_reduced([str(path)], encoded=True)
    assert all(r.data is None and r.entry for r in reduced.runs)
    assert orjson.dumps(to_dict(reduced), option=orjson.OPT_INDENT_2) + b"\n" == expected
    out = tmp_path / "r.json"
    assert cli_main(["analyze", str(path), "--format", "json", "-o", str(out)]) == 0
    assert out.read_bytes() == expected
    piped = subprocess.run([sys.executable, "-m", "otel_agent_trace.cli", "analyze", str(path), "--format", "json"],
                           capture_output=True, check=True)
    assert piped.stdout == expected
    assert to_dict(analyze_reduced([str(tmp_path / "none.jsonl")], encoded=True))["runs"] == []


def test_rules_applied_while_streaming_equal_apply_rules(tmp_path):
    path = _file(tmp_path)
    rules = load_rules(None) + [Rule("ANY_STEP", "a step ran", {"span_name": "agent_step*"})]
    full = apply_rules(analyze([path]), rules)
    assert to_dict(analyze_reduced([path], rules=rules)) == to_dict(full)


def test_cli_json_lists_warnings(tmp_path, capsys):
    path = _file(tmp_path)
    assert cli_main(["analyze", path, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert any("orphan" in w["reason"] for w in report["inputs"][0]["warnings"])


def _fleet_file(tmp_path):
    """More runs than a report details: 40 failed, DETAIL_ALL_RUNS healthy."""
    failing = list(range(0, 40))
    healthy = list(range(40, 40 + DETAIL_ALL_RUNS))
    path = tmp_path / "fleet.jsonl"
    path.write_text("".join([line(failing_run(n)) for n in failing] + [line(healthy_run(n)) for n in healthy]))
    return path, failing


def test_a_fleet_report_groups_failures_and_shows_examples(tmp_path):
    """Past fleet.DETAIL_ALL_RUNS runs, failed runs are grouped by signature: every one is listed,
    EXAMPLES_PER_GROUP of each group get a full section, healthy runs none; streaming and batch
    render the same page."""
    import re

    path, failing = _fleet_file(tmp_path)
    full, reduced = analyze([str(path)]), analyze_reduced([str(path)], html=True)
    page = html.render(reduced, to_dict(reduced))
    assert page == html.render(full, to_dict(full))
    data = to_dict(full)
    failed = [r for r in data["runs"] if r["status"] == "failed"]
    assert len(failed) == len(failing) and len(data["runs"]) > DETAIL_ALL_RUNS
    assert "Failure groups" in page
    groups = {fleet.signature(r) for r in failed}
    sections = re.findall(r"<section class='run (\w+)' id='run-(\w+)-(\w+)'", page)
    assert len(sections) == min(EXAMPLES_PER_GROUP, len(failed)) * len(groups)
    assert {kind for kind, *_ in sections} == {"failed"}
    assert all(r["trace_id"] in page for r in failed)  # every failed run is listed


def test_a_fleet_on_the_terminal_groups_failures_and_counts_healthy_runs(tmp_path):
    """The terminal report of a fleet: every failed run named once, EXAMPLES_PER_GROUP of each
    group as a full table, healthy runs only counted; streaming and batch print the same."""
    path, failing = _fleet_file(tmp_path)
    full, reduced = analyze([str(path)]), analyze_reduced([str(path)])
    out = text.render(full)
    assert out == text.render(reduced)
    data = to_dict(full)
    failed = [r for r in data["runs"] if r["status"] == "failed"]
    healthy = [r for r in data["runs"] if r["status"] != "failed"]
    groups = fleet.failure_groups(data["runs"])
    assert len(failed) == len(failing) and len(groups) >= 1
    assert all(out.count(f"trace {r['trace_id']} ") == 1 for r in failed)  # each failed run once
    assert not any(f"trace {r['trace_id']} " in out for r in healthy)
    assert out.count("  critical : ") == sum(min(EXAMPLES_PER_GROUP, len(m)) for m in groups.values())
    assert out.count("\n== ") == len(groups)
    assert f"{len(healthy)} run(s) ok, not listed" in out
    page = markdown.render(full)  # Markdown: one table of failed runs per group, examples detailed
    assert page == markdown.render(reduced)
    assert all(page.count(f"`{r['trace_id']}`") == 1 + (fleet.run_key(r) in fleet.examples(groups)) for r in failed)
    assert not any(r["trace_id"] in page for r in healthy)
    assert page.count("### Failed run ") == len(fleet.examples(groups))


def test_a_small_report_shows_every_run(tmp_path):
    path = _file(tmp_path)
    reduced = analyze_reduced([path], html=True)
    page = html.render(reduced, to_dict(reduced))
    assert "Failure groups" not in page
    assert page.count("<section class='run ") == len(to_dict(reduced)["runs"])


def test_show_analyses_only_the_trace_asked_for(tmp_path, capsys):
    """`show` reads every input but analyses only the traces with that id prefix: the same run."""
    path = _file(tmp_path)
    full = to_dict(analyze([path]))
    wanted = full["runs"][1]["trace_id"]
    only = to_dict(analyze([path], trace_prefix=wanted.upper()))
    assert [r["trace_id"] for r in only["runs"]] == [wanted]
    assert only["runs"][0] == full["runs"][1]
    assert only["inputs"][0]["spans"] == full["inputs"][0]["spans"]  # everything was still read
    assert cli_main(["show", wanted, path]) == 0
    out = capsys.readouterr().out
    assert wanted in out and all(r["trace_id"] not in out for r in full["runs"] if r["trace_id"] != wanted)
