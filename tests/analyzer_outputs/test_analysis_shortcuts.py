"""The per-trace shortcuts give what the long way gives: the lazily built graph, the grouping from
`checked_trace`'s children lists, and a custom rule that fires on a healthy run's span."""

from __future__ import annotations

import json

from trace_builder import TraceBuilder, run_span, step, tool, write

from otel_agent_trace.analyzer.trace import check_trace, checked_trace
from otel_agent_trace.analyzer.graph import LazyGraph, build_graph
from otel_agent_trace.analyzer.readers.otlp_json import read_file
from otel_agent_trace.analyzer.runs import group_runs, trace_runs
from otel_agent_trace.analyzer.spans import InputReport, Link, Span
from otel_agent_trace.cli import main as cli_main


def _span(span_id, parent=None, name="x", start=0, **attributes):
    return Span("t1", span_id, parent, name, start, start + 1, attributes=dict(attributes))


def _shapes():
    """Runs with recorded edges, links only, self-edges only, mismatched relation lists, none."""
    yield [_span("r", name="invoke_agent a", gen_ai__operation__name="invoke_agent"),
           _span("s0", "r", "agent_step 0", 1, **{"agent_trace.step.index": 0}),
           _span("t0", "s0", "execute_tool f", 2, **{"agent_trace.depends_on": ["s0"],
                                                      "agent_trace.depends_on.relations": ["decided_by"]}),
           _span("s1", "r", "agent_step 1", 3, **{"agent_trace.step.index": 1, "agent_trace.depends_on": ["t0", 7],
                                                   "agent_trace.depends_on.relations": ["consumes", "data"]})]
    linked = [_span("r", name="invoke_agent a"), _span("s0", "r", "agent_step 0", 1, **{"agent_trace.step.index": 0}),
              _span("t0", "s0", "execute_tool f", 2)]
    linked[2].links = [Link("t1", "s0", {"agent_trace.link.relation": "decided_by"}), Link("t2", "s0", {})]
    yield linked
    yield [_span("r", name="invoke_agent a"),
           _span("s0", "r", "agent_step 0", 1, **{"agent_trace.step.index": 0, "agent_trace.depends_on": ["s0"],
                                                   "agent_trace.depends_on.relations": ["consumes"]}),
           _span("t0", "s0", "execute_tool f", 2, **{"agent_trace.depends_on": ["s0", "r"],
                                                      "agent_trace.depends_on.relations": ["decided_by"]})]
    yield [_span("r", name="invoke_agent a"), _span("s0", "r", "agent_step 0", 1, **{"agent_trace.step.index": 0}),
           _span("t0", "s0", "execute_tool f", 2), _span("s1", "r", "agent_step 1", 3, **{"agent_trace.step.index": 1})]


def test_lazy_graph_is_the_built_graph():
    for spans in _shapes():
        for run in group_runs(spans):
            lazy, built = LazyGraph(run), build_graph(run)
            assert lazy.derived == built.derived  # known before any edge is built
            assert dict(lazy.edges) == dict(built.edges) and dict(lazy.reverse) == dict(built.reverse)
            assert lazy.derived == built.derived
            lazy2 = LazyGraph(run)
            lazy2.add("r", "t0", "data")  # an edge added first builds the others first, in the same order
            built.add("r", "t0", "data")
            assert dict(lazy2.edges) == dict(built.edges)


def test_trace_runs_from_checked_children_equal_group_runs():
    spans = [_span("t0", "s0", "execute_tool f", 5), _span("s0", "r", "agent_step 0", 1, **{"agent_trace.step.index": 0}),
             _span("r", name="invoke_agent a"), _span("c1", "c2", "y", 2), _span("c2", "c1", "z", 3),
             _span("o", "missing", "chat m", 4), _span("s0", "r", "dup", 9), _span("me", "me", "invoke_agent b", 6)]
    reports: dict = {}
    expected = group_runs(check_trace([_copy(s) for s in spans], reports))
    by_id, children = checked_trace([_copy(s) for s in spans], reports)
    got = trace_runs("t1", by_id, children)
    shape = lambda runs: [(r.root.span_id, list(r.spans), [s.span_id for s in r.steps],  # noqa: E731
                           [s.span_id for s in r.tools], [s.span_id for s in r.chats]) for r in runs]
    assert shape(got) == shape(expected)


def _copy(span: Span) -> Span:
    return Span(span.trace_id, span.span_id, span.parent_id, span.name, span.start_ns, span.end_ns,
                attributes=dict(span.attributes))


