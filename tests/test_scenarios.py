"""Issue 3's scenarios through the real openai client and the scripted server, asserting the
links and phases span by span."""

from __future__ import annotations

import json

import openai
import pytest
from span_helpers import attrs, hexid
from opentelemetry.trace import StatusCode
from scenario_agent import call, run_loop, schema_for

import otel_agent_trace
from otel_agent_trace import detectors
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer


@pytest.fixture
def scripted():
    servers = []

    def start(scripts, **options):
        server = ScriptedOpenAIServer(scripts, **options).start()
        servers.append(server)
        return openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)

    yield start
    for server in servers:
        server.stop()


def edges(span):
    return list(zip(attrs(span).get("agent_trace.depends_on", ()), attrs(span).get("agent_trace.depends_on.relations", ())))


def relations_to(span, target):
    return sorted(r for t, r in edges(span) if t == hexid(target))


def phase(span):
    return attrs(span).get("agent_trace.lifecycle.phase")


def tool_by_step(traced, index):
    return [t for t in traced.named("execute_tool") if attrs(t)["agent_trace.step.index"] == index]


# --- the 50-step run ---------------------------------------------------------------------------
def fifty_step_script():
    turns = [call("list_orders"), call("get_customer", customer_id="C-100"), call("get_customer", customer_id="C-101"),
             call("lookup_order", order_id="A10O2")]
    for step in range(4, 49):
        if step in (10, 20):
            turns.append(call("check_inventory", sku=f"SKU-{step}"))  # fails once
        elif step in (11, 21):
            turns.append(call("check_inventory", sku=f"SKU-{step - 1}"))  # the retry works
        elif step == 31:
            turns.append(call("calculate_refund", order_id="A10O2", items=[]))
        else:
            turns.append(call("audit_log", entry=f"checked item {step}"))
    turns.append({"content": "Audit done. The order could not be found, so no refund was computed."})
    return turns


def fifty_step_tools():
    failed_once: set[str] = set()

    def check_inventory(sku):
        if sku not in failed_once:
            failed_once.add(sku)
            raise ConnectionError("inventory service reset the connection")
        return {"sku": sku, "stock": 12}

    return {
        "list_orders": lambda: {"orders": ["A1001", "A1003"]},
        "get_customer": lambda customer_id: {"customer_id": customer_id, "tier": "gold"},
        "lookup_order": lambda order_id: [],
        "check_inventory": check_inventory,
        "audit_log": lambda entry: {"logged": True},
        "calculate_refund": lambda order_id, items: {"success": False, "error_code": "NO_ITEMS"},
    }


def test_fifty_steps_origin_at_step_3_failure_at_49(instrument, scripted, tmp_path):
    traced = instrument()
    client = scripted({"audit": fifty_step_script()})

    def needs_amount(answer):
        return None if "$" in answer else "the refund amount is missing"

    with otel_agent_trace.agent_run("auditor", validate=needs_amount):
        run_loop(client, "Please audit refund request for A10O2", fifty_step_tools())

    [run] = traced.runs()
    steps = traced.named("agent_step")
    assert len(steps) == 50
    assert run.status.status_code is StatusCode.ERROR
    assert (phase(run), attrs(run)["agent_trace.error.type"]) == ("critical", "final_answer_invalid")
    assert attrs(steps[49])["agent_trace.step.kind"] == "final"
    assert [e.name for e in steps[49].events] == ["final_answer_invalid"]

    [lookup] = tool_by_step(traced, 3)
    assert (phase(lookup), attrs(lookup)["agent_trace.error.type"]) == ("origin", "tool_empty_result")
    assert relations_to(lookup, steps[3]) == ["decided_by"]
    assert phase(steps[4]) == "propagate" and relations_to(steps[4], lookup) == ["consumes"]
    # recovered noise: a failure at steps 10 and 20, each retried successfully one step later
    for failed_step in (10, 20):
        [first] = tool_by_step(traced, failed_step)
        [retry] = tool_by_step(traced, failed_step + 1)
        assert (phase(first), attrs(first)["agent_trace.error.type"]) == ("origin", "tool_error_result")
        assert phase(steps[failed_step + 1]) == "propagate"
        assert phase(retry) == "recovered"
        assert relations_to(retry, first) == ["retry_of"]
        assert phase(steps[failed_step + 2]) is None
    [calc] = tool_by_step(traced, 31)
    assert attrs(calc)["agent_trace.error.type"] == "tool_error_result"
    assert phase(steps[32]) == "propagate"
    quiet = [i for i, s in enumerate(steps) if phase(s) is None]
    assert quiet == [i for i in range(50) if i not in (4, 11, 21, 32)]


