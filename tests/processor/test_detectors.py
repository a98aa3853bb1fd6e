"""Detectors find every format of every kind, and leave ids, hashes, times and counts alone."""

import random
import re
import unicodedata
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from processor_corpus import DETECTORS, sensitive_part

from otel_agent_trace.processor.pii_detectors import IBAN_BBAN, card_ok, cn_id_ok, find_all, fold, iban_ok
from otel_agent_trace.processor.redaction import Redactor


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


# --- non-ASCII digits and full-width forms ----------------------------------------------------
def _scanners():
    out = [find_all]
    try:
        from otel_agent_trace.processor.fast_scan import FastScanner

        out.append(FastScanner())
    except ImportError:  # pragma: no cover - no hyperscan wheel here
        pass
    return out


SCANNERS = _scanners()


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(st.text())
def test_fold_keeps_every_offset_and_leaves_ascii_alone(text):
    folded = fold(text)
    assert len(folded) == len(text)
    for a, b in zip(text, folded):
        assert a == b or (b.isascii() and (a.isdecimal() or "\uff01" <= a <= "\uff5e" or a == "\u3000"))
    assert fold(text.encode("ascii", "ignore").decode()) == text.encode("ascii", "ignore").decode()


def test_fold_maps_every_unicode_digit_and_full_width_form():
    for code in range(0x110000):
        ch = chr(code)
        if ch.isdecimal():
            assert fold(ch) == str(unicodedata.decimal(ch)), hex(code)
    assert fold("".join(map(chr, range(0xFF01, 0xFF5F)))) == "".join(map(chr, range(0x21, 0x7F)))
    assert fold("\u3000") == " "


@pytest.mark.parametrize("scan", SCANNERS, ids=lambda s: type(s).__name__)
@pytest.mark.parametrize(("text", "kind", "ascii"), [
    ("１３８００１３８０００", "PHONE", "13800138000"),
    ("+86\u3000138\u30001234\u30005678", "PHONE", "+86 138 1234 5678"),
    ("١٣٨١٢٣٤٥٦٧٨", "PHONE", "13812345678"),  # Arabic-Indic
    ("+४४ २० ७९४६ ०९५८", "PHONE", "+44 20 7946 0958"),  # Devanagari
    ("ｊｏｈｎ＠ｅｘａｍｐｌｅ．ｃｏｍ", "EMAIL", "john@example.com"),
    ("４１１１ １１１１ １１１１ １１１１", "CARD", "4111111111111111"),
    ("１１０１０５１９４９１２３１００２Ｘ", "CN_ID", "11010519491231002X"),
    ("ｄｅ８９ ３７０４ ００４４ ０５３２ ０１３０ ００", "IBAN", "DE89370400440532013000"),
    ("de89 3704 0044 0532 0130 00", "IBAN", "DE89370400440532013000"),
])
def test_folded_value_is_found_with_the_pseudonym_of_its_ascii_form(scan, text, kind, ascii):
    for template in ("{}", "call {} now", "（{}）"):
        found = scan(template.format(text))
        assert [f.kind for f in found] == [kind]
        hit = template.format(text)[found[0].start:found[0].end]
        # the whole value, at most with a bracket of the template around it (as for ASCII)
        assert text in hit and set(hit.replace(text, "", 1)) <= set("（）"), hit
    norm = scan(text)[0].norm
    assert norm == scan(ascii)[0].norm
    red = Redactor(key="k")
    assert red.text(f"x {text} y") == red.text(f"x {ascii} y")


# --- IBANs in any case ------------------------------------------------------------------------
_KNOWN_IBANS = [  # examples of the IBAN registry
    "DE89370400440532013000", "GB29NWBK60161331926819", "FR1420041010050500013M02606", "NL91ABNA0417164300",
    "BE68539007547034", "CH9300762011623852957", "ES9121000418450200051332", "IT60X0542811101000000123456",
    "NO9386011117947", "AT611904300234573201", "PL61109010140000071219812874", "SE4550000000058398257466",
]


def _valid_iban(country: str, bban: str) -> str:
    check = 98 - int("".join(str(int(c, 36)) for c in bban + country + "00")) % 97
    return f"{country}{check:02d}{bban}"


