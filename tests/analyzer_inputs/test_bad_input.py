"""Bad input: every problem reported with file, line and reason; every readable trace analysed;
never a crash (hypothesis fuzzes lines and whole files)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inputs_support import failing_run, ids, line, span

from otel_agent_trace.analyzer.analysis import analyze
from otel_agent_trace.analyzer.readers import otlp_values
from otel_agent_trace.cli import main as cli_main

GOOD = failing_run(0)
T = f"{1:032x}"


def test_each_kind_of_bad_input_is_reported_with_line_and_reason(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(otlp_values, "MAX_ATTRIBUTE_CHARS", 1000)  # a "100 MB" attribute, scaled down
    other = failing_run(1)
    wrong_types = dict(other[0], startTimeUnixNano={"x": 1})
    wrong_types["attributes"] = wrong_types["attributes"] + [{"key": "n", "value": {"intValue": "abc"}}]
    unknown_enum = dict(other[1], status={"code": 7}, kind="SPAN_KIND_WEIRD")
    huge = span(f"{2:032x}", "00000002000000aa", other[3]["spanId"], "huge", 5, {"blob": "x" * 5000})
    duplicate = dict(GOOD[1], name="agent_step 0 (again)")
    orphan = span(T, "00000001000000ff", "00000001deadbeef", "orphan", 9)
    cycle_a = span(T, "00000001000000a1", None, "a", 9, {"agent_trace.depends_on": ["00000001000000a2"]})
    cycle_b = span(T, "00000001000000a2", None, "b", 9, {"agent_trace.depends_on": ["00000001000000a1"]})
    lines = [
        line(GOOD)[:-40].encode() + b"\n",                             # 1 truncated line
        line(GOOD).encode(),                                            # 2 good
        line([wrong_types]).encode(),                                   # 3 wrong types: fields and attribute
        line([unknown_enum] + other[2:]).encode(),                      # 4 unknown enum values
        line([huge]).encode(),                                          # 5 huge attribute
        line([duplicate, orphan, cycle_a, cycle_b]).encode(),           # 6 duplicate id, orphan, link cycle
        line([span(T, "00000001000000b1", None, "caf\xe9", 9)]).encode().replace("caf\\u00e9".encode(), b"caf\xe9"),  # 7 not UTF-8
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [42, {"traceId": 5}]}]}]}\n',  # 8 spans of wrong types
    ]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(lines))
    assert cli_main(["analyze", "--format", "json", str(path)]) == 1
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    bad = {(b["line"], b["reason"]) for b in report["inputs"][0]["bad_lines"]}
    reasons = " | ".join(f'{b["line"]}: {b["reason"]}' for b in report["inputs"][0]["bad_lines"])
    assert any(n == 1 and r.startswith("invalid JSON") for n, r in bad), reasons
    assert any(n == 3 and "startTimeUnixNano" in r for n, r in bad), reasons
    assert "attribute 'n' dropped" in reasons
    assert "5: span 00000002000000aa: attribute 'blob' is 5000 characters; truncated to 1000" in reasons
    assert any(n == 6 and r.startswith("duplicate span id 0000000100000002") for n, r in bad), reasons
    assert any(n == 7 and r.startswith("not valid UTF-8 at byte") for n, r in bad), reasons
    assert any(n == 8 and "span is int" in r for n, r in bad) and any(n == 8 and "span dropped" in r for n, r in bad)
    warnings = [(w.line, w.reason) for w in analyze([str(path)]).inputs[0].warnings]
    assert any(n == 4 and "unknown status code 7" in r for n, r in warnings)
    assert any(n == 4 and "unknown span kind 'SPAN_KIND_WEIRD'" in r for n, r in warnings)
    assert any(n == 6 and r.startswith("orphan span 00000001000000ff") for n, r in warnings)
    assert any(n == 6 and r.startswith("dependency cycle") for n, r in warnings)
    assert f"{path}:1: invalid JSON" in captured.err and f"{path}:6: warning: orphan span" in captured.err
    runs = {r["trace_id"]: r for r in report["runs"]}
    assert runs[T]["origin"]["span_id"] == ids(0)["tool"]  # the readable trace is still analysed
    assert runs[f"{2:032x}"]["status"] == "failed"


def test_missing_file_exit_2_others_analysed(tmp_path, capsys):
    good = tmp_path / "good.jsonl"
    good.write_text(line(GOOD))
    assert cli_main(["analyze", "--format", "json", str(tmp_path / "nope.jsonl"), str(good)]) == 2
    report = json.loads(capsys.readouterr().out)
    assert "cannot read" in report["inputs"][0]["error"] and report["summary"]["failed_runs"] == 1


def test_no_input_at_all_is_a_usage_error(capsys):
    assert cli_main(["analyze"]) == 2
    assert "give input files" in capsys.readouterr().err


def test_text_that_looks_like_zstd_frames_is_read_as_lines(tmp_path):
    # a length and the zstd magic at bytes 4-8 (the Collector's framed files) that do not decompress
    path = tmp_path / "framed-lookalike.jsonl"
    path.write_bytes(b"\x00\x00\x00\n(\xb5/\xfd\n" + line(GOOD).encode())
    analysis = analyze([str(path)])
    assert [f.run.trace_id for f in analysis.findings] == [T]
    assert [b.line for b in analysis.inputs[0].bad_lines] == [1, 2]


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(
                         ["traceId", "spanId", "parentSpanId", "name", "attributes", "key", "value", "stringValue",
                          "intValue", "arrayValue", "values", "status", "code", "events", "links", "kind",
                          "startTimeUnixNano", "resourceSpans", "scopeSpans", "spans", "resource", "data"]), inner,
                         max_size=5), max_leaves=20)


def _mutate(draw_bytes: bytes, position: int, base: bytes) -> bytes:
    position %= max(len(base), 1)
    return base[:position] + draw_bytes + base[position + len(draw_bytes):]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(garbage=st.lists(st.one_of(_json.map(lambda v: json.dumps(v).encode()), st.binary(max_size=40)), max_size=4),
       flip=st.tuples(st.binary(min_size=1, max_size=6), st.integers(min_value=0)))
def test_fuzz_never_crashes_and_keeps_good_traces(tmp_path, garbage, flip):
    good = line(GOOD).encode()
    mutated = _mutate(flip[0], flip[1], line(failing_run(1)).encode())
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(b"\n".join(g.replace(b"\n", b" ") for g in garbage) + b"\n" + good + mutated + b"\n")
    analysis = analyze([str(path)])
    assert analysis.inputs[0].error is None
    found = {f.run.trace_id: f for f in analysis.findings}
    assert found[T].origin is not None and found[T].origin.span_id == ids(0)["tool"]


def test_invalid_utf8_in_fields_the_analyzer_skips_is_reported_and_the_trace_kept(tmp_path, capsys):
    """The typed fast path skips ignored fields (`traceState`) and unknown keys unchecked: bad bytes
    there were read with no report (found by the long fuzz run, issue 18)."""
    ignored = [dict(s) for s in GOOD]
    ignored[0]["traceState"] = "k=v"
    unknown = [dict(s) for s in failing_run(1)]
    unknown[0]["vendorField"] = "v"
    lines = [line(ignored).encode().replace(b'"k=v"', b'"k=\xed\xa0\x80"'),
             line(unknown).encode().replace(b'"vendorField": "v"', b'"vendorField": "\xff"').replace(
                 b'"vendorField":"v"', b'"vendorField":"\xff"')]
    assert all(b"\xed" in ln or b"\xff" in ln for ln in lines)  # the bad bytes are in place
    path = tmp_path / "skipped-fields.jsonl"
    path.write_bytes(b"".join(lines))
    assert cli_main(["analyze", "--format", "json", str(path)]) == 1
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    bad = {b["line"]: b["reason"] for b in report["inputs"][0]["bad_lines"]}
    assert set(bad) == {1, 2} and all(r.startswith("not valid UTF-8 at byte") for r in bad.values()), bad
    assert f"{path}:1: not valid UTF-8" in captured.err
    runs = {r["trace_id"]: r for r in report["runs"]}
    assert runs[T]["origin"]["span_id"] == ids(0)["tool"]  # both traces still analysed
    assert runs[f"{2:032x}"]["status"] == "failed"


def test_the_console_script_ends_at_once_with_all_its_output_and_its_exit_code(tmp_path, capsys):
    """`cli.run` ends `analyze` and `show` with os._exit (no teardown): a piped stdout (block
    buffered), the warnings on stderr and the exit code must all still be what `main` gives."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout buffered, as usual
    records = [line(failing_run(n)) for n in range(40)] + ["{not json\n"]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(records))
    assert cli_main(["analyze", "--format", "json", str(path)]) == 1
    expected = capsys.readouterr()
    script = [sys.executable, "-c", "import sys; from otel_agent_trace.cli import run; sys.exit(run())"]
    done = subprocess.run(script + ["analyze", "--format", "json", str(path)], capture_output=True, text=True,
                          env=env)
    assert done.returncode == 1
    assert done.stdout == expected.out and len(done.stdout) > 1 << 16  # more than one pipe buffer
    assert done.stderr == expected.err and f"{path}:41: invalid JSON" in done.stderr
    trace = json.loads(expected.out)["runs"][0]["trace_id"]
    shown = subprocess.run(script + ["show", trace, str(path), "--color", "never"], capture_output=True, text=True,
                           env=env)
    assert shown.returncode == cli_main(["show", trace, str(path), "--color", "never"])
    assert shown.stdout == capsys.readouterr().out and trace in shown.stdout and len(shown.stdout) < 1 << 13
