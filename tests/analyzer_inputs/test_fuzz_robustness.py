"""Analyzer input robustness (issue 18): a seeded byte-level mutator over real trace files, and
hypothesis strategies over the OTLP JSON shape, through the CLI (`analyze --format json`).

The promises, checked on every case:
- no crash (the CLI returns 0 or 1, the input is readable) and no hang (each case under an alarm);
- every line the mutator made unparsable is reported with its file, line number and a reason;
- every trace no mutated line touches is analysed exactly as in the clean file.

Short here (MUTATIONS cases per source); `OTEL_AGENT_TRACE_LONG_TESTS=1` runs 300 cases per source and
also mutates the first 10 TRAIL GAIA records of /work/shared/benchmarks when present (docs/reliability.md).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import signal
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inputs_support import failing_run, healthy_run, line

from otel_agent_trace.cli import main as cli_main

LONG = os.environ.get("OTEL_AGENT_TRACE_LONG_TESTS") == "1"
MUTATIONS = 300 if LONG else 80
CASE_SECONDS = 20  # a case that takes longer is a hang
TRAIL = Path("/work/shared/benchmarks/trail-gaia/traces.jsonl.gz")


class Hang(Exception):
    pass


def _on_alarm(signum, frame):
    raise Hang(f"analysis took more than {CASE_SECONDS} s")


def analyze_json(path: Path) -> tuple[int, dict, str]:
    """(exit code, JSON report, stderr) of `otel-agent-trace analyze --format json path`, under an alarm."""
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(CASE_SECONDS)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = cli_main(["analyze", "--format", "json", str(path)])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return code, json.loads(out.getvalue()), err.getvalue()


def _trace_ids(raw: bytes) -> set[str]:
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return set()
    return {s.get("traceId") for rs in doc.get("resourceSpans", []) for ss in rs.get("scopeSpans", [])
            for s in ss.get("spans", []) if isinstance(s, dict)}


# --- the mutator ----------------------------------------------------------------------------------
def mutate_line(rnd: random.Random, raw: bytes) -> bytes:
    """One seeded byte-level mutation of a line (without its newline)."""
    op = rnd.randrange(8)
    n = len(raw)
    at = rnd.randrange(max(n, 1))
    if op == 0:  # flip bits
        b = bytearray(raw)
        for _ in range(rnd.randint(1, 8)):
            i = rnd.randrange(max(n, 1))
            if i < n:
                b[i] ^= 1 << rnd.randrange(8)
        return bytes(b).replace(b"\n", b" ")
    if op == 1:  # truncate
        return raw[:at]
    if op == 2:  # delete a range
        return raw[:at] + raw[at + rnd.randint(1, 64):]
    if op == 3:  # insert random bytes
        return raw[:at] + rnd.randbytes(rnd.randint(1, 16)).replace(b"\n", b" ") + raw[at:]
    if op == 4:  # replace a JSON token with another type
        return raw[:at] + rnd.choice([b"null", b"{}", b"[]", b'"x"', b"-1e999", b"18446744073709551617", b"true"]) + raw[at + rnd.randint(0, 12):]
    if op == 5:  # invalid UTF-8
        return raw[:at] + rnd.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]) + raw[at:]
    if op == 6:  # swap two bytes far apart
        b = bytearray(raw)
        j = rnd.randrange(max(n, 1))
        if at < n and j < n:
            b[at], b[j] = b[j], b[at]
        return bytes(b)
    return raw[:at] + b"\x00" * rnd.randint(1, 4) + raw[at:]  # NUL bytes


def mutate_file(rnd: random.Random, lines: list[bytes]) -> tuple[list[bytes], set[int]]:
    """Mutate 1-3 lines (and sometimes duplicate or drop one); returns the lines and the 1-based
    numbers of the mutated ones in the new file."""
    out = list(lines)
    touched: set[int] = set()
    for _ in range(rnd.randint(1, 3)):
        i = rnd.randrange(len(out))
        out[i] = mutate_line(rnd, out[i])
        touched.add(i)
    return out, {i + 1 for i in touched}


def _sources(tmp: Path, demo_lines: list[bytes]) -> dict[str, list[bytes]]:
    synthetic = [line(failing_run(i) if i % 2 else healthy_run(i)).encode().rstrip(b"\n") for i in range(8)]
    sources = {"demo": demo_lines, "synthetic": synthetic}
    if LONG and TRAIL.exists():  # real OpenInference traces: the first 10 records (~7 MB)
        with gzip.open(TRAIL, "rb") as f:
            sources["trail-gaia"] = [ln.rstrip(b"\n") for _, ln in zip(range(10), f) if ln.strip()]
    return sources


@pytest.fixture(scope="module")
def demo_lines(tmp_path_factory, demo_server):
    from demo_traces import record_demo_tickets

    path = record_demo_tickets(tmp_path_factory.mktemp("demo") / "traces.jsonl", demo_server.base_url)
    return [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]


def test_mutated_real_files_never_crash_report_every_bad_line_and_keep_intact_traces(tmp_path, demo_lines):
    rnd = random.Random(18)
    cases = bad_total = intact_total = 0
    for name, lines in _sources(tmp_path, demo_lines).items():
        clean = tmp_path / f"{name}.jsonl"
        clean.write_bytes(b"\n".join(lines) + b"\n")
        code, report, _ = analyze_json(clean)
        assert code in (0, 1) and report["inputs"][0]["bad_lines"] == []
        clean_runs = {r["trace_id"]: r for r in report["runs"]}
        for k in range(MUTATIONS):
            mutated, touched = mutate_file(rnd, lines)
            path = tmp_path / f"{name}-{k}.jsonl"
            path.write_bytes(b"\n".join(mutated) + b"\n")
            code, report, err = analyze_json(path)
            cases += 1
            assert code in (0, 1, 2), (name, k, code)
            inp = report["inputs"][0]
            assert inp.get("error") is None, (name, k, inp.get("error"))
            reported = {b["line"]: b["reason"] for b in inp["bad_lines"]}
            for n in touched:
                raw = mutated[n - 1]
                try:  # the grammar's judge: strict UTF-8, then JSON (a lone surrogate escape is valid JSON)
                    json.loads(raw.decode("utf-8"))
                except ValueError:
                    bad_total += 1
                    assert reported.get(n), (name, k, n, "unparsable line not reported", raw[:200])
                    assert f"{path}:{n}:" in err  # file and line on stderr too
            # traces that no mutated line mentions are analysed as in the clean file
            dirty = set()
            for n in touched:
                dirty |= {t for t in clean_runs if t.encode() in mutated[n - 1] or t.encode() in lines[n - 1]}
            runs = {r["trace_id"]: r for r in report["runs"]}
            for trace_id, clean_run in clean_runs.items():
                if trace_id in dirty:
                    continue
                intact_total += 1
                assert runs.get(trace_id) == clean_run, (name, k, trace_id)
    assert bad_total > cases // 4 and intact_total > cases  # the mutator did break lines, and traces stayed intact


# --- hypothesis over the OTLP JSON shape -------------------------------------------------------------
_hex = st.text("0123456789abcdef", min_size=0, max_size=34)
_any = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=8)


def _or_junk(strategy):
    """Mostly the well-typed value, sometimes anything."""
    return st.one_of(strategy, strategy, strategy, _any)


_value = st.recursive(
    st.one_of(st.builds(lambda v: {"stringValue": v}, st.text(max_size=20)),
              st.builds(lambda v: {"intValue": str(v)}, st.integers(-2**63, 2**63 - 1)),
              st.builds(lambda v: {"doubleValue": v}, st.floats(allow_nan=False)),
              st.builds(lambda v: {"boolValue": v}, st.booleans()),
              st.builds(lambda v: {"bytesValue": v}, st.text("ABCDEFab0123+/=", max_size=12))),
    lambda inner: st.one_of(st.builds(lambda vs: {"arrayValue": {"values": vs}}, st.lists(inner, max_size=3)),
                            st.builds(lambda kvs: {"kvlistValue": {"values": kvs}},
                                      st.lists(st.fixed_dictionaries({"key": st.text(max_size=8), "value": inner}), max_size=3))),
    max_leaves=6)
_attributes = st.lists(st.fixed_dictionaries({"key": _or_junk(st.sampled_from(
    ["gen_ai.operation.name", "gen_ai.tool.name", "agent_trace.step.index", "agent_trace.depends_on",
     "agent_trace.lifecycle.phase", "agent_trace.error.type", "gen_ai.tool.call.result", "x"])), "value": _or_junk(_value)}),
    max_size=5)
_span = st.fixed_dictionaries({
    "traceId": _or_junk(st.sampled_from([f"{1:032x}", f"{2:032x}"]) | _hex),
    "spanId": _or_junk(st.sampled_from([f"{i:016x}" for i in range(1, 6)]) | _hex),
    "name": _or_junk(st.sampled_from(["invoke_agent a", "agent_step 0", "execute_tool t", "chat m"])),
    "kind": _or_junk(st.integers(-1, 9)),
    "startTimeUnixNano": _or_junk(st.integers(0, 2**64).map(str)),
    "endTimeUnixNano": _or_junk(st.integers(0, 2**64).map(str)),
    "attributes": _or_junk(_attributes),
    "status": _or_junk(st.fixed_dictionaries({"code": _or_junk(st.integers(-1, 4))})),
}, optional={
    "parentSpanId": _or_junk(st.sampled_from([f"{i:016x}" for i in range(1, 6)]) | _hex),
    "events": _or_junk(st.lists(st.fixed_dictionaries({"name": st.text(max_size=10), "attributes": _attributes}), max_size=2)),
    "links": _or_junk(st.lists(st.fixed_dictionaries({"traceId": _hex, "spanId": _hex, "attributes": _attributes}), max_size=2)),
})
_document = st.fixed_dictionaries({"resourceSpans": _or_junk(st.lists(st.fixed_dictionaries({
    "resource": _or_junk(st.fixed_dictionaries({"attributes": _attributes})),
    "scopeSpans": _or_junk(st.lists(st.fixed_dictionaries({
        "scope": _or_junk(st.fixed_dictionaries({"name": st.text(max_size=5)})),
        "spans": _or_junk(st.lists(_or_junk(_span), max_size=6))}), max_size=2))}), max_size=2))})


@settings(max_examples=300 if LONG else 60, deadline=None, suppress_health_check=list(HealthCheck))
@given(docs=st.lists(_document, min_size=1, max_size=3))
def test_otlp_shaped_documents_never_crash_and_keep_the_good_trace(tmp_path_factory, docs):
    path = tmp_path_factory.mktemp("otlp") / "shaped.jsonl"
    good = line(failing_run(40)).encode()
    path.write_bytes(b"".join(json.dumps(d).encode() + b"\n" for d in docs) + good)
    code, report, _ = analyze_json(path)
    assert code in (0, 1) and report["inputs"][0].get("error") is None
    good_trace = f"{41:032x}"
    if not any(good_trace in json.dumps(d) for d in docs):
        run = next(r for r in report["runs"] if r["trace_id"] == good_trace)
        assert run["status"] == "failed" and run["origin"]["span_id"] == f"{41:08x}{3:08x}"
