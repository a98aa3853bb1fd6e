"""Detectors find every format of every kind, and leave ids, hashes, times and counts alone."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from processor_corpus import DETECTORS, sensitive_part

from otel_agent_trace.processor.detectors import card_ok, cn_id_ok, find_all, iban_ok


@settings(max_examples=50, derandomize=True, deadline=None, database=None)
@given(st.integers(0, 2**32), st.sampled_from(["{}", "x {} y", "({})", '"{}"', "ip={};", "ip: {};", "{}\nnext", "<{}>"]))
def test_every_detector_finds_the_whole_value(seed, template):
    rnd = random.Random(seed)
    for name, gen in DETECTORS.items():
        for _ in range(20):
            value = gen(rnd)
            text = template.format(value)
            found = find_all(text)
            assert len(found) == 1, (name, text, found)
            hit = text[found[0].start:found[0].end]
            secret = sensitive_part(value)
            # the whole value, at most with a bracket of the template around it
            assert secret in hit and set(hit.replace(secret, "", 1)) <= set("() "), (name, text, hit)


@pytest.mark.parametrize("text", [
    "2026-11-30T21:21:05.123456Z", "12:30:45", "1764537665", "1764537665123", "1764537665123456789",
    "opentelemetry 1.45.2", "v1.2.3", "a3f91381234567890bcde0123456789abcdef0123456789abcdef012345678",
    "8b5c2f0e6d9a4b1c", "123e4567-e89b-12d3-a456-426614174000", "input_tokens=1234 output_tokens=56",
    "order ORD-20261130-0001 total 129.99 qty 3", "call_abc123def456", "chatcmpl-9x8y7z6w5v4u",
    "page 12 of 345", "port 8080", "3.14159265358979", "Token: the model read 4096 tokens",
    "a basic understanding of bearer instruments", "sk-", "HTTP/1.1 200 OK", "10.5 mm", "RFC 7231",
])
def test_benign_text_is_left_alone(text):
    assert find_all(text) == []


def test_validators():
    assert card_ok("4111111111111111") and not card_ok("4111111111111112")
    assert not card_ok("1764537665123")  # a millisecond timestamp passing Luhn: no issuer prefix
    assert cn_id_ok("11010519491231002X") and not cn_id_ok("110105194912310021")
    assert iban_ok("DE89370400440532013000") and not iban_ok("DE89370400440532013001")


def test_invalid_checksums_are_not_redacted():
    rnd = random.Random(3)
    for _ in range(200):
        value = DETECTORS["card"](rnd).replace(" ", "").replace("-", "")
        bad = value[:-1] + str((int(value[-1]) + 1) % 10)
        assert find_all(f"n {bad} n") == [] or len(bad) < 13


def test_fast_scanner_finds_exactly_what_pure_re_finds():
    fast_scan = pytest.importorskip("otel_agent_trace.processor.fast_scan")
    pytest.importorskip("hyperscan")
    fast = fast_scan.FastScanner()
    rnd = random.Random(11)
    filler = ["the", "order", "2026-11-30 12:30:45", "v1.2.3", "Token: 4096", "key", "std::vector", "ok"]
    for _ in range(3000):
        parts = [rnd.choice(filler) for _ in range(rnd.randint(0, 6))]
        for _ in range(rnd.randint(1, 3)):
            parts.insert(rnd.randint(0, len(parts)), rnd.choice(list(DETECTORS.values()))(rnd))
        parts.append(rnd.choice(["api_key=abcd1234", "password: hunter22", "Bearer abcdefghij0123456789", "x"]))
        text = rnd.choice([" ", ", ", "\n", " | "]).join(parts)
        assert fast(text) == find_all(text), text
    assert fast("naïve café +86 138 1234 5678 ünïcode") == find_all("naïve café +86 138 1234 5678 ünïcode")