def test_validators_any_case():
    for value in _KNOWN_IBANS:
        assert iban_ok(value) and iban_ok(value.lower()) and iban_ok(value[:2] + value[2:].lower())
        bad = value[:-1] + str((int(value[-1], 36) + 1) % 10)
        assert not iban_ok(bad.lower())
    assert len(IBAN_BBAN) == 89
    # check digits right, but lower case outside the registry: not enough (in capitals it is)
    assert not iban_ok(_valid_iban("DE", "8" * 17).lower()) and iban_ok(_valid_iban("DE", "8" * 17))
    assert not iban_ok(_valid_iban("XX", "8" * 18).lower()) and iban_ok(_valid_iban("XX", "8" * 18))
    assert not iban_ok(_valid_iban("DE", "abcdef" + "8" * 12).lower())  # Germany's BBAN is 18 digits
    assert iban_ok(_valid_iban("DE", "8" * 18).lower())


_BBAN_ALPHABET = {"n": "0123456789", "a": "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "c": "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"}


@st.composite
def any_case_ibans(draw):
    country = draw(st.sampled_from(sorted(IBAN_BBAN)))
    bban = ""
    for n, kind in re.findall(r"(\d+)([nac])", IBAN_BBAN[country]):
        bban += draw(st.text(alphabet=_BBAN_ALPHABET[kind], min_size=int(n), max_size=int(n)))
    value = _valid_iban(country, bban)
    lower = draw(st.lists(st.booleans(), min_size=len(value), max_size=len(value)))
    value = "".join(c.lower() if low else c for c, low in zip(value, lower))
    if draw(st.booleans()):
        value = " ".join(value[i:i + 4] for i in range(0, len(value), 4))
    return value


@pytest.mark.parametrize("scan", SCANNERS, ids=lambda s: type(s).__name__)
@settings(max_examples=400, derandomize=True, deadline=None, database=None)
@given(value=any_case_ibans(), template=st.sampled_from(["{}", "iban {} now", "({})", '"{}"', "到{}。", "{} x"]))
def test_lowercase_and_mixed_case_ibans_of_every_country_are_found(scan, value, template):
    text = template.format(value)
    found = scan(text)
    assert [(f.kind, text[f.start:f.end], f.norm) for f in found] == [
        ("IBAN", value, value.replace(" ", "").upper())], text


@pytest.mark.parametrize("scan", SCANNERS, ids=lambda s: type(s).__name__)
@settings(max_examples=600, derandomize=True, deadline=None, database=None)
@given(token=st.one_of(
    st.text(alphabet="0123456789abcdef", min_size=1, max_size=80),
    st.uuids().map(str), st.uuids().map(lambda u: u.hex),
    st.binary(min_size=4, max_size=40).map(bytes.hex),
), template=st.sampled_from(["{}", "sha {} ok", "id={}", '{{"hash": "{}"}}', "{} {}"]))
def test_hex_strings_and_uuids_are_never_ibans(scan, token, template):
    assert [f for f in scan(template.format(token, token)) if f.kind == "IBAN"] == []


def test_hex_strings_and_uuids_in_bulk_are_never_ibans():
    # 200k random hex ids, hashes and uuids: a lowercase hex token is an IBAN only if it has a
    # registry country's exact length, a BBAN of the right format and the check digits
    rnd = random.Random(7)
    for _ in range(20_000):
        tokens = [f"{rnd.getrandbits(64):016x}", f"{rnd.getrandbits(128):032x}", str(uuid.UUID(int=rnd.getrandbits(128))),
                  f"{rnd.getrandbits(4 * 22):022x}", f"{rnd.getrandbits(4 * 20):020x}", f"{rnd.getrandbits(4 * 24):024x}",
                  f"{rnd.getrandbits(4 * 23):023x}", f"{rnd.getrandbits(256):064x}", f"{rnd.getrandbits(4 * 18):018x}",
                  "be" + "".join(rnd.choices("0123456789abcdef", k=14))]
        assert [f for f in find_all(" ".join(tokens)) if f.kind == "IBAN"] == []


@pytest.mark.parametrize("scan", SCANNERS, ids=lambda s: type(s).__name__)
@pytest.mark.parametrize(("text", "kind", "value"), [
    ("手机号13812345678谢谢", "PHONE", "13812345678"),
    ("电话+86 138 1234 5678请回", "PHONE", "+86 138 1234 5678"),
    ("邮箱john@example.com谢谢", "EMAIL", "john@example.com"),
    ("卡号4111111111111111结束", "CARD", "4111111111111111"),
    ("身份证11010519491231002X号", "CN_ID", "11010519491231002X"),
    ("地址192.168.1.1的", "IP", "192.168.1.1"),
    ("地址2001:db8::1的", "IP", "2001:db8::1"),
    ("密钥sk-abcdefghijklmnop1234567890结束", "SECRET", "sk-abcdefghijklmnop1234567890"),
    ("номер4111111111111111", "CARD", "4111111111111111"),
])
def test_a_value_glued_to_another_script_is_found(scan, text, kind, value):
    """Word edges are ASCII: Chinese or Cyrillic letters around a value do not hide it."""
    found = scan(text)
    assert [(f.kind, text[f.start:f.end]) for f in found] == [(kind, value)]


def test_us_ssn_is_found_when_the_ssa_could_issue_it():
    from otel_agent_trace.processor.pii_detectors import US_SSN, find_all

    def kinds(text):
        return [(f.kind, f.norm) for f in find_all(text)]

    assert kinds("my SSN is 123-45-6789.") == [(US_SSN, "123456789")]  # issue 31: it reached the file in clear
    assert kinds('{"ssn": "078 05 1120"}') == [(US_SSN, "078051120")]
    for invalid in ("000-12-3456", "666-12-3456", "912-34-5678", "123-00-4567", "123-45-0000"):
        assert kinds(invalid) == [], invalid
    for other in ("2026-11-30", "94107-1234", "ORD-123-45-6789", "123-45-67890", "123-45 6789", "123456789"):
        assert all(k != US_SSN for k, _ in kinds(other)), other


def test_uk_national_insurance_number_with_an_issued_prefix():
    from otel_agent_trace.processor.pii_detectors import UK_NINO, find_all

    def kinds(text):
        return [(f.kind, f.norm) for f in find_all(text)]

    assert kinds("NI number AB 12 34 56 C.") == [(UK_NINO, "AB123456C")]
    assert kinds('{"nino": "JG103759A"}') == [(UK_NINO, "JG103759A")]
    for other in ("QQ123456C", "GB123456A", "DA123456A", "AO123456A", "AB123456E", "ab123456c", "XAB123456C"):
        assert all(k != UK_NINO for k, _ in kinds(other)), other


def test_canadian_sin_with_a_valid_first_digit_and_luhn():
    from otel_agent_trace.processor.pii_detectors import CA_SIN, PHONE, find_all
    from otel_agent_trace.processor.fast_scan import FastScanner

    for scan in (find_all, FastScanner()):
        def kinds(text):
            return [(f.kind, f.norm) for f in scan(text)]

        assert kinds("my SIN is 130 692 544.") == [(CA_SIN, "130692544")]
        assert kinds('{"sin": "130-692-544"}') == [(CA_SIN, "130692544")]
        assert kinds("SIN 930-692-546") == [(CA_SIN, "930692546")]  # 9: a temporary resident's
        # Luhn fails; 0 and 8 are never assigned (the government's example 046 454 286); mixed,
        # dotted or no separators; inside a longer code
        for other in ("130 692 545", "046 454 286", "830 692 547", "130-692 544", "130.692.544", "130692544",
                      "ORD-130-692-544", "130-692-5440"):
            assert all(k != CA_SIN for k, _ in kinds(other)), other
        assert kinds("call 415-555-2671") == [(PHONE, "14155552671")]  # 3-3-4: a phone, not a SIN


def test_indian_aadhaar_number_with_its_verhoeff_check_digit():
    from otel_agent_trace.processor.pii_detectors import CARD, IN_AADHAAR, find_all, verhoeff_ok
    from otel_agent_trace.processor.fast_scan import FastScanner

    assert verhoeff_ok("2363") and not verhoeff_ok("2364")  # the textbook example
    for scan in (find_all, FastScanner()):
        def kinds(text):
            return [(f.kind, f.norm) for f in scan(text)]

        assert kinds("Aadhaar 2345 6789 0124.") == [(IN_AADHAAR, "234567890124")]
        assert kinds('{"aadhaar": "2345-6789-0124"}') == [(IN_AADHAAR, "234567890124")]
        # a wrong check digit, two digits swapped, first digit 0/1, mixed separators, bare, in a code
        for other in ("2345 6789 0125", "2345 6789 0142", "1345 6789 0124", "2345-6789 0124", "234567890124",
                      "INV-2345-6789-0124"):
            assert all(k != IN_AADHAAR for k, _ in kinds(other)), other
        # a card in fours stays a card (its 16 digits are read first)
        assert kinds("card 4111 1111 1111 1111") == [(CARD, "4111111111111111")]
