"""Value detectors: find phone numbers, emails, cards, CN ids, IPs, IBANs and secrets in text.

Why not one big regex: naive `re` over six alternated patterns costs ~4.4 ms per 8 KB (NOTES.md),
because every position tries every alternative and the lookbehinds defeat `re`'s fast scan.
Here each family is found by the cheapest anchor it has, then confirmed by a precise pattern on a
short window and a validator (Luhn, ISO 7064 checksum, mod-97, `ipaddress`):

- numbers (phones, cards, CN ids, IPv4): one candidate scan whose pattern starts with a character
  class, so `re` skips to the next digit at C speed; the precise patterns only run inside the
  (short) candidate runs;
- emails and IPv6: only around each `@` / `:` found by `str.find`;
- secrets: only when their literal prefix (`sk-`, `AKIA`, `eyJ`, `bearer`...) is `in` the text;
- IBANs: two ASCII letters at a word start followed by two digits (`\b[A-Za-z]{2}[0-9]{2}`), then
  the country's registry length and BBAN format, and mod-97.

Text that is not ASCII is first folded (`fold`): full-width forms, the ideographic space and every
Unicode decimal digit become their ASCII character, one character for one, so offsets stay valid
and `１３８００１３８０００` gets the pseudonym of `13800138000`.

The result is ~0.1 ms per 8 KB of new prose in pure Python (see bench/bench_redaction.py), so no
compiled regex engine is needed; user rules (`redaction_rules.py`) run as given.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from otel_agent_trace.vocabulary import CA_SIN, CARD, CN_ID, EMAIL, IBAN, IN_AADHAAR, IP, PHONE, SECRET, UK_NINO, US_SSN


@dataclass(frozen=True)
class Found:
    """One sensitive value: text[start:end] of a kind, with the normalized form its pseudonym hashes."""

    start: int
    end: int
    kind: str
    norm: str


# --- folding --------------------------------------------------------------------------------
def _fold_char(ch: str) -> str:
    code = ord(ch)
    if 0xFF01 <= code <= 0xFF5E:
        return chr(code - 0xFEE0)
    if code == 0x3000:
        return " "
    return chr(48 + unicodedata.decimal(ch))


@functools.cache
def _foldable() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Character classes of what `fold` replaces: full-width ASCII variants (U+FF01-U+FF5E), the
    ideographic space, and the decimal digits (category Nd) of every script but ASCII; one for
    the BMP, one for the astral planes (a class mixing both is ~10x slower to scan). Built on the
    first non-ASCII text from this Python's `unicodedata` (~8 ms; no Nd exists past plane 1)."""
    ranges: list[list[int]] = []
    for code in range(0x80, 0x20000):
        if chr(code).isdecimal():
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    bmp = "".join(f"{chr(a)}-{chr(b)}" for a, b in ranges if b <= 0xFFFF)
    astral = "".join(f"{chr(a)}-{chr(b)}" for a, b in ranges if a > 0xFFFF)
    return re.compile(f"[\u3000\uff01-\uff5e{bmp}]"), re.compile(f"[{astral}]")


def fold(text: str) -> str:
    """`text` with full-width forms, U+3000 and non-ASCII digits replaced by their ASCII character.

    One character for one: offsets into the folded text are offsets into `text`, and a folded
    value's normalized form (its pseudonym) is its ASCII form's. ASCII text is returned as it is
    (one `isascii`); otherwise one class scan finds the foldable characters (~50 us per 8 KB) and
    each distinct one is replaced by a `str.replace` (Chinese prose holds a few distinct
    full-width punctuation marks; `str.translate` would cost ~0.5 ms per 8 KB).
    """
    if text.isascii():
        return text
    bmp, astral = _foldable()
    chars = set(bmp.findall(text))
    if len(text.encode("utf-16-le", "surrogatepass")) != 2 * len(text):  # astral characters
        chars.update(astral.findall(text))
    for ch in chars:
        text = text.replace(ch, _fold_char(ch))
    return text


