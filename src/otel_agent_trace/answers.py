"""Comparing a final answer with the expected one: the one comparison `analyze --expected` and
`regress` (its `expected_answer` assertion) both use.

Four ways (`how`), and `auto`, which picks one from the expected value:
- `text`: equal after normalising both (Unicode NFKC, case folded, punctuation and the articles
  a/an/the dropped, whitespace collapsed): "The Eiffel Tower." matches "eiffel tower";
- `number`: the answer states the expected number within `tolerance` (absolute; default a
  relative 1e-6): numbers are read from the text with thousands separators, a currency sign or a
  trailing % ("$1,234.50" is 1234.5), and any number stated in the answer may match;
- `contains`: the normalised expected text occurs in the normalised answer;
- `regex`: the pattern is found in the answer as written (`re.search`; add `(?i)` to ignore case);
- `auto`: `number` when the expected value is a number (or text that is exactly one number),
  else `text`.
A list of expected values accepts any of them. Comparing never raises on odd input: a bad
regex, or an expected value of the wrong type, is a `ValueError` at load time (`check`).
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

WAYS = ("auto", "text", "number", "contains", "regex")
DEFAULT_RELATIVE = 1e-6
_NUMBER = re.compile(r"(?<![\w.])[-+−]?[$€£¥]?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?\s?%?(?![\w])"
                     r"|(?<![\w.])[-+−]?\.\d+(?![\w])")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_NOT_WORD = re.compile(r"[^\w]+")


@dataclass(frozen=True)
class Verdict:
    """`ok`: the answer matches; `how`: the way used; `expected`/`got`: as shown in evidence."""

    ok: bool
    how: str
    expected: str
    got: str

    @property
    def evidence(self) -> str:
        return f"expected {self.expected}, got {self.got}"


def normalise(text: Any) -> str:
    """The text form both sides are compared in (`text`, `contains`)."""
    value = unicodedata.normalize("NFKC", str(text)).casefold()
    value = _NOT_WORD.sub(" ", value)
    return " ".join(_ARTICLES.sub(" ", value).split())


def numbers(text: Any) -> list[float]:
    """The numbers a text states, in order ("$1,234.5" -> 1234.5; "-3" -> -3.0; "12%" -> 12.0)."""
    if isinstance(text, bool):
        return []
    if isinstance(text, (int, float)):
        return [float(text)]
    out = []
    for found in _NUMBER.findall(unicodedata.normalize("NFKC", str(text))):
        cleaned = found.replace("−", "-").replace(",", "").strip().rstrip("%").strip()
        cleaned = re.sub(r"[$€£¥\s]", "", cleaned)
        try:
            out.append(float(cleaned))
        except ValueError:
            continue
    return out


def as_number(value: Any) -> float | None:
    """The number an expected value is (a number, or text that is exactly one number), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        found = numbers(value)
        if len(found) == 1 and not _NUMBER.sub("", unicodedata.normalize("NFKC", value)).strip(" .\t"):
            return found[0]
    return None


def check(expected: Any, how: str = "auto", tolerance: Any = None) -> None:
    """Raises ValueError when `expected` cannot be compared the way asked (at load time)."""
    if how not in WAYS:
        raise ValueError(f"unknown match {how!r} (use one of {', '.join(WAYS)})")
    values = expected if isinstance(expected, list) else [expected]
    if not values:
        raise ValueError("expected answer is an empty list")
    for value in values:
        if value is None or isinstance(value, (dict, list)):
            raise ValueError(f"expected answer must be text or a number, not {type(value).__name__}")
        if how == "regex":
            try:
                re.compile(str(value))
            except re.error as exc:
                raise ValueError(f"bad regex {value!r}: {exc}") from None
        if how == "number" and as_number(value) is None:
            raise ValueError(f"expected answer {value!r} is not a number")
    if tolerance is not None and (isinstance(tolerance, bool) or not isinstance(tolerance, (int, float))
                                  or tolerance < 0):
        raise ValueError(f"tolerance must be a non-negative number, not {tolerance!r}")


def compare(expected: Any, got: Any, how: str = "auto", tolerance: float | None = None) -> Verdict:
    """Does the answer `got` match `expected` (see the module docstring)? `got` None: no answer."""
    values = expected if isinstance(expected, list) else [expected]
    shown_got = "no answer" if got is None else _quoted(got)
    verdicts = [_one(value, got, how, tolerance) for value in values]
    used = verdicts[0][1] if verdicts else how
    ok = got is not None and any(ok for ok, _ in verdicts)
    shown = " or ".join(_shown(value, way) for value, (_, way) in zip(values, verdicts))
    return Verdict(ok, used, shown, shown_got)


def holds(expected: Any, text: Any, how: str = "auto", tolerance: float | None = None) -> bool:
    """Whether a text holds the expected answer anywhere (any of a list): a number as `number`
    reads it, a text as `contains` does, a pattern as `regex` does. What the analyzer asks of
    the texts a run received (`analyzer/silent/answer.py`, `answer_dropped`); the final answer itself is
    judged by `compare`."""
    if text is None:
        return False
    values = expected if isinstance(expected, list) else [expected]
    return any(_one(value, text, _searched_as(value, how), tolerance)[0] for value in values)


def _searched_as(value: Any, how: str) -> str:
    """How a text is searched for an expected value: a text (`text`, or `auto` on what is not a
    number) as `contains`, the rest as they are compared."""
    return "contains" if how == "text" or (how == "auto" and as_number(value) is None) else how


def shown(expected: Any, how: str = "auto") -> str:
    """The expected answer as the evidence of `compare` writes it (`"$108.00"`, `/pattern/`)."""
    return compare(expected, None, how).expected


def _one(expected: Any, got: Any, how: str, tolerance: float | None) -> tuple[bool, str]:
    way = how
    if way == "auto":
        way = "number" if as_number(expected) is not None else "text"
    if got is None:
        return False, way
    if way == "number":
        wanted = as_number(expected)
        if wanted is None:
            return False, way
        return any(_close(wanted, value, tolerance) for value in numbers(got)), way
    if way == "contains":
        needle = normalise(expected)
        return bool(needle) and f" {needle} " in f" {normalise(got)} ", way
    if way == "regex":
        try:
            return re.search(str(expected), str(got)) is not None, way
        except re.error:
            return False, way
    return normalise(expected) == normalise(got), way


def _close(wanted: float, value: float, tolerance: float | None) -> bool:
    if tolerance is None:
        return math.isclose(wanted, value, rel_tol=DEFAULT_RELATIVE, abs_tol=1e-12)
    return abs(wanted - value) <= tolerance


def _shown(value: Any, way: str) -> str:
    if way == "regex":
        return f"/{value}/"
    if way == "contains":
        return f"text containing {_quoted(value)}"
    return _quoted(value)


def _quoted(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f'"{text}"' if isinstance(value, str) else text