def test_fifty_steps_analyzer_names_step_3(instrument, scripted, tmp_path):
    """The same run through the real exporter and the analyzer."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from otel_agent_trace.analyzer.analysis import analyze
    from otel_agent_trace.analyzer.report.json_report import to_dict
    from otel_agent_trace.exporter import AgentTraceFileExporter

    path = tmp_path / "fifty.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(str(path))))
    instrumentor = otel_agent_trace.AgentTraceInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        client = scripted({"audit": fifty_step_script()})
        with otel_agent_trace.agent_run("auditor", validate=lambda answer: "$" in answer):
            run_loop(client, "Please audit refund request for A10O2", fifty_step_tools())
    finally:
        instrumentor.uninstrument()
    provider.shutdown()
    [run] = to_dict(analyze([str(path)]))["runs"]
    assert run["status"] == "failed"
    assert run["critical"]["error_type"] == "final_answer_invalid"
    assert (run["origin"]["step_index"], run["origin"]["tool"], run["origin"]["error_type"]) == (
        3, "lookup_order", "tool_empty_result")
    assert run["chain"][0]["span_id"] == run["origin"]["span_id"] and run["chain"][-1]["phase"] == "critical"


# --- overwritten state ---------------------------------------------------------------------------
def test_overwritten_state_data_edge_points_to_the_wrong_producer(instrument, scripted):
    traced = instrument()
    client = scripted({"refund Ada": [
        call("get_customer", name="Ada"),
        call("get_latest_order", customer_id="C-77"),
        call("refund", order_id="C-77"),  # the model took the customer's "id", not the order's
        {"content": "The refund could not be issued."},
    ]})
    tools = {
        "get_customer": lambda name: {"id": "C-77", "name": name},
        "get_latest_order": lambda customer_id: {"id": "O-5521", "customer_id": customer_id, "total": 25.0},
        "refund": lambda order_id: {"success": False, "error": f"order {order_id} not found"},
    }
    with otel_agent_trace.agent_run("refunds"):
        run_loop(client, "Please refund Ada's latest order", tools)
    customer, order, refund = traced.named("execute_tool")
    assert relations_to(order, customer) == ["data"]
    assert relations_to(refund, customer) == ["data"]  # the wrong producer, visible in the trace
    assert relations_to(refund, order) == []
    # the refund's failure is its own: its strong dependencies were ok
    assert (phase(refund), attrs(refund)["agent_trace.error.type"]) == ("origin", "tool_error_result")


# --- seed 004's trajectory -----------------------------------------------------------------------
SEED_004 = [
    call("run_shell", command="ls"),
    call("write_file", path="scratch.txt", content="thinking about the task"),
    call("read_file", path="data.txt"),
    call("write_file", path="count.py",
         content="import collections, json\nwords = open('data.txt').read().split()\n"
                 "json.dump(collections.Counter(words), open('out.json', 'w'))\n"),
    call("run_shell", command="python count.py"),
    call("write_file", path="notes.md", content="Counting words for the report."),
    call("read_file", path="out.json"),
    {"content": "The word counts are in out.json."},
]


def seed_004_tools():
    files = {"data.txt": "The cat saw the dog. the end"}

    def run_shell(command):
        if command == "ls":
            return {"exit_code": 0, "stdout": "\n".join(sorted(files))}
        files["out.json"] = json.dumps({"The": 1, "the": 2, "cat": 1})
        return {"exit_code": 0, "stdout": ""}

    def write_file(path, content):
        files[path] = content
        return {"written": len(content)}

    return {"run_shell": run_shell, "write_file": write_file, "read_file": lambda path: files[path]}


def test_seed_004_resource_edges_and_no_strong_edge_from_the_notes(instrument, scripted):
    traced = instrument()
    client = scripted({"word counts": SEED_004})
    with otel_agent_trace.agent_run("coder"):
        run_loop(client, "Compute the word counts of data.txt", seed_004_tools())
    ls, scratch, read_data, write_count, run_count, notes, read_out = traced.named("execute_tool")
    strong = {"data", "resource"}
    assert relations_to(run_count, write_count) == ["resource"]
    assert relations_to(read_data, ls) == ["data"]  # data.txt came from the listing
    assert relations_to(write_count, ls) == ["data"]  # the script names data.txt
    assert [r for _, r in edges(notes) if r in strong] == []
    assert [r for _, r in edges(scratch) if r in strong] == []
    everyone = traced.named("execute_tool") + traced.named("agent_step")
    assert not any(t in (hexid(notes), hexid(scratch)) and r in strong for s in everyone for t, r in edges(s))
    assert [r for _, r in edges(read_out) if r in strong] == []  # out.json was written by the script, unseen


def test_declared_reads_and_writes_make_resource_edges_exact(instrument, scripted):
    traced = instrument()
    client = scripted({"cache": [call("put_blob", key="report-q3", body="x"), call("fetch", k="report-q3"),
                                 {"content": "done"}]})
    store = {}
    put = otel_agent_trace.tool(lambda key, body: store.update({key: body}) or {"stored": key}, name="put_blob",
                                writes="key")
    fetch = otel_agent_trace.tool(lambda k: store[k], name="fetch", reads="k")
    with otel_agent_trace.agent_run("cache"):
        run_loop(client, "cache the report", {"put_blob": put, "fetch": fetch})
    put_span, fetch_span = traced.named("execute_tool")
    assert relations_to(fetch_span, put_span) == ["data", "resource"]


# --- history truncation ----------------------------------------------------------------------------
def test_history_truncation_that_drops_the_system_constraint(instrument, scripted):
    traced = instrument()
    turns = [call("get_order", order_id=f"A{1000 + i}") for i in range(4)] + [{"content": "Refunded $500 in full."}]
    client = scripted({"*": turns}, stateful=True)  # the window drops the user's message too
    with otel_agent_trace.agent_run("windowed"):
        run_loop(client, "bulk refund for four orders", {"get_order": lambda order_id: {"order_id": order_id, "total": 125}},
                 keep_last=6)
    steps = traced.named("agent_step")
    dropped = [i for i, s in enumerate(steps) if attrs(s).get("agent_trace.error.type") == "context_dropped"]
    assert dropped == [3]  # 2 + 3*2 = 8 messages > 6: the system prompt falls out at step 3
    a = attrs(steps[3])
    assert phase(steps[3]) == "origin"
    assert "system" in a["agent_trace.context.dropped_roles"]
    system_hash = attrs(steps[0])["agent_trace.context.message_hashes"][0]
    assert system_hash in a["agent_trace.context.dropped_hashes"]
    assert [e.name for e in steps[3].events] == ["context_dropped"]
    # step 4 loses only old turns: an event, not an error
    assert phase(steps[4]) is None and [e.name for e in steps[4].events] == ["context_dropped"]


# --- fabrication -------------------------------------------------------------------------------------
def test_fabricated_amount_after_an_empty_result(instrument, scripted):
    traced = instrument()
    client = scripted({"refund A10O2": [call("lookup_order", order_id="A10O2"),
                                        {"content": "Your refund of $59.90 for order A10O2 is on its way."}]})
    with otel_agent_trace.agent_run("support"):
        run_loop(client, "Please refund A10O2", {"lookup_order": lambda order_id: []})
    final = traced.named("agent_step")[-1]
    a = attrs(final)
    assert (phase(final), a["agent_trace.error.type"]) == ("origin", "fabricated_value")
    assert a["agent_trace.fabricated.values"] == ("59.9",)  # A10O2 came from the user: not fabricated
    [event] = final.events
    assert event.name == "fabricated_value" and event.attributes["agent_trace.fabricated.values"] == ("59.9",)


def test_amounts_that_came_from_tools_are_not_fabricated(instrument, scripted):
    traced = instrument()
    client = scripted({"refund A1001": [call("calculate_refund", order_id="A1001"),
                                        {"content": "Your refund of $25.00 for order A1001 is on its way."}]})
    with otel_agent_trace.agent_run("support"):
        run_loop(client, "Please refund A1001", {"calculate_refund": lambda order_id: {"amount": 25.0}})
    final = traced.named("agent_step")[-1]
    assert "agent_trace.fabricated.values" not in attrs(final) and phase(final) is None


def test_an_amount_converted_at_a_rate_never_received_is_fabricated(instrument, scripted):
    """Converted at the rate the tool returned (0.92): computed. At another rate: made up."""
    traced = instrument()
    for answer, made_up in (("100 USD is 92.00 EUR.", None), ("100 USD is 95.00 EUR.", ("95",))):
        client = scripted({"100 USD": [call("get_rate", base="USD", quote="EUR"), {"content": answer}]})
        with otel_agent_trace.agent_run("fx"):
            run_loop(client, "what is 100 USD in EUR?", {"get_rate": lambda base, quote: {"rate": 0.92}})
        final = traced.named("agent_step")[-1]
        assert attrs(final).get("agent_trace.fabricated.values") == made_up, answer


@pytest.mark.parametrize("answer, received, fabricated", [
    ("It costs $19.99.", {"price": 19.987}, []),  # rounded to the digits stated
    ("It costs about $20.", {"price": 19.987}, []),
    ("It costs $19.90.", {"price": 19.987}, ["19.9"]),  # not a rounding of 19.987
    ("It costs $25.00.", {"price": 19.987}, ["25"]),
    ("Shipped on November 2, 2026 at 14:30.", {"at": "2026-11-02T14:30:00Z"}, []),  # parts of the timestamp
    ("Shipped on November 2, 2027 at 14:35.", {"at": "2026-11-02T14:30:00Z"}, ["14:35", "2027"]),
    ("Reference 2026.", {"id": "INV-2026-7"}, ["2026"]),  # only dates and times are split into parts
    ("It costs $1,299.", {"price": 1299.0}, []),  # thousands separators: one number, not 1 and 299
    ("About 1,234,567 people live there.", {"population": 1234567}, []),
    ("It costs $1,399.", {"price": 1299.0}, ["1399"]),
    ("Rooms 1,2,3 and 101, 202.", {"rooms": [101, 202]}, []),  # a list stays a list
])
def test_values_restated_from_what_was_received(answer, received, fabricated):
    """What the fabricated-value check (recorder and analyzer alike) accepts as restated, not made up."""
    assert detectors.fabricated_values(answer, detectors.distinctive_values(received)) == fabricated


@pytest.mark.parametrize("answer, received, fabricated", [
    ("100 USD is 92.00 EUR.", {"amount": 100, "rate": 0.92}, []),  # times a rate received
    ("100 USD is 95.00 EUR.", {"amount": 100, "rate": 0.92}, ["95"]),
    ("With tax the total is $270.00.", {"subtotal": 250.0, "tax_rate": "8%"}, []),  # plus a percentage
    ("With tax the total is $275.00.", {"subtotal": 250.0, "tax_rate": "8%"}, ["275"]),
    ("After the coupon it costs $68.00.", {"price": 80.0, "discount": 0.15}, []),  # less a share
    ("After the coupon it costs $61.00.", {"price": 80.0, "discount": 0.15}, ["61"]),
    ("That is 108.70 USD.", {"amount": 100, "rate": 0.92}, []),  # divided by it: 100 / 0.92
    ("Each of the 4 pays $30.00.", {"bill": 120.0}, []),  # a share of 2 to 12
    ("Each pays $35.00.", {"bill": 120.0}, ["35"]),
    ("100 USD is 92.00 EUR.", {"amount": 100, "v": "v0.92b", "ref": "A-0.92"}, ["92"]),  # not a factor: part of an id
])
def test_values_computed_with_a_factor_received(answer, received, fabricated):
    """A number computed from a known one with a factor the run received (`detectors.operand_values`:
    a rate, a share, a percentage) is computed, not made up; the same number off by more than its
    stated digits is not. The factors are known only beside the values (never distinctive)."""
    known = detectors.distinctive_values(received) | detectors.operand_values(received)
    assert detectors.fabricated_values(answer, known) == fabricated


@pytest.mark.parametrize("answer, received, fabricated", [
    ("Your cart comes to $60.75.", {"items": [{"sku": "A", "price": 12.5}, {"sku": "B", "price": 18.25},
                                              {"sku": "C", "price": 30.0}]}, []),  # a column's total
    ("Your cart comes to $43.25.", {"items": [{"sku": "A", "price": 12.5, "qty": 2},
                                              {"sku": "B", "price": 18.25, "qty": 1}]}, []),  # quantities x prices
    ("Your cart comes to $46.71 with tax.", {"items": [{"price": 12.5, "qty": 2}, {"price": 18.25, "qty": 1}],
                                             "tax": "8%"}, []),  # that total plus a percentage
    ("Your cart comes to $70.00.", {"items": [{"price": 12.5}, {"price": 18.25}, {"price": 30.0}]}, ["70"]),
    ("The mean score is 82.67.", {"scores": [72, 85, 91]}, []),  # a list's mean, to the digits stated
    ("The mean score is 84.5.", {"scores": [72, 85, 91]}, ["84.5"]),
])
def test_values_computed_from_a_list_received(answer, received, fabricated):
    """A total or a mean of a list the run received (`operand_values`' `t:` keys) is computed."""
    assert detectors.fabricated_values(answer, detectors.distinctive_values(received),
                                      detectors.Received([json.dumps(received)])) == fabricated


@pytest.mark.parametrize("answer, received, fabricated", [
    ("The week pays $1,687.50.", {"hourly": 45.0, "hours": 37.5}, []),  # the product of two
    ("The week pays $1,700.50.", {"hourly": 45.0, "hours": 37.5}, ["1700.5"]),
    ("That is $129.99.", {"amount_cents": 12999}, []),  # a hundredth
    ("With the discount it costs $68.00.", {"price": 80.0, "discount_percent": 15}, []),  # a field named a percentage
    ("With the discount it costs $68.00.", {"price": 80.0, "discount": 15}, ["68"]),  # 15 of what: not read as one
    ("It is $21.00.", {"zeros": [0, 0], "price": 20.0}, ["21"]),  # a zero total divides nothing
])
def test_values_computed_from_two_known_numbers(answer, received, fabricated):
    assert detectors.fabricated_values(answer, detectors.distinctive_values(received),
                                      detectors.Received([json.dumps(received)])) == fabricated


def test_the_factors_and_totals_are_read_only_for_an_answer_that_needs_them():
    received = detectors.Received(['{"amount": 100, "rate": 0.92}', '{"id": "A1001"}'])
    known = detectors.distinctive_values(received.texts[0]) | detectors.distinctive_values(received.texts[1])
    assert detectors.fabricated_values("Order A1001 is 100 USD.", known, received) == []
    assert received._read == 0  # every value known: nothing read
    assert detectors.fabricated_values("That is 92.00 EUR.", known, received) == [] and received._read == 2
    assert detectors.fabricated_values("That is 95.00 EUR.", known, received) == ["95"]
    big = detectors.Received(["x" * 100_000] * 20)  # each cut at MAX_SCAN_CHARS, none past RECEIVED_TEXT_CHARS
    limit = detectors.RECEIVED_TEXT_CHARS
    assert len(big.texts) == limit // detectors.MAX_SCAN_CHARS and big.chars == limit


@pytest.mark.parametrize("answer, received, fabricated", [
    ("Return it by 2026-12-17.", {"delivered": "2026-11-02", "return_window_days": 45}, []),  # days received
    ("Return it by 2026-12-02.", {"delivered": "2026-11-02"}, []),  # a common period: 30 days
    ("It renews on 2027-01-15.", {"started": "2026-01-15"}, []),  # a year later, to the day
    ("Expect it by 2026-11-09.", {"shipped": "2026-11-02"}, []),  # a week
    ("Expect it by 2026-11-13.", {"shipped": "2026-11-02"}, ["2026-11-13"]),  # 11 days: from nowhere
    ("It shipped on 2026-11-03.", {"shipped": "2026-11-02"}, ["2026-11-03"]),
])
def test_days_computed_from_a_day_received(answer, received, fabricated):
    """A day a known day plus a common period, a number of days received, or whole months or
    years (`detectors._date_after`) is computed, not made up."""
    assert detectors.fabricated_values(answer, detectors.distinctive_values(received)) == fabricated


@pytest.mark.parametrize("answer, received, fabricated", [
    ("It is 72°F (22.2°C).", {"temp_f": 72}, []),  # a unit is no id: 72°F is 72; Fahrenheit to Celsius
    ("It is 72°F (25.0°C).", {"temp_f": 72}, ["25"]),
    ("It is 22°C, or 71.6°F.", {"celsius": 22}, []),  # and back
    ("The route is 42.2 km (26.2 miles).", {"distance_km": 42.2}, []),  # a common unit's conversion
    ("The route is 42.2 km (29.5 miles).", {"distance_km": 42.2}, ["29.5"]),
    ("It weighs 25 kg (55.1 lb).", {"kg": 25}, []),
    ("The call took 150ms.", {"latency_ms": 150}, []),
    ("The call took 180ms.", {"latency_ms": 150}, ["180"]),
    ("The 2nd cheapest is Hotel Bristol.", [{"name": "Hotel Thon"}, {"name": "Hotel Bristol"}], []),  # a small ordinal
    ("It finished 47th.", {"rank": 47}, []),
    ("It finished 52nd.", {"rank": 47}, ["52"]),
    ("Apartment 12B.", {"unit": "12B"}, []),  # not a unit: an id stays
])
def test_a_number_with_a_unit_or_an_ordinal_is_that_number(answer, received, fabricated):
    assert detectors.fabricated_values(answer, detectors.distinctive_values(received)) == fabricated
    assert [detectors.value_key(v) for v in ("72°F", "40th", "150ms", "2nd", "30M", "12B")] == [
        "n:72", "n:40", "n:150", None, "n:30e6", "s:12B"]


@pytest.mark.parametrize("answer, received, fabricated", [
    ("About 12.4k stars.", {"stars": 12391}, []),  # a magnitude's suffix, rounded to its digits
    ("About 12.9k stars.", {"stars": 12391}, ["12.9k"]),
    ("Revenue was $48.7 million.", {"revenue": 48713000}, []),  # in words
    ("Revenue was $52 million.", {"revenue": 48713000}, ["52M"]),
    ("They are at least 142 thousand years old.", "beads at least 142 thousand years old", []),  # as written
    ("It has 30M views.", {"views": "30M"}, []),
    ("Ticket 4521 is closed.", {"key": "GH-4521"}, []),  # the number of a code
    ("Ticket 4522 is closed.", {"key": "GH-4521"}, ["4522"]),
    ("It starts at 2:30 PM.", {"start": "2026-12-07T14:30:00"}, []),  # a 12-hour clock
    ("It starts at 3:30 PM.", {"start": "2026-12-07T14:30:00"}, ["3:30"]),
])
def test_a_number_rounded_to_a_magnitude_a_codes_number_and_a_12_hour_time(answer, received, fabricated):
    assert detectors.fabricated_values(answer, detectors.distinctive_values(received)) == fabricated


@pytest.mark.parametrize("answer, received, fabricated", [
    ("It shipped on 2026-12-06.", {"shipped_at": 1796558400}, []),  # Unix seconds: 2026-12-06T12:00Z
    ("It shipped on 2026-12-07.", {"shipped_at": 1796558400}, []),  # the day in a time zone east of UTC
    ("It shipped on 2026-12-09.", {"shipped_at": 1796558400}, ["2026-12-09"]),
    ("It was charged on 2026-11-30.", {"created_ms": 1796040000000}, []),  # milliseconds
    ("It was charged on 2026-11-30.", {"amount": 1796040000}, []),  # (any number in the range reads as one)
    ("It was charged on 2026-11-30.", {"amount": 17960400}, ["2026-11-30"]),  # out of the range: no day
])
def test_a_day_read_from_a_unix_timestamp_received(answer, received, fabricated):
    assert detectors.fabricated_values(answer, detectors.distinctive_values(received)) == fabricated


def test_a_payload_built_in_code_with_nan_or_infinity_gives_no_total():
    assert detectors.operand_values({"x": [float("nan"), 1.0], "y": [1e308, 1e308]}) == {"o:1"}
    received = detectors.Received(['{"a": [1e308, 1e308]}', '{"n": 11}'])
    assert detectors.fabricated_values("It is 55.", detectors.distinctive_values('{"n": 11}'), received) == []
    assert detectors.fabricated_values("It is 123.45.", detectors.distinctive_values('{"n": 11}'), received) == ["123.45"]


def test_operand_values_are_small_fractions_and_percentages():
    text = 'rate 0.92, tax 8%, discount .15; 12.5 kg; 3 items; version v1.2; "(0.5)" and 7.'
    assert detectors.operand_values(text) == {"o:0.92", "o:0.08", "o:0.15", "o:0.5"}
    assert detectors.operand_values({"rate": 0.92, "n": 3, "big": 12.5, "pct": "8.5%"}) == {"o:0.92", "o:0.085"}
    assert detectors.operand_values("no factor here: A1001, 2026-11-02") == frozenset()
    assert not (detectors.distinctive_values(text) & detectors.operand_values(text))  # never distinctive


# --- budgets -----------------------------------------------------------------------------------------
LOOPING = [call("track", order_id="A1004")] * 8


def test_budget_record_marks_the_run_and_lets_it_go_on(instrument, scripted):
    traced = instrument(max_steps=3, budget_action="record")
    client = scripted({"track": LOOPING})
    with pytest.raises(RuntimeError, match="no answer"):
        with otel_agent_trace.agent_run("tracker"):
            run_loop(client, "track A1004", {"track": lambda order_id: {"status": "processing"}}, max_turns=6)
    [run] = traced.runs()
    assert len(traced.named("agent_step")) == 6
    a = attrs(run)
    assert a["agent_trace.budget.exceeded"] == "steps"
    assert [e.name for e in run.events].count("budget_exceeded") == 1
    budget_event = next(e for e in run.events if e.name == "budget_exceeded")
    assert budget_event.attributes["agent_trace.budget.used"] == 3.0
    # the run still failed later on its own: critical stays, the final error type is the exception
    assert phase(run) == "critical" and run.status.status_code is StatusCode.ERROR


def test_budget_raise_stops_the_run_at_the_next_llm_call(instrument, scripted, demo_server):
    traced = instrument(max_steps=3, budget_action="raise")
    client = scripted({"track": LOOPING})
    before = len(demo_server.requests)
    with pytest.raises(otel_agent_trace.AgentBudgetExceeded) as raised:
        with otel_agent_trace.agent_run("tracker"):
            run_loop(client, "track A1004", {"track": lambda order_id: {"status": "processing"}}, max_turns=6)
    assert (raised.value.reason, raised.value.limit, raised.value.used) == ("steps", 3, 3)
    assert len(demo_server.requests) == before  # (another server) and ours: the 4th call was never sent
    [run] = traced.runs()
    assert len(traced.named("agent_step")) == 3
    assert (phase(run), attrs(run)["agent_trace.error.type"]) == ("critical", "budget_exceeded")
    assert run.status.status_code is StatusCode.ERROR
    assert [e.name for e in run.events] == ["budget_exceeded", "exception"]


def test_budget_raise_ends_an_implicit_run_critical(instrument, scripted):
    traced = instrument(max_tokens=1, budget_action="raise")
    client = scripted({"track": LOOPING})
    with pytest.raises(otel_agent_trace.AgentBudgetExceeded):
        run_loop(client, "track A1004", {"track": lambda order_id: {"status": "processing"}}, max_turns=6)
    [run] = traced.runs()
    assert attrs(run)["agent_trace.budget.exceeded"] == "tokens"
    assert attrs(run)["agent_trace.error.type"] == "budget_exceeded"


# --- decisions checked against the declared tools ----------------------------------------------------
def test_unknown_tool_and_schema_violating_arguments(instrument, scripted):
    traced = instrument()
    client = scripted({"check": [call("lookup_ordr", order_id="A1"), call("lookup_order", order_id=1001),
                                 call("lookup_order", order_id="A1001"), {"content": "ok"}]})
    schemas = [schema_for("lookup_order", {"order_id": {"type": "string"}}, ["order_id"])]
    tools = {"lookup_order": lambda order_id: {"order_id": order_id}}
    with otel_agent_trace.agent_run("strict"):
        run_loop(client, "check A1001", tools, schemas=schemas)
    steps = traced.named("agent_step")
    assert [attrs(s).get("agent_trace.error.type") for s in steps] == ["unknown_tool", "invalid_arguments", None, None]
    assert steps[1].events[0].attributes["agent_trace.validation.errors"] == ("$.order_id: expected string, got int",)
    unknown = tool_by_step(traced, 0)[0]  # the loop answered with a KeyError message
    assert attrs(unknown)["agent_trace.tool.outcome"] == "error_result"
    assert phase(unknown) == "propagate"  # decided by a step whose decision was already wrong


def test_final_schema_from_the_environment_variable(instrument, scripted, tmp_path):
    schema_file = tmp_path / "final.json"
    schema_file.write_text(json.dumps({"type": "object", "required": ["amount"],
                                       "properties": {"amount": {"type": "number"}}}))
    traced = instrument(final_schema=str(schema_file))
    client = scripted({"json answer": [{"content": '{"status": "refunded"}'}]})
    with otel_agent_trace.agent_run("structured"):
        run_loop(client, "json answer please", {})
    [run] = traced.runs()
    assert attrs(run)["agent_trace.error.type"] == "final_answer_invalid"
    assert "missing required property 'amount'" in run.status.description