def test_custom_rule_fires_on_a_healthy_run(tmp_path, capsys):
    b = TraceBuilder()
    run = run_span(b)
    s0 = step(b, run, 0)
    t0 = tool(b, s0, 0, "lookup", '{"id": 1}', '{"rows": [1]}', agent_trace__tool__outcome="ok",
              agent_trace__depends_on=[s0], agent_trace__depends_on__relations=["decided_by"])
    step(b, run, 1, agent_trace__depends_on=[t0], agent_trace__depends_on__relations=["consumes"])
    path = write(tmp_path / "t.jsonl", b)
    assert all(s.status_code != 2 for s in read_file(str(path), InputReport(str(path))))
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"criticalFailures": [
        {"ruleId": "LOOKUP_USED", "match": {"span_name": "execute_tool look*"}, "traceBack": True}]}))
    cli_main(["analyze", "--format", "json", str(path)])
    healthy = json.loads(capsys.readouterr().out)["runs"][0]
    assert healthy["status"] == "ok" and healthy["errors"] == [] and healthy["derived_graph"] is False
    cli_main(["analyze", "--format", "json", "--rules", str(rules), str(path)])
    r = json.loads(capsys.readouterr().out)["runs"][0]
    assert r["status"] == "failed" and [x["rule_id"] for x in r["rules"]] == ["LOOKUP_USED"]
    assert r["critical"]["span_id"] == t0 and r["derived_graph"] is False
    # the walk back from it ran (over the graph built for it): no error before it, so no origin
    assert r["origin"] is None and any("no error was recorded before the failure" in e for e in r["evidence"])


# --- distinctive values: each distinct leaf read once gives the keys of every leaf read -------------
from hypothesis import given, settings, strategies as st  # noqa: E402

from otel_agent_trace import detectors  # noqa: E402

_TOKENS = st.sampled_from(["A1001", "C-77", "3-5", "25", "$25.00", "1,200", "count.py", "a@b.io", "x", "true", "10",
                           "10.0", " A-9 ", "2026-11-30", "lorem", "ORD-7731", "user_id", "-12", "1e3",
                           "x9" * 80, "1" * 300])
_TEXT = st.lists(_TOKENS, max_size=12).map(" ".join)
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 20, 10 ** 20), st.floats(allow_nan=True), _TOKENS, _TEXT)
_JSON = st.recursive(_SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=6),
                                                      st.dictionaries(st.text(max_size=3), inner, max_size=6)),
                     max_leaves=30)


def _reference_keys(payload):
    """The definition: `value_key` of every leaf (repeats included), JSON text parsed first."""
    if isinstance(payload, str):
        from otel_agent_trace.json_text import parse_json_or_text

        payload = parse_json_or_text(payload)
    return frozenset(k for k in map(detectors.value_key, detectors.leaves(payload)) if k is not None)


@settings(max_examples=300, deadline=None)
@given(_JSON, st.booleans())
def test_distinctive_values_equal_the_definition(payload, as_text):
    import orjson

    if as_text:  # a tool result or arguments as recorded: JSON text (repeated rows, repeated texts)
        try:
            payload = orjson.dumps([payload, payload]).decode()
        except TypeError:  # a float nan: not JSON
            return
    assert detectors.distinctive_values(payload) == _reference_keys(payload)
    assert detectors.distinctive_values(payload) == _reference_keys(payload)  # again: through the caches


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="ab1Z9 \t\n\"'`()[]{}<>,;=|/._@:-$€٣é\u2003\u00a0", max_size=40))
def test_candidate_tokens_are_the_runs_that_hold_a_mark(text):
    """The tokenizer's definition: each maximal run of non-separators holding a digit or one of
    / . _ - @ : is one candidate token (the regex matches only from a run's start)."""
    import re

    runs = re.findall(rf"[^{detectors._SEPARATORS}]+", text)
    assert list(detectors.leaves(text + " " * 65)) == [r for r in runs if re.search(r"[\d/._@:\-]", r)]


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="ab1Z9 \t\n\"'`()[]{}<>,;=|/._@:-$€٣é\u2003\u00a0", max_size=60), st.booleans())
def test_keys_of_a_text_are_those_of_its_marked_runs(text, ascii_only):
    """`distinctive_values` of plain text (ASCII: separators mapped in one bytes.translate; else
    replaced one by one; letters-only runs dropped before the memo) equals `value_key` of each
    separator-delimited run that holds a digit or mark, by the regex definition."""
    import re

    if ascii_only:
        text = text.encode("ascii", "ignore").decode()
    text = "x " + text + " " * 65  # (plain text: not JSON, longer than an identifier)
    runs = re.findall(rf"[^{detectors._SEPARATORS}]+", text)
    expected = {detectors.value_key(r) for r in runs if re.search(r"[\d/._@:\-]", r)} - {None}
    detectors._cache.clear()
    assert detectors.distinctive_values(text) == expected


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(max_size=12), st.builds(lambda a, b: a + b, st.sampled_from(
    ["", " ", "\t", "\ufeff", "\u00a0", "\x0c", "+", ".", "N", "I", "t", "n", "f", "-", "0", "[", "{", '"']),
    st.sampled_from(["", "1", "rue", "ull", "alse", "aN", "nfinity", "5", "{}", "[]", '"a"', " 1", "]", "}"]))))
def test_parse_json_or_text_is_orjson_or_the_text(text):
    """The shortcut (text that cannot start JSON is not parsed) returns what a parse attempt does."""
    import orjson

    from otel_agent_trace.json_text import parse_json_or_text

    try:
        expected = orjson.loads(text)
    except orjson.JSONDecodeError:
        expected = text
    assert parse_json_or_text(text) == expected


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="0123456789", max_size=300))
def test_value_key_of_digits_is_the_regex_path(digits):
    """ASCII digits take a shortcut past the regexes; a leading space sends the same text through them."""
    assert detectors.value_key(digits) == detectors.value_key(" " + digits)
