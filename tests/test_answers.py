"""The answer comparison (`otel_agent_trace/answers.py`) that `analyze --expected` and `regress` share."""

from __future__ import annotations

import pytest

from otel_agent_trace.answers import as_number, check, compare, normalise, numbers


def test_text_is_compared_normalised():
    assert normalise("  The Eiffel   Tower! ") == "eiffel tower"
    assert compare("Eiffel Tower", "the eiffel tower.").ok
    assert not compare("Eiffel Tower", "Tour Eiffel").ok
    assert compare("Ｐａｒｉｓ", "paris").ok  # NFKC: full-width letters
    assert compare("Eiffel Tower", "the eiffel tower.").how == "text"


def test_numbers_are_read_with_separators_signs_and_currency():
    assert numbers("The refund is $1,234.50 (was -3, or 12%)") == [1234.5, -3.0, 12.0]
    assert numbers("order A1001, v2 and 2.0.") == [2.0]  # a number inside an identifier is not one
    assert as_number("42") == 42.0 and as_number(" $25.00 ") == 25.0
    assert as_number("42 apples") is None and as_number(True) is None


def test_numbers_match_within_a_tolerance():
    assert compare(25, "Your refund of $25.00 is on its way").ok
    assert compare("25", "It is 25.0000001").ok  # default: relative 1e-6
    assert not compare(25, "Your refund of $20.00 is on its way").ok
    assert compare(3.14, "pi is about 3.1416", tolerance=0.01).ok
    assert not compare(3.14, "pi is about 3.1416", tolerance=0.0001).ok
    assert compare(25, "It is 25").how == "number"


def test_contains_and_regex():
    assert compare("refund approved", "Good news: your REFUND Approved today", "contains").ok
    assert not compare("refund approved", "refund denied", "contains").ok
    assert not compare("cat", "concatenate", "contains").ok  # whole words
    assert compare(r"A\d{4}", "order A1001 shipped", "regex").ok
    assert not compare(r"^A\d{4}$", "order A1001 shipped", "regex").ok


def test_a_list_accepts_any_alternative_and_evidence_names_both():
    assert compare(["NYC", "New York City"], "new york city").ok
    verdict = compare(["NYC", "New York City"], "Boston")
    assert not verdict.ok
    assert verdict.evidence == 'expected "NYC" or "New York City", got "Boston"'


def test_no_answer_never_matches():
    verdict = compare("x", None)
    assert not verdict.ok and verdict.evidence == 'expected "x", got no answer'


def test_evidence_of_a_wrong_number():
    assert compare(20, "Your refund of $25.00").evidence == 'expected 20, got "Your refund of $25.00"'


@pytest.mark.parametrize("expected, how, tolerance, message", [
    ("x", "fuzzy", None, "unknown match"),
    ("(", "regex", None, "bad regex"),
    ("many", "number", None, "not a number"),
    ({"a": 1}, "auto", None, "text or a number"),
    ([], "auto", None, "empty list"),
    (1, "number", -1, "tolerance"),
])
def test_unusable_expectations_are_refused_with_a_reason(expected, how, tolerance, message):
    with pytest.raises(ValueError, match=message):
        check(expected, how, tolerance)
