"""Failures that raise nothing, recorded by our own recorder (tests/silent_corpus.py): each case
through the real openai and anthropic clients against the scripted server, analysed by the CLI
with `--expected` (the expected answers, keyed by trace id), as a user with an eval's answers
runs it. bench/bench_silent.py prints the table per kind of mistake; this pins what it measured."""

from __future__ import annotations

import pytest
from scenario_agent import analyze_json
from silent_corpus import CORPUS, record_all

# the cases whose decisive step the report names first, through both clients (bench_silent.py's
# "ok" rows); the others are named further down the list or not at all, as bench/README.md says
NAMED_FIRST = {
    "misread price", "stock made up after a skipped lookup", "a wrong sum", "balance answered without a lookup",
    "a ship date one day off", "a count over three pages, one page left out", "a typo in the order id",
    "an email address mistyped in the second call", "a slot that was not offered", "the wrong team looked up",
    "stopped after the first page", "a cursor left unread", "the subtotal given as the total",
    "Celsius read as Fahrenheit", "a price before the discount", "the order date given as the ship date",
    "the dearer item called cheaper", "an email claimed but never sent",
    # held out (written after the signals): 8 of 12
    "a flight number mistyped", "an average taken over two of three readings", "a hotel booked for the next night",
    "a stock figure from before the refresh", "a port number changed in the answer",
    "a cancellation claimed, never made", "a total over the first page of invoices", "a rate divided instead of multiplied",
}
# no place at all: the quantity is 3 x 10, a product the arithmetic rules allow; "Ana won ...": a
# one-word name opening a sentence is no answer value (it may be any sentence's first word)
NOTHING_NAMED = {"ten times the quantity ordered", "the runner-up named the winner"}


@pytest.fixture(scope="module", params=["openai", "anthropic"])
def runs(request, tmp_path_factory):
    traces, expected, recorded = record_all(str(tmp_path_factory.mktemp(request.param)), [request.param])
    report = analyze_json(traces, "--expected", expected)
    return {recorded[run["trace_id"]][0]: run for run in report["runs"]}


def test_every_run_is_failed_by_its_expected_answer(runs):
    assert set(runs) == set(CORPUS)
    for name, run in runs.items():
        assert run["status"] == "failed", name
        assert any(e.startswith("wrong answer: expected") for e in run["evidence"]), (name, run["evidence"])
    assert {name for name, run in runs.items() if not run["errors"]} == NOTHING_NAMED


def test_the_decisive_step_is_named_first(runs):
    named = {name: (run["origin"] or {}).get("step_index") for name, run in runs.items()}
    assert {name for name in CORPUS if named[name] == CORPUS[name].gold_step} == NAMED_FIRST


def _reason(run):
    return next(e["reason"] for e in run["errors"] if e["span_id"] == run["origin"]["span_id"])


def test_each_place_says_why(runs):
    assert _reason(runs["a typo in the order id"]).endswith("called lookup_order with A1020, which no earlier input, "
                                                           "instruction or result contained")
    assert "send_email with ana@exmple.com" in _reason(runs["an email address mistyped in the second call"])
    dropped = runs["the subtotal given as the total"]
    assert dropped["origin"]["error_type"] == "answer_dropped" and dropped["bug_class"] == "model_decision"
    assert _reason(dropped).startswith('the expected answer "$108.00" came back in the result of execute_tool '
                                       "get_invoice; agent_step 1, which read it, answers otherwise")
    assert _reason(runs["an email claimed but never sent"]) == (
        "agent_step 1 says 'Order A1 is refunded and the customer has been emailed.', but send_email, the tool "
        "that does it, was never called")
    celsius = _reason(runs["Celsius read as Fahrenheit"])
    assert "'22' first appears in the result of execute_tool get_weather" in celsius
    assert celsius.endswith("agent_step 1 states it as the answer")
