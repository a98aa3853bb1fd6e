"""The reader's native fast path (native/, Rust: `otlp_json.native_reader`) reads a record exactly as
the typed path does, or declines it: the same spans (value types, shared empty events/links list,
one resource dict per resourceSpans), the same `Record` grouping. Records of our own shape and of
TRAIL GAIA are never declined. Without the extension (not built, or `OTEL_AGENT_TRACE_NATIVE=0`)
the reader reads the same spans; an error inside it falls back to the Python paths."""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_reader_typed import _both, _export, _odd_exports, _spots, _typed_reads

from otel_agent_trace.analyzer.readers import otlp_json, otlp_values
from otel_agent_trace.analyzer.spans import Event, InputReport, Link, Span

ROOT = Path(__file__).resolve().parents[2]
TRAIL = ROOT / "../shared/benchmarks/trail-gaia/traces.jsonl.gz"
if not TRAIL.exists():
    TRAIL = Path("/work/shared/benchmarks/trail-gaia/traces.jsonl.gz")

try:
    from otel_agent_trace.analyzer.readers import _native  # type: ignore[attr-defined]
except ImportError:
    _native = None
_DEFAULT_MAX = otlp_values.MAX_ATTRIBUTE_CHARS
needs_native = pytest.mark.skipif(_native is None, reason="the native reader (native/, Rust) was not built: "
                                  "cargo was not on the PATH when the package was installed")


def _reader(span_type=Span):
    return _native.Reader(span_type, Event, Link, otlp_json.Record, otlp_json._NONE).read


def _typed(raw: bytes):
    try:
        return otlp_json._typed_spans(otlp_json._decode_export(raw), "f", 7, InputReport("f"))
    except otlp_json._NOT_TYPED:
        return None


def _shape(record) -> tuple:
    """Everything a `Record` holds, reprs distinguishing 1, 1.0 and True; which spans share a
    resource dict; which use the shared empty events/links list."""
    first = {}
    resources = [first.setdefault(id(span.resource), index) for index, span in enumerate(record)]
    empty = [(span.events is otlp_json._NONE, span.links is otlp_json._NONE) for span in record]
    return (type(record), repr(list(record)), repr(record.traces), record.rooted, record.line, resources, empty)


def _same_or_declined(read, raw: bytes) -> bool:
    """Asserts that the native reader reads `raw` as the typed path does; False if it declined."""
    native = read(raw, "f", 7)
    if native is None:
        return False
    typed = _typed(raw)
    assert typed is not None, "the native reader read a record the typed path refuses"
    assert _shape(native) == _shape(typed)
    assert all(any(span is mine for mine in native) for group in native.traces.values() for span in group)
    assert len({id(span.source) for span in native}) <= 1
    return True


