"""Seeded values of every detector, in many formats.

Hypothesis supplies the randomness (`st.randoms()`, derandomized, reported on failure); the
values are built here with plain Python because hypothesis' engine costs ~1 ms per drawn value,
and the corpus needs >= 10k values of each detector within the suite's time budget.
"""

from __future__ import annotations

import ipaddress
import random
import unicodedata

from otel_agent_trace.processor.pii_detectors import _CN_CHECK, _CN_WEIGHTS

_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _s(rnd: random.Random, alphabet: str, lo: int, hi: int | None = None) -> str:
    return "".join(rnd.choices(alphabet, k=rnd.randint(lo, hi if hi is not None else lo)))


def _d(rnd: random.Random, n: int) -> str:
    return str(rnd.randrange(10**n)).zfill(n)


def _luhn_digit(body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def cn_mobile(rnd: random.Random) -> str:
    number = "1" + rnd.choice("3456789") + _d(rnd, 9)
    sep = rnd.choice(["", "-", " "])
    prefix = rnd.choice(["", "+86 ", "+86-", "+86", "(+86) "])
    return prefix + number[:3] + sep + number[3:7] + sep + number[7:]


def intl_phone(rnd: random.Random) -> str:
    cc = rnd.choice(["1", "44", "33", "49", "81", "61", "353", "852", "971"])
    groups = [rnd.randint(2, 4) for _ in range(rnd.randint(2, 4))]
    while len(cc) + sum(groups) < 8:
        groups.append(2)
    while len(cc) + sum(groups) > 15:
        groups.pop()
    sep = rnd.choice([" ", "-", "."])
    return "+" + cc + " " + sep.join(rnd.choice("123456789") + _d(rnd, g - 1) for g in groups)


def nanp_phone(rnd: random.Random) -> str:
    area = rnd.choice("23456789") + _d(rnd, 2)
    mid = rnd.choice("23456789") + _d(rnd, 2)
    last = _d(rnd, 4)
    return rnd.choice([f"({area}) {mid}-{last}", f"{area}-{mid}-{last}", f"{area}.{mid}.{last}"])


def email(rnd: random.Random) -> str:
    local = _s(rnd, _ALNUM, 1, 12)
    if rnd.random() < 0.5:
        local += rnd.choice(".-_+") + _s(rnd, _ALNUM, 1, 8)
    labels = [_s(rnd, _ALNUM, 1, 10) for _ in range(rnd.randint(1, 3))]
    out = f"{local}@{'.'.join(labels)}.{rnd.choice(['com', 'org', 'cn', 'co.uk', 'io', 'de', 'com.cn'])}"
    return out.upper() if rnd.random() < 0.1 else out


def card(rnd: random.Random) -> str:
    prefix, length = rnd.choice([("4", 16), ("4", 13), ("51", 16), ("55", 16), ("22", 16), ("34", 15),
                                 ("37", 15), ("6011", 16), ("65", 16), ("62", 19), ("35", 16)])
    body = prefix + _d(rnd, length - len(prefix) - 1)
    number = body + _luhn_digit(body)
    style = rnd.randint(0, 2)
    if style == 0:
        return number
    return (" " if style == 1 else "-").join(number[i:i + 4] for i in range(0, len(number), 4))


def cn_id(rnd: random.Random) -> str:
    body = (rnd.choice("123456789") + _d(rnd, 5) + str(rnd.randint(1930, 2020))
            + f"{rnd.randint(1, 12):02d}{rnd.randint(1, 28):02d}" + _d(rnd, 3))
    check = _CN_CHECK[sum(int(c) * w for c, w in zip(body, _CN_WEIGHTS)) % 11]
    return body + (check.lower() if check == "X" and rnd.random() < 0.5 else check)


def ipv4(rnd: random.Random) -> str:
    return ".".join(str(rnd.randint(0, 255)) for _ in range(4))


def ipv6(rnd: random.Random) -> str:
    value = rnd.randrange(1 << 100, 1 << 128)
    if rnd.random() < 0.3:
        value &= ~(0xFFFFFFFF << 32)  # a zero run: compressed form with "::"
    addr = ipaddress.IPv6Address(value)
    text = addr.exploded if rnd.random() < 0.5 else addr.compressed
    return text.upper() if rnd.random() < 0.2 else text


_IBAN_SHAPES = {"DE": [("n", 18)], "FR": [("n", 10), ("a", 11), ("n", 2)], "GB": [("A", 4), ("n", 14)],
                "NL": [("A", 4), ("n", 10)], "ES": [("n", 20)], "IT": [("A", 1), ("n", 10), ("a", 12)],
                "CH": [("n", 5), ("a", 12)], "BE": [("n", 12)]}
_ALPHA = {"n": "0123456789", "a": "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "A": "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}


def iban(rnd: random.Random) -> str:
    country = rnd.choice(sorted(_IBAN_SHAPES))
    bban = "".join(_s(rnd, _ALPHA[kind], n) for kind, n in _IBAN_SHAPES[country])
    check = 98 - int("".join(str(int(c, 36)) for c in bban + country + "00")) % 97
    value = f"{country}{check:02d}{bban}"
    if rnd.random() < 0.5:
        value = " ".join(value[i:i + 4] for i in range(0, len(value), 4))
    return value


def iban_any_case(rnd: random.Random) -> str:
    value = iban(rnd)
    if rnd.random() < 0.5:
        return value.lower()
    return "".join(c.lower() if rnd.random() < 0.5 else c for c in value)


# Digits of other scripts (category Nd): Arabic-Indic, Extended Arabic-Indic, Devanagari, Bengali,
# Thai, full-width, mathematical bold (outside the BMP).
_DIGIT_ZEROS = [0x0660, 0x06F0, 0x0966, 0x09E6, 0x0E50, 0xFF10, 0x1D7CE]


def widen(rnd: random.Random, value: str) -> str:
    """`value` written with full-width forms, U+3000 separators and/or non-ASCII digits."""
    style = rnd.randint(0, 3)
    zero = rnd.choice(_DIGIT_ZEROS)
    out = []
    for c in value:
        if c == " ":
            out.append("\u3000" if rnd.random() < 0.5 else c)
        elif style == 0 and "!" <= c <= "~":  # full-width, separators and letters too
            out.append(chr(ord(c) + 0xFEE0))
        elif c.isdigit() and (style == 1 or (style == 2 and rnd.random() < 0.5)):
            out.append(chr(zero + int(c)))
        elif style == 3 and "!" <= c <= "~" and rnd.random() < 0.5:  # mixed: every character at random
            out.append(chr(ord(c) + 0xFEE0) if not c.isdigit() or rnd.random() < 0.5 else chr(zero + int(c)))
        else:
            out.append(c)
    return "".join(out)


def ascii_form(value: str) -> str:
    """The ASCII text of a widened value (NFKC for full-width forms, then each script's digits)."""
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c
                   for c in unicodedata.normalize("NFKC", value))


