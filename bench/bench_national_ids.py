"""Recall and false positives of the national-identifier detectors (issue 31: US SSN, UK NINO, CA SIN, IN Aadhaar).

    python bench/bench_national_ids.py [--n 20000] [--seed 31]
    python bench/bench_national_ids.py --smoke      # the test suite's: 500 of each, shape only

Positives: valid SSNs (area 001-899 but 666, group 01-99, serial 0001-9999) written `123-45-6789`
or `123 45 6789`, inside prose, JSON strings, `key=value`, and next to punctuation. Negatives:
invalid SSNs (area 000/666/9xx, group 00, serial 0000), dates and times, ZIP+4 codes, phone
numbers, ids that merely contain a 3-2-4 group (`ORD-123-45-6789`, `v123-45-6789`), version
strings, bare 9-digit numbers. Each text goes through both scan paths (`pii_detectors.find_all`, the
Hyperscan prefilter when installed); a positive counts as found when a `US_SSN` covers all of
it, a negative as a false positive when any `US_SSN` is reported in it. UK NINO and Canadian SIN
likewise (`valid_nino`/`negative_nino`, `valid_sin`/`negative_sin`): a SIN is 3-3-3 digits with one
separator (`-` or space), first digit 1-7 or 9, Luhn; its negatives are Luhn failures, first digits
0/8, mixed or dotted separators, codes that contain one, NANP phones and bare 9 digits. An Aadhaar
number is 4-4-4 digits with one separator, first digit 2-9, Verhoeff; its negatives are a wrong
check digit, two adjacent digits swapped, first digits 0/1, mixed separators or inside a code,
16 digits in fours, bare 12 digits.
"""

from __future__ import annotations

import argparse
import json
import random
import sys

from otel_agent_trace.processor import pii_detectors

TEMPLATES = ["My SSN is {}.", "{\"ssn\": \"{}\"}", "ssn={}", "({})", "Social security number: {}, thanks",
             "客户的号码是{}。", "{}"]


def valid(rng: random.Random) -> str:
    while True:
        area = rng.randint(1, 899)
        if area != 666:
            break
    sep = rng.choice("- ")
    return f"{area:03d}{sep}{rng.randint(1, 99):02d}{sep}{rng.randint(1, 9999):04d}"


def negative(rng: random.Random) -> str:
    kind = rng.randrange(8)
    if kind == 0:  # invalid SSN
        area = rng.choice(["000", "666", f"9{rng.randint(0, 99):02d}", f"{rng.randint(1, 899):03d}"])
        if area in ("000", "666") or area[0] == "9":  # a bad area, the rest anything
            group, serial = f"{rng.randint(0, 99):02d}", f"{rng.randint(0, 9999):04d}"
        elif rng.random() < 0.5:
            group, serial = "00", f"{rng.randint(0, 9999):04d}"
        else:
            group, serial = f"{rng.randint(0, 99):02d}", "0000"
        return f"{area}{rng.choice('- ')}{group}{rng.choice('- ')}{serial}"
    if kind == 1:
        return f"{rng.randint(1990, 2030)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind == 2:
        return f"{rng.randint(10000, 99999)}-{rng.randint(0, 9999):04d}"  # ZIP+4
    if kind == 3:
        return f"({rng.randint(200, 999)}) {rng.randint(200, 999)}-{rng.randint(0, 9999):04d}"
    if kind == 4:
        return f"ORD-{rng.randint(100, 999)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}"
    if kind == 5:
        return f"v{rng.randint(100, 999)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}"
    if kind == 6:
        return f"{rng.randint(1, 20)}.{rng.randint(0, 99)}.{rng.randint(0, 9999)}"
    return str(rng.randint(10**8, 10**9 - 1))  # bare 9 digits: not claimed (see docs/reliability.md)


FIRST, SECOND = "ABCEGHJKLMNOPRSTWXYZ", "ABCEGHJKLMNPRSTWXYZ"
NEVER = {"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"}


def valid_nino(rng: random.Random) -> str:
    while True:
        prefix = rng.choice(FIRST) + rng.choice(SECOND)
        if prefix not in NEVER:
            break
    digits = f"{rng.randint(0, 999999):06d}"
    if rng.random() < 0.5:
        return f"{prefix} {digits[:2]} {digits[2:4]} {digits[4:]} {rng.choice('ABCD')}"
    return f"{prefix}{digits}{rng.choice('ABCD')}"


def negative_nino(rng: random.Random) -> str:
    digits = f"{rng.randint(0, 999999):06d}"
    kind = rng.randrange(6)
    if kind == 0:  # a prefix never issued, or a first/second letter never used
        prefix = rng.choice(sorted(NEVER) + ["QQ", "DA", "FA", "AO", "AV", "IA", "UA"])
        return f"{prefix}{digits}{rng.choice('ABCD')}"
    if kind == 1:
        return f"AB{digits}{rng.choice('EFGHXYZ')}"  # suffix not A-D
    if kind == 2:
        return f"ab{digits}c"  # lower case: ids
    if kind == 3:
        return f"X{rng.choice(FIRST)}{rng.choice(SECOND)}{digits}A"  # inside a longer code
    if kind == 4:
        return f"SW{rng.randint(1, 20)} {rng.randint(1, 9)}AA"  # a postcode
    return f"INV-{rng.choice(FIRST)}{rng.choice(SECOND)}{digits}"  # no suffix


def _luhn_digit(body: str) -> str:
    """The check digit that makes body + digit pass Luhn."""
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch) * (2 if i % 2 == 0 else 1)
        total += d - 9 if d > 9 else d
    return str(-total % 10)