def _hex_ids(node):
    """`node` with its base64 ids made hex (most generated records have one, which the native reader
    declines: this lets it read the other odd values)."""
    if isinstance(node, list):
        return [_hex_ids(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str) and len(value) in (12, 24):
            try:
                value = base64.b64decode(value, validate=True).hex()
            except ValueError:
                pass
        out[key] = _hex_ids(value)
    return out


@contextlib.contextmanager
def _max_chars(limit: int):
    """`MAX_ATTRIBUTE_CHARS` for a part of one example (the fixture below sets it for the test)."""
    saved, otlp_values.MAX_ATTRIBUTE_CHARS = otlp_values.MAX_ATTRIBUTE_CHARS, limit
    try:
        yield
    finally:
        otlp_values.MAX_ATTRIBUTE_CHARS = saved


@pytest.fixture
def _short_max(monkeypatch):
    monkeypatch.setattr(otlp_values, "MAX_ATTRIBUTE_CHARS", 8)  # long strings without megabytes


# Generated records, every path on each: drawing a record costs hypothesis ~25x what reading it
# does, so each record is read by all three paths rather than drawn once per path (the three
# properties were three tests of 2000 examples each, drawn from this same strategy). Each property
# still holds on 2000 records a run: the typed and orjson paths read alike (test_reader_typed.py's
# property, with its 8-character attribute limit), the native reader reads as the typed path does
# or declines, and reads so the same record with its base64 ids made hex.
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_odd_exports(), st.booleans())
def test_odd_records_read_alike_by_every_path(_short_max, doc, pretty):
    raw = json.dumps(doc, indent=1 if pretty else None).replace("\n", " ").encode()
    event("typed" if _typed_reads(raw) else "orjson")
    typed, plain = _both(raw)
    assert typed == plain
    if _native is None:  # the native tests below skip, saying so; test_built_wherever_cargo_is fails if cargo is here
        return
    with _max_chars(_DEFAULT_MAX):  # the native reader against the typed path at the product's limit
        event("native" if _same_or_declined(_reader(), json.dumps(doc).encode()) else "declined")
        event("hex ids: native" if _same_or_declined(_reader(), json.dumps(_hex_ids(doc)).encode())
              else "hex ids: declined")


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_export)
def test_well_formed_records_are_read_by_every_path(_short_max, doc):
    """Well-formed records take the typed path (unless an attribute is over the limit or an id is
    base64) and read as the orjson path does (500 records; this was test_reader_typed.py's own
    300-example test); the native reader reads them unless an id is base64 or in two cases, or
    -0.0 is in them."""
    raw = json.dumps(doc).encode()
    long = [node for node, key in _spots(doc, []) if key == "stringValue" and len(node[key]) > 8]
    base64_span_ids = [node for node, key in _spots(doc, []) if key == "spanId" and len(node[key]) != 16]
    assert _typed_reads(raw) or long or base64_span_ids  # the orjson path truncates and reports long attributes
    typed, plain = _both(raw)
    assert typed == plain
    if _native is None:
        return
    with _max_chars(_DEFAULT_MAX):
        read = _same_or_declined(_reader(), raw)
    ids = [s.get("traceId") for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    ids += [s.get("spanId") for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    ids += [s.get("parentSpanId") or "" for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    ids += [k[f] for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]
            for k in s.get("links", ()) for f in ("traceId", "spanId")]
    base64_ids = [i for i in ids if i and len(i) not in (16, 32)]
    two_cases = len({i for i in ids if len(i) == 32}) != len({i.lower() for i in ids if len(i) == 32})
    negative_zero = b"-0.0" in raw  # declined: serde_json reads the integer -0 so too (msgspec: 0.0)
    assert read or base64_ids or two_cases or negative_zero


@pytest.mark.parametrize("raw", [
    b'{"resourceSpans":[]}', b'{"resourceSpans":[]} x', b'{}', b'[]', b'null', b'', b'\xef\xbb\xbf{}',
    b'{"resourceSpans":[{"scopeSpans":[{"spans":[],"scope":{"name":"late"}}],"resource":{"attributes":[]}}]}',
    b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%s","spanId":"%s","startTimeUnixNano":"1"}],'
    b'"scope":{"name":"late"}}],"resource":{"attributes":[{"key":"k","value":{"intValue":"-3"}}]}}]}'
    % (b"A" * 32, b"b" * 16),
    b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%s","spanId":"%s"},{"traceId":"%s","spanId":"%s"}]}]}]}'
    % (b"A" * 32, b"b" * 16, b"a" * 32, b"c" * 16),  # one trace id in two cases: declined
    b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%s","spanId":"%s","attributes":[{"key":"k\\"","value":'
    b'{"stringValue":"\\u00e9\\ud83d\\ude00\\n"}},{"key":"k\\"","value":{"doubleValue":1e308}},{"value":{"boolValue":'
    b'false},"key":"b","x":null}]}]}]}' % (b"a" * 32, b"b" * 16),
    b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%s","spanId":"%s","traceId":"%s"}]}]}]}'
    % (b"a" * 32, b"b" * 16, b"c" * 32),  # a field twice: declined
    '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%s","spanId":"%s","name":"\udcff"}]}]}]}'
    .encode("utf-8", "surrogateescape") % (b"a" * 32, b"b" * 16),
])
@needs_native
def test_edge_records(raw):
    _same_or_declined(_reader(), raw)


_INTS = ['""', '" 5"', '"+5"', '"1_0"', '"007"', '"-0"', '"-5"', '"1e3"', '"5.0"', '"\\u0661"', '"9223372036854775807"',
         '"9223372036854775808"', '"-9223372036854775809"', '9223372036854775807', '9223372036854775808', '-5', '5.0',
         'true', 'null', '[]', '"x"']
_VALUES = ['{"stringValue":"a","intValue":"1"}', '{"stringValue":"a","stringValue":"b"}', '{"stringValue":"a","x":1}',
           '{}', '{"stringValue":null}', '{"stringValue":5}', '{"boolValue":1}', '{"boolValue":false}',
           '{"doubleValue":"1"}', '{"doubleValue":true}', '{"doubleValue":-0}', '{"doubleValue":-0.0}', '{"doubleValue":5}',
           '{"doubleValue":1e400}', '{"doubleValue":12345678901234567890123}', '{"doubleValue":0.1}',
           '{"doubleValue":2.2250738585072011e-308}', '{"kvlistValue":{"values":[]}}', '{"bytesValue":"AAE="}',
           '{"arrayValue":{}}', '{"arrayValue":null}', '{"arrayValue":[]}', '{"arrayValue":{"values":null}}',
           '{"arrayValue":{"values":[{}]}}', '{"arrayValue":{"values":[{"arrayValue":{}}]}}',
           '{"arrayValue":{"values":[{"intValue":"1"},{"stringValue":"a"},{"boolValue":true}],"x":[1]}}',
           '{"arrayValue":{"values":[{"stringValue":"a","x":1}]}}', '{"arrayValue":{"values":[{"stringValue":"a"}]},'
           '"stringValue":"b"}', '"a"', 'null'] + ['{"intValue":%s}' % value for value in _INTS]
_ITEMS = ['{"key":"a","value":%s}' % value for value in _VALUES] + [
    '{"key":"a"}', '{"value":{"stringValue":"a"}}', '{"key":1,"value":{"stringValue":"a"}}', '{"key":null,"value":{}}',
    '{"value":{"intValue":"1"},"key":"b","x":{"y":[null]}}', '{"key":"a","value":{"stringValue":"1"},"key":"b"}', 'null']
_SPAN_FIELDS = (
    [("kind", v) for v in ['0', '5', '6', '-1', '1.0', 'true', '"1"', '"SPAN_KIND_SERVER"', 'null']]
    + [(f, v) for f in ("startTimeUnixNano", "endTimeUnixNano") for v in _INTS]
    + [("status", v) for v in ['{}', 'null', '"x"', '{"code":3}', '{"code":"STATUS_CODE_ERROR"}', '{"code":2,"message":'
                               'null}', '{"code":2,"message":"m","x":1}', '{"code":true}']]
    + [("name", v) for v in ['null', '5', '""', '"n\\"a\\u00e9"']]
    + [("parentSpanId", v) for v in ['""', 'null', '"%s"' % ("B" * 16), '"2kXhisIhawI="', '"%s"' % ("b" * 15),
                                     '"%s"' % ("g" * 16), '5']]
    + [(f, v) for f in ("traceState", "flags", "droppedAttributesCount", "droppedEventsCount", "droppedLinksCount")
       for v in ['null', '{"x":[1,{}]}', '"s"']]
    + [(f, '1') for f in ("trace_id", "start_time_unix_nano", "unknownField", "resource")]
    + [("attributes", "[%s]" % item) for item in _ITEMS] + [("attributes", v) for v in ['null', '{}', '[]']]
    + [("events", v) for v in ['null', '[]', '[null]', '[{}]', '[{"name":null}]', '[{"name":"e","x":1}]', '{}']
       + ['[{"timeUnixNano":%s}]' % value for value in _INTS] + ['[{"attributes":[%s]}]' % item for item in _ITEMS[::4]]]
    + [("links", v) for v in ['null', '[]', '[{}]', '[{"traceId":"%s"}]' % ("a" * 32),
                              '[{"traceId":"%s","spanId":"%s","traceState":"t","x":1}]' % ("A" * 32, "B" * 16),
                              '[{"traceId":"AAECAwQFBgcICQoLDA0ODw==","spanId":"%s"}]' % ("b" * 16),
                              '[{"traceId":"%s","spanId":"%s","attributes":[%s]}]' % ("a" * 32, "c" * 16, _ITEMS[0])]]
    + [("traceId", v) for v in ['null', '"%s"' % ("A" * 32), '"%s"' % ("a" * 31), '"AAECAwQFBgcICQoLDA0ODw=="', '""']]
    + [("spanId", v) for v in ['null', '"%s"' % ("B" * 16), '"2kXhisIhawI="', '""']]
)
_OUTER = [  # around one plain span, %s
    '{"resourceSpans":[{"scopeSpans":[{"spans":[%s],"scope":null}]}]}',
    '{"resourceSpans":[{"scopeSpans":[{"spans":[%s],"scope":{"name":null}}]}]}',
    '{"resourceSpans":[{"scopeSpans":[{"spans":[%s],"scope":{"name":"s","version":"1","attributes":[{}]}}]}]}',
    '{"resourceSpans":[{"scopeSpans":[{"spans":[%s],"instrumentationLibrary":{"name":"s"}}]}]}',
    '{"resourceSpans":[{"scopeSpans":[{"spans":[%s],"schemaUrl":"u"}],"schemaUrl":"u","resource":null}]}',
    '{"resourceSpans":[{"scopeSpans":[{"spans":[%s]}],"resource":{"attributes":null}}]}',
    '{"resourceSpans":[{"scopeSpans":[{"spans":[%s]}],"resource":{"attributes":[],"droppedAttributesCount":0}}]}',
    '{"resourceSpans":[{"scopeSpans":[{"spans":[%s]}],"scopeSpans":[]}]}',
    '{"resourceSpans":[{"scopeSpans":[{"spans":[%s]}],"instrumentationLibrarySpans":[]}]}',
    '{"resourceSpans":[{"scopeSpans":[{"spans":null}]}]}', '{"resourceSpans":[{"scopeSpans":[{}]}]}',
    '{"resourceSpans":[{"resource":{}}]}', '{"resourceSpans":[null]}', '{"resourceSpans":null}',
    '{"resource_spans":[{"scopeSpans":[{"spans":[%s]}]}]}', '{"resourceSpans":[{"scope_spans":[{"spans":[%s]}]}]}',
    '{"resourceSpans":[{"scopeSpans":[{"spans":[%s]}]}],"resourceSpans":[]}', '{"resourceSpans":[],"x":{}}',
    '{"result":{"resourceSpans":[{"scopeSpans":[{"spans":[%s]}]}]}}', '[{"resourceSpans":[]}]',
    ' {"resourceSpans":[{"scopeSpans":[{"spans":[%s]}]}]}\r\n', '{"resourceSpans":[{"scopeSpans":[{"spans":[%s]}]}]}}',
]
_PLAIN = '{"traceId":"%s","spanId":"%s","startTimeUnixNano":"5"}' % ("a" * 32, "b" * 16)


@needs_native
@pytest.mark.parametrize("field,value", _SPAN_FIELDS)
def test_span_fields(field, value):
    """Each field of a span, valid or odd, in a record with a plain span: read as the typed path does, or declined."""
    fields = {"traceId": '"%s"' % ("c" * 32), "spanId": '"%s"' % ("d" * 16)}
    fields[field] = value
    span = "{%s}" % ",".join('"%s":%s' % item for item in fields.items())
    raw = '{"resourceSpans":[{"scopeSpans":[{"spans":[%s,%s]}]}]}' % (_PLAIN, span)
    _same_or_declined(_reader(), raw.encode())


@needs_native
@pytest.mark.parametrize("outer", _OUTER)
def test_outer_shapes(outer):
    raw = outer.replace("%s", _PLAIN) if "%s" in outer else outer
    _same_or_declined(_reader(), raw.encode())


@needs_native
def test_caches_past_their_bound():
    """Trace ids and attribute keys are remembered across records, up to a bound (then forgotten)."""
    read = _reader()
    for start in (0, 20000):
        spans = [{"traceId": "%032x" % (start + n), "spanId": "%016x" % n, "startTimeUnixNano": str(n),
                  "attributes": [{"key": "k%d" % (start + n), "value": {"intValue": n}}]} for n in range(20000)]
        raw = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()
        assert _same_or_declined(read, raw)


def _our_records(tmp_path: Path) -> list[bytes]:
    out = tmp_path / "shape.jsonl"
    subprocess.run([sys.executable, str(ROOT / "bench" / "gen_otlp_file.py"), str(out), "--mb", "2"], check=True,
                   stdout=subprocess.DEVNULL)
    return out.read_bytes().splitlines()


@needs_native
def test_our_shape_and_trail_are_never_declined(tmp_path):
    read = _reader()
    records = _our_records(tmp_path)
    if TRAIL.exists():
        with gzip.open(TRAIL, "rb") as handle:
            records += [line for line in handle if line.strip()]
    for raw in records:
        assert _same_or_declined(read, raw), raw[:200]


@needs_native
def test_an_error_inside_falls_back():
    """Fail-open: the native reader raising (here: the Span type given to it fails) loses no record."""

    class Failing:
        def __init__(self, *args):
            raise ZeroDivisionError("span")

    raw = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "a" * 32, "spanId": "b" * 16, "attributes": [{"key": "k", "value": {"stringValue": "v"}}]}]}]}]}).encode()
    failing = _reader(Failing)
    with pytest.raises(ZeroDivisionError):
        failing(raw, "f", 7)
    expected = repr(list(otlp_json.read_record(raw, 7, "f", InputReport("f"), otlp_json.native_reader())))
    report = InputReport("f")
    assert repr(list(otlp_json.read_record(raw, 7, "f", report, failing))) == expected
    assert report.spans == 1 and not report.bad_lines