# --- validators -------------------------------------------------------------------------------
def luhn_ok(digits: str) -> bool:
    """Luhn checksum of a digit string (payment cards)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i & 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_CHECK = "10X98765432"


def cn_id_ok(value: str) -> bool:
    """GB 11643 check character of an 18-character resident id."""
    if len(value) != 18 or not value[:17].isdigit():
        return False
    total = sum(int(c) * w for c, w in zip(value[:17], _CN_WEIGHTS))
    return _CN_CHECK[total % 11] == value[17].upper()


# BBAN format of each of the 89 countries of the IBAN registry (ISO 13616; source: SWIFT's "IBAN
# Registry", as transcribed in python-stdnum's stdnum/iban.dat): runs of n digits, a capitals,
# c capitals or digits. The IBAN's length is 4 + the BBAN's (DE 22, GB 22, FR 27, NL 18, ...).
IBAN_BBAN = {
    "AD": "8n12c", "AE": "19n", "AL": "8n16c", "AT": "16n", "AZ": "4a20c", "BA": "16n",
    "BE": "12n", "BG": "4a6n8c", "BH": "4a14c", "BI": "23n", "BR": "23n1a1c", "BY": "4c4n16c",
    "CH": "5n12c", "CR": "18n", "CY": "8n16c", "CZ": "20n", "DE": "18n", "DJ": "23n", "DK": "14n",
    "DO": "4c20n", "EE": "16n", "EG": "25n", "ES": "20n", "FI": "14n", "FK": "2a12n", "FO": "14n",
    "FR": "10n11c2n", "GB": "4a14n", "GE": "2a16n", "GI": "4a15c", "GL": "14n", "GR": "7n16c",
    "GT": "24c", "HN": "4a20n", "HR": "17n", "HU": "24n", "IE": "4a14n", "IL": "19n",
    "IQ": "4a15n", "IS": "22n", "IT": "1a10n12c", "JO": "4a4n18c", "KW": "4a22c", "KZ": "3n13c",
    "LB": "4n20c", "LC": "4a24c", "LI": "5n12c", "LT": "16n", "LU": "3n13c", "LV": "4a13c",
    "LY": "21n", "MC": "10n11c2n", "MD": "20c", "ME": "18n", "MK": "3n10c2n", "MN": "16n",
    "MR": "23n", "MT": "4a5n18c", "MU": "4a19n3a", "NI": "4a20n", "NL": "4a10n", "NO": "11n",
    "OM": "3n16c", "PK": "4a16c", "PL": "24n", "PS": "4a21c", "PT": "21n", "QA": "4a21c",
    "RO": "4a16c", "RS": "18n", "RU": "14n15c", "SA": "2n18c", "SC": "4a20n3a", "SD": "14n",
    "SE": "20n", "SI": "15n", "SK": "20n", "SM": "1a10n12c", "SO": "19n", "ST": "21n",
    "SV": "4a20n", "TL": "19n", "TN": "20n", "TR": "6n16c", "UA": "6n19c", "VA": "18n",
    "VG": "4a16n", "XK": "16n", "YE": "4a4n18c",
}
_BBAN_CLASS = {"n": "[0-9]", "a": "[A-Z]", "c": "[A-Z0-9]"}
# country -> (IBAN length, BBAN pattern)
_IBAN_FORMAT = {
    cc: (4 + sum(int(n) for n, _ in runs),
         re.compile("".join(f"{_BBAN_CLASS[t]}{{{n}}}" for n, t in runs)))
    for cc, spec in IBAN_BBAN.items()
    for runs in [re.findall(r"(\d+)([nac])", spec)]
}


def iban_ok(value: str) -> bool:
    """ISO 13616 check of an IBAN without spaces. In capitals (the printed form): mod-97 and 15-34
    characters, so IBANs of countries outside the registry are found too. In any other case
    (lower or mixed, where hex ids and hashes live): a registry country, its exact length and
    BBAN format, and mod-97 on the upper-cased value."""
    upper = value.upper()
    if value == upper:
        return 15 <= len(value) <= 34 and _mod97(value)
    fmt = _IBAN_FORMAT.get(upper[:2])
    return fmt is not None and len(value) == fmt[0] and fmt[1].fullmatch(upper, 4) is not None and _mod97(upper)


def _mod97(value: str) -> bool:
    if not value[2:4].isdigit():
        return False
    moved = value[4:] + value[:4]
    try:
        number = int("".join(str(int(c, 36)) for c in moved))
    except ValueError:
        return False
    return number % 97 == 1


# Issuer prefixes of the major card schemes: a bare Luhn check alone would hit 1 in 10 long
# numbers (millisecond timestamps are 13 digits), the prefix keeps ids and timestamps intact.
_CARD_PREFIX = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[0689]|6011|64[4-9]|65|62|35")


def card_ok(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) is not None and luhn_ok(digits)


# --- numbers ----------------------------------------------------------------------------------
# Candidate runs: starts with a class (fast scan), separators are space . - ( ) / but not newline.
_NUM_RUN = re.compile(r"[+(\d][\d \-.()/]{5,}[\dXx]")
_NON_DIGIT = re.compile(r"\D")
_NUM_PRECISE = re.compile(
    r"""
    (?P<cnid>(?<![\w.+-])[1-9]\d{5}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![\w-]))
  | (?P<card>(?<![\w.+-])\d(?:[ -]?\d){12,18}(?![\w-]))
  | (?P<ipv4>(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\w]|\.\d))
  | (?P<cnmob>(?<![\w.+-])(?:\(?\+?86\)?[ -]?)?1[3-9]\d(?:[ -]?\d{4}){2}(?![\w-]))
  | (?P<intl>(?<![\w+])\+[1-9]\d{0,2}(?:[ .\-]?\(?\d{1,4}\)?){2,6}(?![\w]))
  | (?P<ssn>(?<![\w.+-])\d{3}(?P<sep>[- ])\d{2}(?P=sep)\d{4}(?![\w-]))
  | (?P<aadhaar>(?<![\w.+-])[2-9]\d{3}(?P<asep>[- ])\d{4}(?P=asep)\d{4}(?![\w-]))
  | (?P<sin>(?<![\w.+-])\d{3}(?P<sinsep>[- ])\d{3}(?P=sinsep)\d{3}(?![\w-]))
  | (?P<nanp>(?<![\w.-])(?:\(\d{3}\)[ ]?|\d{3}[-. ])\d{3}[-. ]\d{4}(?![\w-]))
    """,
    re.VERBOSE | re.ASCII,  # ASCII word boundaries: a number glued to CJK text (手机号138...) is found
)


def _numbers(text: str, out: list[Found]) -> None:
    size = len(text)
    for run in _NUM_RUN.finditer(text):
        start, end = run.span()
        # lookbehinds see before `start`; give the lookaheads one character after the run
        numbers_in(text, max(0, start - 1), min(size, end + 1), out)


def numbers_in(text: str, lo: int, hi: int, out: list[Found]) -> None:
    """Confirm numbers inside text[lo:hi] (lookbehinds still see before `lo`)."""
    if True:
        for m in _NUM_PRECISE.finditer(text, lo, hi):
            kind = m.lastgroup
            value = m.group()
            digits = _NON_DIGIT.sub("", value)
            if kind == "cnid":
                if cn_id_ok(value):
                    out.append(Found(m.start(), m.end(), CN_ID, value.upper()))
            elif kind == "card":
                if card_ok(digits):
                    out.append(Found(m.start(), m.end(), CARD, digits))
            elif kind == "ipv4":
                out.append(Found(m.start(), m.end(), IP, value))
            elif kind == "cnmob":
                out.append(Found(m.start(), m.end(), PHONE, digits[-11:]))
            elif kind == "intl":
                if 8 <= len(digits) <= 15:
                    out.append(Found(m.start(), m.end(), PHONE, _intl_norm(digits)))
            elif kind == "ssn":
                if ssn_ok(digits):
                    out.append(Found(m.start(), m.end(), US_SSN, digits))
            elif kind == "aadhaar":
                if verhoeff_ok(digits):
                    out.append(Found(m.start(), m.end(), IN_AADHAAR, digits))
            elif kind == "sin":
                if sin_ok(digits):
                    out.append(Found(m.start(), m.end(), CA_SIN, digits))
            elif kind == "nanp":
                out.append(Found(m.start(), m.end(), PHONE, "1" + digits))


def ssn_ok(digits: str) -> bool:
    """A US Social Security number the SSA could issue: area not 000, 666 or 900-999, group not
    00, serial not 0000 (`123-45-6789` is one)."""
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


_VERHOEFF_D = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 0, 6, 7, 8, 9, 5), (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
    (3, 4, 0, 1, 2, 8, 9, 5, 6, 7), (4, 0, 1, 2, 3, 9, 5, 6, 7, 8), (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2), (7, 6, 5, 9, 8, 2, 1, 0, 4, 3), (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
    (9, 8, 7, 6, 5, 4, 3, 2, 1, 0))
_VERHOEFF_P = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 5, 7, 6, 2, 8, 3, 0, 9, 4), (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
    (8, 9, 1, 6, 0, 4, 3, 5, 2, 7), (9, 4, 5, 3, 1, 2, 6, 8, 7, 0), (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5), (7, 0, 4, 6, 9, 1, 3, 2, 5, 8))


def verhoeff_ok(digits: str) -> bool:
    """Verhoeff checksum (India's Aadhaar number: 12 digits, the first 2-9, the last a Verhoeff
    check digit that catches every single-digit error and adjacent swap)."""
    check = 0
    for i, ch in enumerate(reversed(digits)):
        check = _VERHOEFF_D[check][_VERHOEFF_P[i % 8][ord(ch) - 48]]
    return check == 0


def sin_ok(digits: str) -> bool:
    """A Canadian Social Insurance Number: first digit 1-7 (a province) or 9 (temporary
    residents; 0 and 8 are not assigned), Luhn check digit (`046 454 286`, the government's
    example, starts with 0 and is not one)."""
    return digits[0] not in "08" and luhn_ok(digits)


def _intl_norm(digits: str) -> str:
    # +86 13812345678 and 13812345678 are the same person: one pseudonym
    if digits.startswith("86") and len(digits) == 13:
        return digits[2:]
    return digits


# --- emails -----------------------------------------------------------------------------------
_LOCAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-'")
_EMAIL = re.compile(r"[\w.%+'-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*\.[A-Za-z]{2,24}(?![\w-])", re.ASCII)


def _emails(text: str, out: list[Found]) -> None:
    at = text.find("@")
    floor = 0
    while at != -1:
        start = at
        while start > floor and at - start < 64 and text[start - 1] in _LOCAL_CHARS:
            start -= 1
        while start < at and text[start] in ".-'":  # a local part does not start with these
            start += 1
        m = _EMAIL.match(text, start) if start < at else None
        if m is not None:
            out.append(Found(m.start(), m.end(), EMAIL, m.group().lower()))
            floor = m.end()
            at = text.find("@", floor)
        else:
            at = text.find("@", at + 1)


# --- IPv6 -------------------------------------------------------------------------------------
_HEXCOLON = frozenset("0123456789abcdefABCDEF:")
_V6 = re.compile(r"[0-9A-Fa-f:]{2,45}(?:%[\w.]+)?(?:(?<=:)\d{1,3}(?:\.\d{1,3}){3})?", re.ASCII)


def _ipv6(text: str, out: list[Found]) -> None:
    ipv6_in(text, 0, len(text), out)


def ipv6_in(text: str, lo: int, hi: int, out: list[Found]) -> None:
    """IPv6 addresses around the colons of text[lo:hi]."""
    i = text.find(":", lo, hi)
    size = len(text)
    while i != -1:
        nxt = text[i + 1] if i + 1 < size else ""
        if nxt not in _HEXCOLON or not nxt:
            i = text.find(":", i + 1, hi)
            continue
        start = i
        while start > 0 and i - start < 45 and text[start - 1] in _HEXCOLON:
            start -= 1
        m = _V6.match(text, start)
        end = i + 1
        if m is not None:
            end = m.end()
            value = m.group().rstrip(":") if not m.group().endswith("::") else m.group()
            after = text[start + len(value)] if start + len(value) < size else ""
            if not _word(after):
                # "a:2001:db8::1": a leading word that looks hex is not part of the address
                for skip in _leading_cuts(value):
                    s0 = start + skip
                    before = text[s0 - 1] if s0 else ""
                    if (skip or not _word(before)) and _is_v6(value[skip:]):
                        out.append(Found(s0, start + len(value), IP, value[skip:].lower()))
                        end = start + len(value)
                        break
        i = text.find(":", max(end, i + 1), hi)


def _word(ch: str) -> bool:
    """An ASCII word character: values glued to other scripts (地址2001:db8::1) still have edges."""
    return ch.isascii() and (ch.isalnum() or ch == "_")


def _leading_cuts(value: str) -> list[int]:
    cuts = [0]
    pos = value.find(":")
    while pos != -1 and len(cuts) < 3 and value[pos + 1:pos + 2] not in (":", ""):
        cuts.append(pos + 1)
        pos = value.find(":", pos + 1)
    return cuts


def _is_v6(value: str) -> bool:
    # "12:30:45" is a time, not an address: require 8 groups or a "::" with >= 3 groups
    groups = value.split("%")[0].split(":")
    if "::" not in value and len(groups) < 8:
        return False
    if "::" in value and sum(1 for g in groups if g) < 2:
        return False
    try:
        ipaddress.IPv6Address(value.split("%")[0])
    except ValueError:
        return False
    return True


# --- IBAN -------------------------------------------------------------------------------------
# Candidates: two letters at an (ASCII) word start, then the two check digits. A registry country's
# IBAN is cut at its length (so a following word or group is not taken in); in capitals, any
# country's IBAN is also matched greedily, as printed.
_IBAN_START = re.compile(r"\b[A-Za-z]{2}[0-9]{2}", re.ASCII)
_IBAN_UPPER = re.compile(r"[A-Z]{2}\d\d(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])")
_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _ibans(text: str, out: list[Found]) -> None:
    ibans_in(text, 0, len(text), out)


def ibans_in(text: str, lo: int, hi: int, out: list[Found]) -> None:
    """IBANs starting inside text[lo:hi] (the value may run past `hi`)."""
    for m in _IBAN_START.finditer(text, lo, hi):
        s = m.start()
        head = m.group()
        fmt = _IBAN_FORMAT.get(head[:2].upper())
        if fmt is not None:  # a registry country: its exact length, any case
            end = _iban_end(text, s, fmt[0])
            if end:
                compact = text[s:end].replace(" ", "")
                if iban_ok(compact):
                    out.append(Found(s, end, IBAN, compact.upper()))
                    continue
        if head.isupper():  # in capitals, any country (greedy, as printed)
            up = _IBAN_UPPER.match(text, s)
            if up is not None:
                compact = up.group().replace(" ", "")
                if iban_ok(compact):
                    out.append(Found(s, up.end(), IBAN, compact))


def _iban_end(text: str, start: int, length: int) -> int:
    """End of the `length` characters of an IBAN from `start` (single spaces allowed between
    them after the check digits), or 0 when the text differs or the word runs on."""
    i = start + 4
    size = len(text)
    for _ in range(length - 4):
        if i < size and text[i] == " ":
            i += 1
        if i >= size or text[i] not in _ASCII_ALNUM:
            return 0
        i += 1
    if i < size and text[i] in _ASCII_ALNUM:
        return 0
    return i


# --- secrets ---------------------------------------------------------------------------------
# Each secret pattern is tried only where its literal occurs (`str.find`), with `match` at that
# position: no pass of the regex engine over the whole text.
@dataclass(frozen=True)
class _Secret:
    literals: tuple[str, ...]
    pattern: re.Pattern[str]
    lower: bool = False  # find the literal in the lower-cased text
    after: bool = False  # the pattern matches right after the literal (else at its start)
    named: bool = False  # a credential's name must end at the literal (`api_key=`, not `monkey=`)


_SECRETS = (
    _Secret(("sk-",), re.compile(r"(?<![\w-])sk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{16,}[A-Za-z0-9_-]*", re.ASCII)),
    _Secret(("AKIA", "ASIA"), re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])")),
    _Secret(("eyJ",), re.compile(r"eyJ[\w-]{4,}\.eyJ[\w-]{4,}\.[\w-]{4,}", re.ASCII)),
    _Secret(("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
            re.compile(r"(?<![\w])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,})", re.ASCII)),
    _Secret(("AIza",), re.compile(r"AIza[0-9A-Za-z_-]{35}")),
    _Secret(("xox",), re.compile(r"xox[abposr]-[0-9A-Za-z-]{10,}")),
    _Secret(("bearer",), re.compile(r"[ \t]+(?=[\w\-.~+/]*\d)(?P<v>[\w\-.~+/]{16,}=*)", re.ASCII), lower=True, after=True),
    # key=value / "key": "value" assignments of credentials (URL queries, logs, non-JSON text)
    _Secret(("key", "token", "secret", "password", "passwd", "pwd"),
            re.compile(r"[\"']?[ \t]*[=:][ \t]*[\"']?(?P<v>[^&\s\"',;#}\]]{4,})"), lower=True, after=True, named=True),
)
_SECRET_NAMES = re.compile(
    r"(?:^|[^a-z0-9])(?:api[_-]?key|x[_-]api[_-]key|access[_-]?token|auth[_-]?token|refresh[_-]?token"
    r"|client[_-]?secret|secret[_-]?key|secret|password|passwd|pwd)$"
)


def _secrets(text: str, out: list[Found]) -> None:
    secrets_in(text, 0, len(text), out)


def secrets_in(text: str, lo: int, hi: int, out: list[Found], lower: str | None = None) -> None:
    """Secrets whose literal starts inside text[lo:hi] (the value may run past `hi`)."""
    if lower is not None and len(lower) != len(text):
        lower = text
    for sec in _SECRETS:
        if sec.lower:
            if lower is None:
                lower = text.lower()
                if len(lower) != len(text):  # non-ASCII case folding moved offsets
                    lower = text
            hay = lower
        else:
            hay = text
        pattern = sec.pattern
        for lit in sec.literals:
            pos = hay.find(lit, lo, hi)
            while pos != -1:
                at = pos + len(lit) if sec.after else pos
                m = pattern.match(text, at)
                if m is not None and (not sec.named or _SECRET_NAMES.search(hay, max(0, pos - 12), at)):
                    s0, e0 = m.span("v" if sec.after else 0)
                    out.append(Found(s0, e0, SECRET, text[s0:e0]))
                pos = hay.find(lit, pos + len(lit), hi)


# --- UK National Insurance numbers -------------------------------------------------------------
# two prefix letters (first not D F I Q U V, second not D F I O Q U V; BG GB KN NK NT TN ZZ never
# issued), six digits (pairs may be spaced), suffix A-D; capitals only (lower-case codes are ids)
_NINO = re.compile(r"(?<![A-Za-z0-9])([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]) ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])",
                   re.ASCII)
_NINO_NEVER = frozenset({"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"})


def _ninos(text: str, out: list[Found]) -> None:
    ninos_in(text, 0, len(text), out)


def ninos_in(text: str, lo: int, hi: int, out: list[Found]) -> None:
    for m in _NINO.finditer(text, lo, hi):
        if m.group(1) not in _NINO_NEVER:
            out.append(Found(m.start(), m.end(), UK_NINO, m.group().replace(" ", "")))


# --- entry point ------------------------------------------------------------------------------
Finder = Callable[[str, list], None]
BUILTIN: dict[str, Finder] = {
    "numbers": _numbers,
    "emails": _emails,
    "ipv6": _ipv6,
    "ibans": _ibans,
    "secrets": _secrets,
    "ninos": _ninos,
}


def find_all(text: str, finders: Iterable[Finder] = BUILTIN.values(),
             disabled: frozenset[str] = frozenset()) -> list[Found]:
    """All non-overlapping sensitive values of `text`, leftmost first, longest on ties; none of
    the `disabled` kinds (`vocabulary.PII_KINDS`)."""
    text = fold(text)
    out: list[Found] = []
    for finder in finders:
        finder(text, out)
    return merge(out, disabled)


def merge(out: list[Found], disabled: frozenset[str] = frozenset()) -> list[Found]:
    """Sort by position and fuse overlaps, so every character of every match is replaced (values
    of a `disabled` kind are dropped first: they neither count nor widen a neighbour)."""
    if disabled:
        out = [f for f in out if f.kind not in disabled]
    if len(out) < 2:
        return out
    out.sort(key=lambda f: (f.start, -f.end))
    kept: list[Found] = []
    last_end = -1
    for f in out:
        if f.start >= last_end:
            kept.append(f)
            last_end = f.end
        elif f.end > last_end and kept:
            # overlapping: extend the previous one so nothing of either leaks
            prev = kept[-1]
            kept[-1] = Found(prev.start, f.end, prev.kind, prev.norm)
            last_end = f.end
    return kept