def _sin_digits(rng: random.Random, first: str) -> str:
    body = first + f"{rng.randint(0, 9999999):07d}"
    return body + _luhn_digit(body)


def _grouped(digits: str, sep: str) -> str:
    return f"{digits[:3]}{sep}{digits[3:6]}{sep}{digits[6:]}"


def valid_sin(rng: random.Random) -> str:
    return _grouped(_sin_digits(rng, rng.choice("12345679")), rng.choice("- "))


def negative_sin(rng: random.Random) -> str:
    kind = rng.randrange(7)
    sep = rng.choice("- ")
    if kind == 0:  # Luhn fails (every other check digit)
        digits = _sin_digits(rng, rng.choice("12345679"))
        return _grouped(digits[:-1] + str((int(digits[-1]) + rng.randint(1, 9)) % 10), sep)
    if kind == 1:  # first digit 0 or 8: not assigned (the government's example 046 454 286 among them)
        return _grouped(_sin_digits(rng, rng.choice("08")), sep)
    if kind == 2:  # mixed separators
        digits = _sin_digits(rng, rng.choice("12345679"))
        return f"{digits[:3]}-{digits[3:6]} {digits[6:]}"
    if kind == 3:  # inside a longer code
        return "ORD-" + _grouped(_sin_digits(rng, rng.choice("12345679")), "-")
    if kind == 4:  # a NANP phone number
        return f"{rng.randint(200, 999)}-{rng.randint(200, 999)}-{rng.randint(0, 9999):04d}"
    if kind == 5:  # a version or a dotted id
        return _grouped(_sin_digits(rng, rng.choice("12345679")), ".")
    return _sin_digits(rng, rng.choice("12345679"))  # bare 9 digits: not claimed (see docs/reliability.md)


def _aadhaar_digits(rng: random.Random) -> str:
    body = str(rng.randint(2, 9)) + f"{rng.randint(0, 10**10 - 1):010d}"
    return next(body + d for d in "0123456789" if pii_detectors.verhoeff_ok(body + d))


def _quads(digits: str, sep: str) -> str:
    return f"{digits[:4]}{sep}{digits[4:8]}{sep}{digits[8:]}"


def valid_aadhaar(rng: random.Random) -> str:
    return _quads(_aadhaar_digits(rng), rng.choice("- "))


def negative_aadhaar(rng: random.Random) -> str:
    kind = rng.randrange(6)
    sep = rng.choice("- ")
    digits = _aadhaar_digits(rng)
    if kind == 0:  # the check digit wrong (Verhoeff catches every single-digit error)
        return _quads(digits[:-1] + str((int(digits[-1]) + rng.randint(1, 9)) % 10), sep)
    if kind == 1:  # two adjacent digits swapped (caught too, when they differ)
        i = rng.randrange(10)
        if digits[i] == digits[i + 1]:
            digits = digits[:i] + str((int(digits[i]) + 1) % 10) + digits[i + 1:]
        return _quads(digits[:i] + digits[i + 1] + digits[i] + digits[i + 2:], sep)
    if kind == 2:  # first digit 0 or 1: never issued
        return _quads(rng.choice("01") + digits[1:], sep)
    if kind == 3:  # mixed separators, or inside a longer code
        return rng.choice([f"{digits[:4]}-{digits[4:8]} {digits[8:]}", "INV-" + _quads(digits, "-")])
    if kind == 4:  # a 16-digit number in groups of 4 that is no card
        return _quads(digits, sep) + sep + f"{rng.randint(0, 9999):04d}"
    return digits  # bare 12 digits: not claimed (see docs/reliability.md)


KINDS = {"US_SSN": (valid, negative), "UK_NINO": (valid_nino, negative_nino), "CA_SIN": (valid_sin, negative_sin),
         "IN_AADHAAR": (valid_aadhaar, negative_aadhaar)}


def scanners() -> dict[str, object]:
    out: dict[str, object] = {"find_all": pii_detectors.find_all}
    try:
        from otel_agent_trace.processor.fast_scan import FastScanner

        out["hyperscan"] = FastScanner()
    except ImportError:
        print("hyperscan not installed: the prefilter path is skipped", file=sys.stderr)
    return out


def measure(n: int, seed: int) -> dict[str, dict[str, float]]:
    """{"KIND path": {"recall", "false_positive_rate", "n"}} for each kind and scan path."""
    results = {}
    for kind, (make, unmake) in KINDS.items():
        rng = random.Random(seed)
        positives = [(v, rng.choice(TEMPLATES).replace("{}", v, 1)) for v in (make(rng) for _ in range(n))]
        negatives = [rng.choice(TEMPLATES).replace("{}", unmake(rng), 1) for _ in range(n)]
        for name, scan in scanners().items():
            found = 0
            for value, text in positives:
                start = text.index(value)
                if any(f.kind == kind and f.start <= start and f.end >= start + len(value) for f in scan(text)):
                    found += 1
            false = sum(1 for text in negatives if any(f.kind == kind for f in scan(text)))
            results[f"{kind} {name}"] = {"recall": found / n, "false_positive_rate": false / n, "n": n}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--smoke", action="store_true", help="500 of each; checks the output's shape")
    args = parser.parse_args(argv)
    results = measure(500 if args.smoke else args.n, args.seed)
    for name, r in results.items():
        print(f"{name}: recall {r['recall']:.2%} of {r['n']}, false positives {r['false_positive_rate']:.2%} of {r['n']}")
    print(json.dumps(results))
    if args.smoke:
        assert set(results) >= {"US_SSN find_all", "UK_NINO find_all", "CA_SIN find_all", "IN_AADHAAR find_all"} and all(0 <= r["recall"] <= 1 for r in results.values()), results
        print("smoke: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