_READ_ALL = """
import sys
from otel_agent_trace.analyzer.readers import otlp_json
from otel_agent_trace.analyzer.settings import AnalyzerSettings
from otel_agent_trace.analyzer.spans import InputReport
report = InputReport(sys.argv[1])
batches = list(otlp_json.read_batches(sys.argv[1], report))
print(otlp_json.native_reader(AnalyzerSettings.from_env().native) is not None)
print(repr([(list(b), b.traces, b.rooted, b.line) for b in batches]), repr(report))
"""


def _read_all(path: Path, env: dict[str, str], prelude: str = "") -> tuple[str, str]:
    proc = subprocess.run([sys.executable, "-c", prelude + _READ_ALL, str(path)], env={**os.environ, **env},
                          capture_output=True, text=True, check=True)
    used, spans = proc.stdout.split("\n", 1)
    return used, spans


def test_reader_reads_alike_without_the_native_module(tmp_path):
    """Records of our shape mixed with ones the native reader declines (base64 ids, kvlists, bad
    UTF-8, a broken line), read with the extension, with `OTEL_AGENT_TRACE_NATIVE=0`, and where it
    cannot be imported: the same spans and reports."""
    odd = [b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"AAECAwQFBgcICQoLDA0ODw==","spanId":"AAECAwQFBgc="}]}]}]}',
           b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%s","spanId":"%s","attributes":[{"key":"k","value":'
           b'{"kvlistValue":{"values":[]}}}]}]}]}]}' % (b"a" * 32, b"b" * 16),
           b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%s","spanId":"%s","traceState":"\xff"}]}]}]}'
           % (b"a" * 32, b"c" * 16),
           b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%s",' % (b"a" * 32)]
    records = _our_records(tmp_path)[:50]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(records[:25] + odd + records[25:]) + b"\n")
    used, native = _read_all(path, {})
    off_used, off = _read_all(path, {"OTEL_AGENT_TRACE_NATIVE": "0"})
    gone_used, gone = _read_all(path, {}, "import sys; sys.modules['otel_agent_trace.analyzer.readers._native'] = None\n")
    assert (off_used, gone_used) == ("False", "False")
    if _native is None:
        pytest.skip("the native reader (native/, Rust) was not built: only the Python paths were read")
    assert used == "True"
    assert native == off == gone


def test_built_wherever_cargo_is():
    """The extension is optional for users without Rust, but an install on a machine with cargo
    that silently lost it (a failed build: setuptools-rust goes on without it) must not pass as
    the pure-Python reader: every test above would skip."""
    import shutil

    if shutil.which("cargo") is None:
        pytest.skip("cargo is not on the PATH: the pure-Python reader is the expected install")
    assert _native is not None, ("cargo is on the PATH but the native reader was not built: reinstall "
                                 "(`python3 tasks.py setup` after removing .venv/.installed) and read pip's output")
    assert otlp_json.native_reader() is not None or os.environ.get("OTEL_AGENT_TRACE_NATIVE") == "0"
