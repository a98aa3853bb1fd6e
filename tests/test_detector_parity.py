"""One meaning per error type: what the recorder flags online equals what the analyzer derives
offline from the same trace once the recorder's verdicts are stripped (issue 11, deliverable 4).

Hypothesis writes agent runs from a catalogue of decisions (good calls, empty and error results,
exceptions, unknown tools, schema-violating and malformed arguments, repeated calls, answers with
received or made-up values, a history window that drops the system prompt); each runs through
the real openai client against the scripted server, is exported by our file exporter, and is
analysed by the CLI (`analyze --format json`).

Compared: the set of (step index, error type) of the detectors' error types
(`DETECTOR_TYPES`). Online: every span carrying `agent_trace.error.type`. Offline: the JSON's
`errors[]` and `recovered[]`. Stripped before the offline pass (`STRIPPED`): phases, error types,
the detectors' evidence attributes, the tool outcome, and the events named after an error type.
Kept: what the analyzer reads as structure and content (step index and kind, context and message
hashes, new messages, tool arguments and results, output messages, tool definitions, links).
Each generated step makes at most one model error, so that one error type per span suffices.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scenario_agent import analyze_json, call, record_run, schema_for

import otel_agent_trace
from otel_agent_trace.vocabulary import ErrorType
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

DETECTOR_TYPES = {t.value for t in (
    ErrorType.TOOL_EXCEPTION, ErrorType.TOOL_ERROR_RESULT, ErrorType.TOOL_EMPTY_RESULT, ErrorType.TOOL_TIMEOUT,
    ErrorType.INVALID_ARGUMENTS, ErrorType.UNKNOWN_TOOL, ErrorType.LOOP_DETECTED, ErrorType.FABRICATED_VALUE,
    ErrorType.CONTEXT_DROPPED)}
STRIPPED = {
    "agent_trace.lifecycle.phase", "agent_trace.error.type", "agent_trace.tool.outcome", "agent_trace.loop.count",
    "agent_trace.fabricated.values", "agent_trace.context.dropped_hashes", "agent_trace.context.dropped_roles",
    "agent_trace.validation.errors", "agent_trace.budget.exceeded",
}

SCHEMAS = [
    schema_for("lookup_order", {"order_id": {"type": "string"}}, ["order_id"]),
    schema_for("search_orders", {"query": {"type": "string"}}, ["query"]),
    schema_for("refund", {"order_id": {"type": "string"}}, ["order_id"]),
    schema_for("charge", {"amount": {"type": "number"}}, ["amount"]),
    schema_for("ship", {"order_id": {"type": "string"}}, ["order_id"]),
]


def _charge(amount):
    raise ConnectionError("payment gateway reset")


def tools():
    return {
        "lookup_order": lambda order_id: {"order_id": order_id, "total": 125.5, "sku": "SKU-4471"},
        "search_orders": lambda query: [],
        "refund": lambda order_id: {"success": False, "error": f"order {order_id} is not refundable"},
        "charge": otel_agent_trace.tool(_charge, name="charge"),  # recorded explicitly: its exception
        "ship": lambda order_id: {"status": 503, "message": "carrier unavailable"},  # an error payload
    }


# one decision per step: (turn, whether it may be repeated into a loop)
DECISIONS = {
    "ok": call("lookup_order", order_id="A1001"),
    "ok2": call("lookup_order", order_id="A1002"),
    "empty": call("search_orders", query="late orders"),
    "error_result": call("refund", order_id="A1001"),
    "exception": call("charge", amount=25),
    "unknown_tool": call("lookup_ordr", order_id="A1001"),
    "schema": call("lookup_order", order_id=1001),
    "malformed": {"tool_calls": [{"name": "lookup_order", "arguments": '{"order_id": A1001'}]},
    "http_error": call("ship", order_id="A1001"),
}
ANSWERS = {
    "received": "Order A1001 totals $125.50.",
    "derived": "Two of them make $251.00.",
    "made_up": "Your refund of $59.90 for order A1001 is on its way, reference RF-88213.",
}


@st.composite
def runs(draw):
    steps = draw(st.lists(st.sampled_from(sorted(DECISIONS)), min_size=0, max_size=5))
    if steps and draw(st.booleans()):  # repeat one good call into a loop
        steps += [draw(st.sampled_from(["ok", "ok2"]))] * draw(st.integers(2, 4))
    answer = draw(st.sampled_from(sorted(ANSWERS)))
    window = draw(st.sampled_from([None, None, 4]))  # a naive history window drops the system prompt
    return steps, answer, window


@pytest.fixture(scope="module")
def server():
    with ScriptedOpenAIServer({}) as s:
        yield s


def record(server, tmp: Path, n: int, steps, answer, window) -> Path:
    turns = [DECISIONS[s] for s in steps] + [{"content": ANSWERS[answer]}]
    return record_run(server, tmp / f"run{n}.jsonl", f"parity run {n}: look at order A1001", turns, tools(),
                      schemas=SCHEMAS, keep_last=window, name="parity")


def spans_of(path: Path):
    for line in path.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                yield from ss["spans"]


def value(v):
    return next(iter(v.values())) if isinstance(v, dict) else v


def online_errors(path: Path) -> set[tuple[int | None, str]]:
    spans = {s["spanId"]: s for s in spans_of(path)}

    def attr(span, key):
        return next((value(a["value"]) for a in span.get("attributes", ()) if a["key"] == key), None)

    def step_index(span):
        while span is not None:
            index = attr(span, "agent_trace.step.index")
            if index is not None:
                return int(index)
            span = spans.get(span.get("parentSpanId"))
        return None

    return {(step_index(s), attr(s, "agent_trace.error.type")) for s in spans.values()
            if attr(s, "agent_trace.error.type") in DETECTOR_TYPES}


def strip(path: Path, out: Path) -> Path:
    lines = []
    for line in path.read_text().splitlines():
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    s["attributes"] = [a for a in s.get("attributes", ()) if a["key"] not in STRIPPED]
                    s["events"] = [e for e in s.get("events", ()) if e["name"] not in ErrorType._value2member_map_]
        lines.append(json.dumps(doc))
    out.write_text("\n".join(lines) + "\n")
    return out


def offline_errors(path: Path, tmp: Path) -> set[tuple[int | None, str]]:
    [run] = analyze_json(path)["runs"]
    # every occurrence: an errors[] entry folds the repeats of one error (docs/analyzer.md, Folding)
    listed = [e | o for e in run["errors"] for o in e["occurrences"]] + run["recovered"]
    return {(e["step_index"], e["error_type"]) for e in listed if e["error_type"] in DETECTOR_TYPES}


_counter = iter(range(10**6))
OBSERVED: set[str] = set()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=runs())
def test_online_error_types_equal_offline_ones(server, tmp_path, scenario):
    steps, answer, window = scenario
    n = next(_counter)
    path = record(server, tmp_path, n, steps, answer, window)
    online = online_errors(path)
    offline = offline_errors(strip(path, tmp_path / f"stripped{n}.jsonl"), tmp_path)
    assert online == offline, (steps, answer, window)
    OBSERVED.update(t for _, t in online)


def test_the_corpus_reaches_every_detector(server, tmp_path):
    """The catalogue is not vacuous: each detector's error type shows up online in some run."""
    seen = set()
    for n, (steps, answer, window) in enumerate([
        (["ok", "empty", "error_result", "exception", "unknown_tool", "schema", "malformed"], "made_up", None),
        (["ok", "ok", "ok"], "received", None),
        (["ok", "ok2", "ok", "ok2"], "derived", 4),
    ]):
        path = record(server, tmp_path, 10**6 + n, steps, answer, window)
        seen |= {t for _, t in online_errors(path)}
        assert online_errors(path) == offline_errors(strip(path, tmp_path / f"s{n}.jsonl"), tmp_path)
    assert seen == DETECTOR_TYPES - {ErrorType.TOOL_TIMEOUT.value}