def wide_phone(rnd: random.Random) -> str:
    return widen(rnd, rnd.choice([cn_mobile, intl_phone, nanp_phone])(rnd))


def wide_email(rnd: random.Random) -> str:
    return widen(rnd, email(rnd))


def wide_card(rnd: random.Random) -> str:
    return widen(rnd, card(rnd))


def wide_cn_id(rnd: random.Random) -> str:
    return widen(rnd, cn_id(rnd))


def secret(rnd: random.Random) -> str:
    kind = rnd.randint(0, 4)
    if kind == 0:
        return "sk-" + rnd.choice(["", "proj-", "ant-api03-"]) + _s(rnd, _B64, 20, 48)
    if kind == 1:
        return rnd.choice(["AKIA", "ASIA"]) + _s(rnd, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    if kind == 2:
        return "eyJ" + _s(rnd, _B64 + "-_", 8, 40) + ".eyJ" + _s(rnd, _B64 + "-_", 8, 40) + "." + _s(rnd, _B64 + "-_", 8, 40)
    if kind == 3:
        return "Bearer " + _s(rnd, _B64, 15, 40) + _d(rnd, 1)
    return "ghp_" + _s(rnd, _B64, 36)


_CJK_BEFORE = ["手机号", "邮箱", "卡号", "身份证", "密钥", "地址", "电话"]
_CJK_AFTER = ["谢谢", "结束", "号", "。", "请回复", "的"]
_GLUE = frozenset("".join(_CJK_BEFORE + _CJK_AFTER))


def glued(rnd: random.Random) -> str:
    """A value written against CJK text with no space (手机号13812345678谢谢): no ASCII boundary."""
    kind = rnd.choice([cn_mobile, intl_phone, email, card, cn_id, ipv4, ipv6, iban_any_case, secret])
    value = kind(rnd)
    while value.startswith("Bearer "):  # needs its space: not a glued form
        value = secret(rnd)
    return rnd.choice(_CJK_BEFORE) + value + rnd.choice(_CJK_AFTER)


DETECTORS = {
    "cn_mobile": cn_mobile, "intl_phone": intl_phone, "nanp_phone": nanp_phone, "email": email, "card": card,
    "cn_id": cn_id, "ipv4": ipv4, "ipv6": ipv6, "iban": iban, "secret": secret,
    # the same kinds written otherwise: full-width / other scripts' digits, IBANs in any case
    "wide_phone": wide_phone, "wide_email": wide_email, "wide_card": wide_card, "wide_cn_id": wide_cn_id,
    "iban_any_case": iban_any_case, "glued": glued,
}


def sensitive_part(value: str) -> str:
    """The part of a seeded value that must not appear in the output (not its CJK surroundings)."""
    value = value.removeprefix("Bearer ")
    start, end = 0, len(value)
    while start < end and value[start] in _GLUE:
        start += 1
    while end > start and value[end - 1] in _GLUE:
        end -= 1
    return value[start:end]


def sensitive_forms(value: str) -> set[str]:
    """The seeded value as written and in ASCII: neither may appear in the output."""
    part = sensitive_part(value)
    return {part, ascii_form(part)}


# --- adversarial forms (issue 18): the same values, written the ways that hide them --------------
def url_encoded(rnd: random.Random, value: str) -> str:
    """In a URL query, percent-encoded (every byte, or only the reserved ones)."""
    from urllib.parse import quote

    safe = "" if rnd.random() < 0.5 else "/:@"
    return f"https://api.example.com/v1/search?q={quote('contact ' + value, safe=safe)}&page=2"


def base64_text(rnd: random.Random, value: str) -> str:
    """Inside base64 text (standard or URL-safe alphabet, padded or not), as payloads and data URLs carry it."""
    import base64

    raw = rnd.choice(["contact: ", "", "user said "]) + value
    if rnd.random() < 0.5:
        enc = base64.b64encode(raw.encode()).decode()
    else:
        enc = base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")
    return rnd.choice(["payload ", "data:text/plain;base64,", "Basic ", "blob="]) + enc


def nested_json(rnd: random.Random, value: str) -> str:
    """Tool arguments whose values are JSON strings holding JSON strings (up to 5 levels)."""
    import json

    doc: object = {"value": value}
    for _ in range(rnd.randint(1, 5)):
        doc = {"arguments": json.dumps(doc), "n": rnd.randint(1, 9)}
    return json.dumps(doc)


def split_json(rnd: random.Random, value: str) -> tuple[str, str, str]:
    """The value cut in two JSON strings of one object: (the JSON text, first half, second half)."""
    import json

    part = sensitive_part(value)
    cut = rnd.randint(1, max(1, len(part) - 1))
    return json.dumps({"first": part[:cut], "second": part[cut:]}), part[:cut], part[cut:]


def recoverable(blob: str) -> str:
    """`blob` plus what the obvious decodings recover from it (percent-decoding, every base64 run,
    NFKC): a value is leaked when any of these shows it."""
    import base64
    import binascii
    import re
    from urllib.parse import unquote

    out = [blob, unquote(blob)]
    for run in re.findall(r"[A-Za-z0-9+/_-]{8,}={0,2}", out[1]):
        body = run.rstrip("=")
        for alt in (None, b"-_"):
            try:
                out.append(base64.b64decode(body + "=" * (-len(body) % 4), altchars=alt).decode("utf-8", "ignore"))
            except (binascii.Error, ValueError):
                pass
    return ascii_form("\x00".join(out))


# --- text with no personal data: what must come out unchanged (false positives) ------------------
_MODELS = ["gpt-4o-2024-08-06", "gpt-4.1-mini", "o3-mini-2025-01-31", "claude-3-5-sonnet-20241022",
           "claude-sonnet-4-20250514", "gemini-1.5-pro-002", "llama-3.1-70b-instruct", "qwen2.5-72b-instruct",
           "mistral-large-2411", "text-embedding-3-large", "deepseek-r1-distill-qwen-32b"]
_CODE = ["def handle(ticket):\n    return lookup_order(ticket.order_id)[:10]",
         "for (let i = 0; i < items.length; i++) { total += items[i].price * 100; }",
         "SELECT id, created_at FROM orders WHERE status = 'paid' LIMIT 100 OFFSET 200;",
         "x = np.arange(0, 1024, 8).reshape(32, 4)",
         "if resp.status_code == 429: time.sleep(2 ** attempt)",
         "docker run -p localhost:8080:80 -e WORKERS=4 nginx:1.25.3",
         "git checkout 3f2a9c1e8b7d6f5a4c3b2a1908f7e6d5c4b3a291 -- src/app.py",
         "@@ -120,7 +120,9 @@ class Recorder:", "export PATH=/usr/local/bin:$PATH", "version = \"2.31.0\""]


def benign(rnd: random.Random) -> str:
    """One string an agent trace carries that holds no personal data: code, ids, hashes, times,
    counts, model names, versions, paths, base64 of binary."""
    import base64
    import hashlib
    import uuid

    kind = rnd.randrange(12)
    if kind == 0:
        return rnd.choice(_CODE)
    if kind == 1:
        return str(uuid.UUID(int=rnd.getrandbits(128), version=4))
    if kind == 2:
        h = hashlib.sha256(str(rnd.random()).encode())
        return rnd.choice([h.hexdigest(), h.hexdigest()[:16], hashlib.md5(h.digest()).hexdigest(), hashlib.sha1(h.digest()).hexdigest()])
    if kind == 3:
        sec = rnd.randint(1_600_000_000, 1_900_000_000)
        return rnd.choice([str(sec), str(sec * 1000 + rnd.randint(0, 999)), str(sec * 10**9 + rnd.randint(0, 10**9 - 1)),
                           f"2026-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d}T{rnd.randint(0, 23):02d}:{rnd.randint(0, 59):02d}:"
                           f"{rnd.randint(0, 59):02d}.{rnd.randint(0, 999999):06d}Z"])
    if kind == 4:
        return f"prompt_tokens={rnd.randint(1, 200000)} completion_tokens={rnd.randint(1, 8000)} total={rnd.randint(1, 208000)}"
    if kind == 5:
        return rnd.choice(_MODELS)
    if kind == 6:
        return f"v{rnd.randint(0, 30)}.{rnd.randint(0, 99)}.{rnd.randint(0, 999)}"
    if kind == 7:
        return f"/var/lib/app/{uuid.UUID(int=rnd.getrandbits(128)).hex[:8]}/chunk-{rnd.randint(0, 99999):05d}.parquet"
    if kind == 8:
        return base64.b64encode(rnd.randbytes(rnd.randint(12, 96))).decode()
    if kind == 9:
        return f"span {rnd.getrandbits(64):016x} of trace {rnd.getrandbits(128):032x}"
    if kind == 10:
        return f"order ORD-{rnd.randint(10**7, 10**8)} total {rnd.randint(1, 99999) / 100:.2f} EUR, {rnd.randint(1, 40)} items"
    return f"latency_ms={rnd.random() * 3000:.3f} p99={rnd.randint(100, 9000)}ms retries={rnd.randint(0, 5)}"
