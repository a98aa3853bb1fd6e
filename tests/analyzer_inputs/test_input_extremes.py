"""Extreme inputs (issue 18): a huge attribute, a trace of very many spans, deep nesting, parent
cycles, duplicate span ids across files. The CLI runs as a subprocess under a timeout (a hang
fails the test) and its peak RSS is read from the kernel.

Short versions here; `OTEL_AGENT_TRACE_LONG_TESTS=1` runs the documented long ones (a 100 MB
attribute, a 1,000,000-span trace; docs/reliability.md has their figures).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import orjson
from inputs_support import failing_run, line, span

LONG = os.environ.get("OTEL_AGENT_TRACE_LONG_TESTS") == "1"
ATTRIBUTE_MB = 100 if LONG else 8
TRACE_SPANS = 1_000_000 if LONG else 20_000


def cli(*args: str, timeout: float = 600) -> tuple[int, dict, str, float, float]:
    """(exit code, JSON report, stderr, seconds, peak RSS MB of the CLI process)."""
    # VmHWM, not ru_maxrss: on Linux the latter keeps the forking process's peak across exec
    script = ("import sys\nfrom otel_agent_trace.cli import main\ncode = main(sys.argv[1:])\n"
              "hwm = [ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('VmHWM:')][0]\n"
              "sys.stderr.write('\\nPEAK_RSS_KB %s\\n' % hwm)\n"
              "sys.exit(code)\n")
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script, "analyze", "--format", "json", *args],
                          capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - t0
    rss = next(int(ln.split()[1]) for ln in done.stderr.splitlines() if ln.startswith("PEAK_RSS_KB"))
    return done.returncode, json.loads(done.stdout), done.stderr, seconds, rss / 1024


def test_a_huge_attribute_is_truncated_and_reported_and_the_trace_analysed(tmp_path):
    spans = failing_run(0)
    spans[0]["attributes"].append({"key": "blob", "value": {"stringValue": "x" * (ATTRIBUTE_MB << 20)}})
    path = tmp_path / "huge.jsonl"
    path.write_text(line(spans) + line(failing_run(1)))
    code, report, err, seconds, rss = cli(str(path))
    assert code == 1, err[-2000:]
    reasons = [b["reason"] for b in report["inputs"][0]["bad_lines"]]
    assert any(f"attribute 'blob' is {ATTRIBUTE_MB << 20} characters; truncated" in r for r in reasons), reasons
    runs = {r["trace_id"]: r for r in report["runs"]}
    assert runs[f"{1:032x}"]["origin"]["span_id"] == f"{1:08x}{3:08x}" and runs[f"{2:032x}"]["status"] == "failed"
    assert rss < 300 + 12 * ATTRIBUTE_MB, rss  # a few copies of the line at most
    print(f"\n{ATTRIBUTE_MB} MB attribute: {seconds:.1f} s, peak RSS {rss:.0f} MB")


def test_a_trace_of_very_many_spans(tmp_path):
    """One run with TRACE_SPANS tool spans under 1000-span lines: read, analysed, in bounded time."""
    path = tmp_path / "big.jsonl"
    t = f"{7:032x}"
    with path.open("wb") as f:
        root = span(t, f"{7:08x}{1:08x}", None, "invoke_agent big", 0, {"gen_ai.operation.name": "invoke_agent"}, status=2)
        batch = [root]
        for i in range(TRACE_SPANS - 1):
            sid = f"{7:08x}{i + 2:08x}"
            batch.append(span(t, sid, root["spanId"], "execute_tool lookup", 1 + i % 1000,
                              {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                               "agent_trace.tool.outcome": "ok"}))
            if len(batch) == 1000:
                f.write(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": batch}]}]}) + b"\n")
                batch = []
        f.write(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": batch}]}]}) + b"\n")
    code, report, err, seconds, rss = cli(str(path), timeout=3600)
    assert code == 0, err[-2000:]  # every line read
    assert report["inputs"][0]["spans"] == TRACE_SPANS and report["inputs"][0]["bad_lines"] == []
    assert [r["trace_id"] for r in report["runs"]] == [t] and report["runs"][0]["status"] == "failed"
    print(f"\n{TRACE_SPANS} spans in one trace: {seconds:.1f} s, peak RSS {rss:.0f} MB")


def test_deep_nesting_is_reported_with_line_and_reason(tmp_path):
    deep_value = '{"stringValue":"x"}'
    for _ in range(200):  # valid JSON, 200 nested kvlists in one attribute: read
        deep_value = '{"kvlistValue":{"values":[{"key":"k","value":' + deep_value + '}]}}'
    readable = line(failing_run(1)).replace('"attributes": [', '"attributes": [{"key": "deep", "value": ' + deep_value + '}, ', 1)
    path = tmp_path / "deep.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n"                      # 1: 100k nested arrays
                    + '{"resourceSpans":' + "[" * 5000 + "]" * 5000 + "}\n"   # 2: deep where spans belong
                    + readable + line(failing_run(0)))
    code, report, err, _, _ = cli(str(path))
    assert code == 1
    bad = {b["line"]: b["reason"] for b in report["inputs"][0]["bad_lines"]}
    assert set(bad) == {1, 2} and all("depth limit exceeded" in r for r in bad.values()), bad
    assert f"{path}:1: invalid JSON" in err
    assert sorted(r["trace_id"] for r in report["runs"]) == [f"{1:032x}", f"{2:032x}"]


def test_parent_cycles_are_reported_and_read_as_roots(tmp_path):
    t = f"{9:032x}"
    cycle = [span(t, "00000009000000a1", "00000009000000a2", "a", 1), span(t, "00000009000000a2", "00000009000000a1", "b", 2),
             span(t, "00000009000000a3", "00000009000000a3", "self", 3)]
    path = tmp_path / "cycle.jsonl"
    path.write_text(line(cycle) + line(failing_run(0)))
    code, report, err, seconds, _ = cli(str(path))
    assert code == 0  # warnings do not change the exit code
    reasons = [(w["line"], w["reason"]) for w in report["inputs"][0]["warnings"]]
    assert (1, f"parent cycle through span 00000009000000a2 in trace {t}; read as a root") in reasons
    assert (1, "span 00000009000000a3 is its own parent; read as a root") in reasons
    assert report["runs"][0]["origin"]["span_id"] == f"{1:08x}{3:08x}"


def test_duplicate_span_ids_across_files_are_reported_with_the_first_place(tmp_path):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(line(failing_run(0)))
    second.write_text(line(failing_run(0)) + line(failing_run(1)))
    code, report, err, _, _ = cli(str(first), str(second))
    assert code == 1
    assert report["inputs"][0]["bad_lines"] == []
    reasons = [(b["line"], b["reason"]) for b in report["inputs"][1]["bad_lines"]]
    assert len(reasons) == 4 and all(n == 1 and r.startswith("duplicate span id ") and f"(first at {first}:1); dropped" in r
                                     for n, r in reasons), reasons
    assert sorted(r["trace_id"] for r in report["runs"]) == [f"{1:032x}", f"{2:032x}"]
