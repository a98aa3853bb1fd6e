"""Outputs: coloured/plain terminal table, Markdown, self-contained HTML, and the `show` replay."""

from __future__ import annotations

import re

from otel_agent_trace.cli import main as cli_main


def run_cli(capsys, *args):
    code = cli_main([*map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_text_plain_unless_asked_and_coloured_when_asked(demo, capsys):
    code, plain, _ = run_cli(capsys, "analyze", demo)  # captured stdout is not a terminal
    assert code == 0 and "\x1b[" not in plain
    assert "origin   : step 0 execute_tool lookup_order  tool_empty_result" in plain
    assert re.search(r"steps/run mean 3\.8 p50 3 p95 6; loop aborts 25%", plain)
    assert "[RUN_EXCEPTION]" in plain and "confidence 0.81" in plain
    _, coloured, _ = run_cli(capsys, "analyze", "--color", "always", demo)
    assert "\x1b[31;1mFAILED\x1b[0m" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain


def test_markdown_report(demo, capsys):
    code, md, _ = run_cli(capsys, "analyze", "--format", "md", demo)
    assert code == 0
    assert md.startswith("# Agent trace analysis")
    assert "| steps per run (mean / p50 / p95) | 3.75 / 3 / 6 |" in md
    assert "| `lookup_order` | 2 | 1 | 50.0% |" in md
    assert "| origin | step 0 execute_tool lookup_order | tool_empty_result | consumes |" in md
    assert md.count("### Failed run") == 2


def test_html_is_self_contained(demo, tmp_path, capsys):
    out = tmp_path / "r.html"
    code, _, _ = run_cli(capsys, "analyze", "--format", "html", "-o", out, demo)
    assert code == 0
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not re.search(r"""(src|href)\s*=\s*['"]?(https?:)?//""", page), "no network resources"
    assert "@import" not in page and "url(http" not in page
    assert page.count("aria-label='dependency graph'") == 4 and page.count("aria-label='timeline'") == 4
    assert page.count("marker-end='url(#ac)'") == 4 + 7  # chain edges highlighted: 4 hops + 7 hops
    assert "Step-by-step replay" in page


def test_show_replays_each_step(demo, capsys):
    _, data, _ = run_cli(capsys, "analyze", "--format", "json", demo)
    import json

    runs = json.loads(data)["runs"]
    trace = runs[1]["trace_id"]
    code, out, _ = run_cli(capsys, "show", trace[:10], demo)
    assert code == 0
    assert f"trace {trace}" in out and "FAILED" in out
    assert "* step 0  tool_call" in out
    assert "decision: -> lookup_order(" in out
    assert "result: []  outcome=empty_result  phase=origin [tool_empty_result]" in out
    assert "+ user: Please process a refund" in out
    assert "step 2  final  phase=propagate" in out
    assert "critical: invoke_agent handle_ticket [run_exception] MissingRefundAmount" in out


def test_show_unknown_trace_exit_2(demo, capsys):
    code, _, err = run_cli(capsys, "show", "ffffffff", demo)
    assert code == 2 and "no run with trace id" in err
