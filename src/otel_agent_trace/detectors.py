"""The detectors: one definition of each error the recorder flags online and the analyzer
derives offline (docs/attributes.md, "Error types").

Pure functions over plain data (model.py, schema.py, the standard library): no SDK, no
recorder, no analyzer. The recorder's guards call them on live requests and responses; the
analyzer's lifecycle calls them on what a trace recorded. Neither keeps a variant of its own.

- `loop_reached`: a request of a tool with the same canonical arguments (`call_key`) as
  `threshold - 1` earlier calls of the run whose results were not errors (the configuration's
  `loop_threshold` in both places: the recorder's config, the analysis's `AnalyzerSettings`).
  Offline a tool span stands for the request that made it.
- `fabricated_values`: values in the model's final answer never received in a user, system or
  developer message or a tool result, nor used in the run's own tool calls (an answer restating
  what it did), and not computed from those numbers (`_computed`) nor a restated part of a known
  date or time (`_in_a_date`).
- `dropped_messages` / `drops_instructions`: messages of the previous step's context gone from
  this one; only a lost system or developer message is the error `context_dropped`.
- `classify_result`: an empty result, an error payload, or ok (an exception is the caller's).
- `argument_problems` / `declared_tools`: arguments that are not a JSON object or violate the
  tool's declared schema (`invalid_arguments`); a tool not declared (`unknown_tool`).
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import re
from bisect import bisect_left
from itertools import filterfalse
from typing import Any, Iterable, Iterator, Mapping

import orjson

from otel_agent_trace import schema
from otel_agent_trace.json_text import parse_json_or_text
from otel_agent_trace.vocabulary import INSTRUCTION_ROLES, Outcome


# --- loops --------------------------------------------------------------------------------------
def canonical_arguments(arguments: Any) -> str:
    """Canonical JSON of parsed arguments (keys sorted): equal calls have equal text."""
    try:
        return orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return str(arguments)


def call_key(name: str, arguments: Any) -> tuple[str, str]:
    """What makes two requested calls the same: tool name and canonical parsed arguments."""
    return name, canonical_arguments(arguments)


def loop_reached(ok_before: int, threshold: int) -> bool:
    """Is a request a loop, given how many earlier calls of the run with the same `call_key`
    returned results that were not errors? It is when it makes `threshold` (0: never). A failed
    call repeated is a retry, not a loop (`tool_retry_exceeded`); a loop whose flagged call failed
    is flagged again at the next repeat."""
    return threshold > 0 and ok_before + 1 == threshold


# --- tool results ---------------------------------------------------------------------------------
_EMPTY_TEXTS = frozenset({"", "[]", "{}", "null", "none", '""', "''"})
ERROR_PAYLOAD_RULES_ENV = "OTEL_AGENT_TRACE_ERROR_PAYLOAD_RULES"
# When a successful result (a JSON object) is an error payload: each rule names a top-level field
# and a test on its value; any rule that holds makes the result `error_result`. `requires`: other
# fields that must be present too (a bare `code` is as often a product code as an error code).
DEFAULT_ERROR_PAYLOAD_RULES: tuple[dict[str, Any], ...] = (
    {"field": "error", "test": "present"},  # non-empty: {"error": "..."} or {"error": {...}}
    {"field": "errors", "test": "present"},  # GraphQL and friends: a non-empty list
    {"field": "success", "test": "equals", "value": False},
    {"field": "ok", "test": "equals", "value": False},
    {"field": "status", "test": "in", "value": ["error", "failed", "failure", "fail", "ERROR", "FAILED"]},
    {"field": "status", "test": "http_error"},  # a number (or numeric text) 400-599
    {"field": "status_code", "test": "http_error"},
    {"field": "statusCode", "test": "http_error"},
    {"field": "http_status", "test": "http_error"},
    {"field": "code", "test": "http_error", "requires": ["message"]},
)


def _http_error(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return isinstance(value, (int, float)) and 400 <= value <= 599


_TESTS = {
    "present": lambda v, _: v not in (None, "", False, [], {}),
    "equals": lambda v, want: v == want and type(v) is type(want),
    "in": lambda v, want: isinstance(v, str) and v in (want or ()),
    "http_error": lambda v, _: _http_error(v),
}


def error_payload_rules(environ: Mapping[str, str] | None = None) -> tuple[dict[str, Any], ...]:
    """The rule set: `DEFAULT_ERROR_PAYLOAD_RULES`, plus the rules of
    `OTEL_AGENT_TRACE_ERROR_PAYLOAD_RULES` (a JSON list, inline or in a file it names; a rule with
    `"enabled": false` removes the default rules of its field). Bad rules are ignored."""
    raw = (os.environ if environ is None else environ).get(ERROR_PAYLOAD_RULES_ENV, "").strip()
    if not raw:
        return DEFAULT_ERROR_PAYLOAD_RULES
    cached = _rules_cache.get(raw)
    if cached is not None:
        return cached
    text = raw
    if not raw.startswith("["):
        try:
            with open(raw, encoding="utf-8") as handle:
                text = handle.read()
        except OSError:
            text = "[]"
    extra = parse_json_or_text(text)
    rules = list(DEFAULT_ERROR_PAYLOAD_RULES)
    for rule in extra if isinstance(extra, list) else ():
        if not isinstance(rule, dict) or not isinstance(rule.get("field"), str):
            continue
        if rule.get("enabled") is False:
            rules = [r for r in rules if r["field"] != rule["field"]]
        elif rule.get("test") in _TESTS:
            rules.append(rule)
    _rules_cache[raw] = tuple(rules)
    return _rules_cache[raw]


_rules_cache: dict[str, tuple[dict[str, Any], ...]] = {}


def error_payload(result: dict[str, Any], rules: Iterable[dict[str, Any]] | None = None) -> bool:
    """Whether a JSON object result is an error payload by the rule set."""
    for rule in error_payload_rules() if rules is None else rules:
        field = rule["field"]
        if field in result and _TESTS[rule.get("test", "present")](result[field], rule.get("value")) \
                and all(r in result for r in rule.get("requires", ())):
            return True
    return False


def classify_result(result: Any) -> Outcome:
    """Outcome of a tool result value (a Python object or the text fed back to the model).

    Empty: `[]`, `{}`, `null`, `""`. Error payload: an object the rule set calls one
    (`error_payload`), or text starting with `Error`, `Exception` or `Traceback`. Text content
    blocks (`{"type": "text", "text": ...}`) are classified by their text.
    """
    if isinstance(result, (str, bytes)):
        text = result.decode("utf-8", "replace") if isinstance(result, bytes) else result
        stripped = text.strip()
        if stripped.lower() in _EMPTY_TEXTS:
            return Outcome.EMPTY_RESULT
        if stripped[:1] in "[{":
            parsed = parse_json_or_text(stripped)
            if not isinstance(parsed, str):
                return classify_result(parsed)
        head = stripped[:16].lower()
        if head.startswith("error") or head.startswith("exception") or head.startswith("traceback"):
            return Outcome.ERROR_RESULT
        return Outcome.OK
    if result is None:
        return Outcome.EMPTY_RESULT
    if isinstance(result, (list, tuple, set, dict)) and len(result) == 0:
        return Outcome.EMPTY_RESULT
    text = _content_text(result)
    if text is not None:
        return classify_result(text)
    if isinstance(result, dict) and error_payload(result):
        return Outcome.ERROR_RESULT
    return Outcome.OK


_TEXT_BLOCK_KEYS = frozenset({"type", "text", "annotations", "_meta"})


def _content_text(result: Any) -> str | None:
    """The text of a result given as content blocks (MCP's `TextContent`, a framework passing an
    MCP result on as JSON): one text block, or a list of text blocks only. Their text is what the
    tool returned; the wrapper says nothing of it. None for anything else."""
    blocks = [result] if isinstance(result, dict) else result if isinstance(result, (list, tuple)) else None
    if not blocks:
        return None
    for block in blocks:
        if not (isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
                and block.keys() <= _TEXT_BLOCK_KEYS):
            return None
    return "\n".join(block["text"] for block in blocks)


# --- arguments and declared tools ---------------------------------------------------------------
def declared_tools(tools: Iterable[Any]) -> dict[str, Any]:
    """Tool name -> its parameters schema (None when undeclared), from OpenAI-style definitions
    (`{"type": "function", "function": {...}}`) or flat ones (`{"name", "parameters"}`)."""
    declared: dict[str, Any] = {}
    for tool in tools:
        if isinstance(tool, str):
            tool = parse_json_or_text(tool)
        if not isinstance(tool, dict):
            continue
        function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        name = function.get("name")
        if name:
            declared[str(name)] = function.get("parameters")
    return declared


def argument_problems(arguments: Any, parameters: Any) -> list[str]:
    """Why parsed `arguments` do not fit a declared tool's `parameters` schema (empty: they do)."""
    if not isinstance(arguments, dict):
        return ["$: arguments are not a JSON object"]
    return schema.errors(arguments, parameters)


def read_json_arguments(text: Any) -> tuple[bool, Any] | None:
    """(whether the text needed no strip, its parse) of arguments that look like JSON (start with
    `{` or `[`); None for none or plain text (plain-text arguments are a convention, not an error)."""
    if not isinstance(text, str):
        return None
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return None
    return len(stripped) == len(text), parse_json_or_text(stripped)


def malformed_arguments(text: Any) -> bool:
    """Arguments that look like JSON but do not parse: `invalid_arguments`, declared tools or not."""
    read = read_json_arguments(text)
    return read is not None and isinstance(read[1], str)


def parse_arguments(text: str | None) -> Any:
    """Arguments as the model sent them, parsed (no text: no arguments, `{}`)."""
    return parse_json_or_text(text) if text else {}


# --- context --------------------------------------------------------------------------------------
def dropped_messages(previous: list[str], current: Iterable[str]) -> list[str]:
    """Message hashes of the previous step's context missing from this one."""
    present = set(current)
    return [h for h in previous if h not in present]


def drops_instructions(roles: Iterable[str]) -> bool:
    """A drop is the error `context_dropped` when it loses a system or developer message (a
    sliding window over old turns is common: an event, not an error)."""
    return any(r in INSTRUCTION_ROLES for r in roles)


# --- values: distinctive, received, fabricated -----------------------------------------------------
# A value is *distinctive* when it can identify something, so that meeting it again is evidence
# of flow, not coincidence:
# - a number whose absolute value is >= 10 (ids, amounts; not 0, 1, counters or booleans);
# - a string (a JSON leaf, or a token of free text split on white space, quotes and brackets) of
#   3+ characters that contains a digit and a letter or 3+ digits (`A1001`, `C-77`, `2026-11-30`;
#   not a range like `3-5`), or that contains one of `/ . _ - @ :` with 4+ characters and a letter
#   (`count.py`, `src/app`, `a@b.io`, `user_id`).
# - a number with a unit or an ordinal's suffix is that number (`72°F`, `42.2km`, `150ms`, `40th`).
# Plain words (`shipped`, `true`, `null`) and one-letter strings are never distinctive. Numbers in
# text (`$25.00`) are read as numbers, so they meet the same value in JSON (`25.0`).
RECEIVED_ROLES = ("user", "system", "developer", "tool")  # messages whose values the model received
_SEPARATORS = r"\s\"'`()\[\]{}<>,;=|"
_SEPARATOR_CHARS = "\"'`()[]{}<>,;=|"  # the separators other than white space, each replaced by a space
_ASCII_SEPARATORS = bytes.maketrans(_SEPARATOR_CHARS.encode(), b" " * len(_SEPARATOR_CHARS))
# a token that can be distinctive holds a digit or one of / . _ - @ : (plain words never are): a
# whole run of non-separators that holds one (`_candidates`)
_MARKED = re.compile(r"[\d/._@:\-]").search
_SPACE = re.compile(r"\s")
_DIGIT = re.compile(r"\d")
_ALPHA = re.compile(r"[^\W\d_]")
_MARK = re.compile(r"[/._\-@:]")
_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3}){1,3}|\d+)?(?:\.\d+)?(?:[eE][+-]?\d+)?")
_TRIM = "$€£¥.,:;!?*#%"
# a number, then a unit or an ordinal's suffix (case matters: `30M` may be millions, `12B` a flat)
_UNIT_NUMBER = re.compile(r"(\d+(?:\.\d+)?)(?:st|nd|rd|th|°[CF]?|℃|℉|[kcm]?m|mi|ft|in|[km]?g|lbs?|oz|m?[lL]|gal|"
                          r"h|hrs?|mins?|s|secs?|[mµun]s|[kKMGT]B|[KMG]bps|[kMG]?W|kWh|[kMG]?Hz|px|pt|x|(k|K|M|bn))")
# a magnitude's suffix, as a power of ten (`1.3k`, `30M`, `4.2bn`); its key keeps the exponent, so
# that the digits stated say how far it may be rounded (`1.3k` is 1299 rounded: `n:1.3e3`)
_MAGNITUDES = {"k": 3, "K": 3, "M": 6, "bn": 9}
# a magnitude in words, read as its suffix (`30.1 million` is `30.1M`)
_MAGNITUDE_WORD = re.compile(r"(\d(?:[\d,]*\d)?(?:\.\d+)?)\s+(thousand|million|billion)\b", re.IGNORECASE)
_MAGNITUDE_SUFFIX = {"thousand": "k", "million": "M", "billion": "bn"}
MAX_SCAN_CHARS = 65536  # values past this many characters of one result/argument are not indexed
_CACHE_CHARS = 8_000_000  # bound of the cache below, in characters of text held
_cache: dict[str, frozenset[str]] = {}  # text -> its keys: contexts repeat across steps and runs
_cached_chars = 0


def value_key(value: Any) -> str | None:
    """The key of a distinctive value (`n:25` or `s:A1001`), else None (see above)."""
    if value is None or value is True or value is False:
        return None
    if isinstance(value, (int, float)):
        return f"n:{float(value):g}" if abs(value) >= 10 else None
    if not isinstance(value, str):
        return None
    if value.isdigit() and value.isascii():  # (ids and amounts in text: the regexes below, without them)
        return _digits_key(value)
    text = value.strip().strip(_TRIM) if len(value) < 256 else value.strip()
    if len(text) < 3:
        return None
    if _NUMBER.fullmatch(text) and _DIGIT.search(text):
        try:
            number = float(text.replace(",", ""))
        except ValueError:  # an exponent without a mantissa (`E0000`): an id, below
            pass
        else:
            return f"n:{number:g}" if abs(number) >= 10 else None
    if text[0].isdigit() and not text[-1].isdigit():  # (dates, times and plain numbers end with a digit)
        unit = _UNIT_NUMBER.fullmatch(text)
        if unit is not None:
            number = float(unit.group(1))
            magnitude = unit.group(2)
            if magnitude:
                return f"n:{unit.group(1)}e{_MAGNITUDES[magnitude]}"
            return f"n:{number:g}" if number >= 10 else None
    if _DIGIT.search(text):  # an id (A1001, C-77) or a long code (2026-11-30); not a range like 3-5
        return f"s:{text}" if _ALPHA.search(text) or len(_DIGIT.findall(text)) >= 3 else None
    if len(text) >= 4 and _MARK.search(text) and _ALPHA.search(text) and not _SPACE.search(text):
        return f"s:{text}"
    return None


def _digits_key(digits: str) -> str | None:
    """`value_key` of ASCII digits: a number of 3+ digits, distinctive from 10 (`007` is 7: not)."""
    if len(digits) < 3:
        return None
    number = float(digits)
    return f"n:{number:g}" if number >= 10 else None


def leaves(value: Any, depth: int = 0) -> Iterator[Any]:
    """Scalar leaves of a JSON-like value; text yields its candidate tokens instead."""
    out: list[Any] = []
    _gather(value, depth, out, None)
    return iter(out)


def _gather(value: Any, depth: int, out: list[Any], texts: set[str] | None) -> None:
    """`leaves` into `out`, by recursion without a generator per level; `texts`: the long texts
    tokenized so far, so that a text repeated in a payload is tokenized once (None: every time)."""
    if depth > 32:
        return
    if isinstance(value, dict):
        for item in value.values():
            _gather(item, depth + 1, out, texts)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _gather(item, depth + 1, out, texts)
    elif isinstance(value, str):
        if len(value) <= 64 and not _SPACE.search(value):
            out.append(value)  # an identifier-like string is one value
        elif texts is None:  # text: its tokens are the values (those that can be distinctive)
            out += _candidates(value)
        elif value not in texts:  # (keys: the runs that are not letters only, filtered in C: words never are)
            texts.add(value)
            out += filterfalse(str.isalpha, _runs(value))
    else:
        out.append(value)


# a number's thousands separators are no separator: `$1,299` is 1299, not 1 and 299 (a digit, a
# comma, three digits and no fourth); found in C: digits read as `0`, then one substring search
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_GROUPED = re.compile(r"(\d),(?=\d{3}(?!\d))")
_GROUPED_BYTES = re.compile(rb"(\d),(?=\d{3}(?!\d))")


def _runs(text: str) -> list[str]:
    """The runs of non-separators of a text's first `MAX_SCAN_CHARS` characters, in order:
    separators become spaces and `str.split` cuts the runs (`\\s` is `str.isspace`), all in C
    (a regex finding them cost ~10x); a number's thousands separators are kept in it (above)."""
    if len(text) > MAX_SCAN_CHARS:
        text = text[:MAX_SCAN_CHARS]
    if text.isascii():  # (most text: one table lookup per byte, where fifteen searches cost ~5x)
        raw = text.encode()
        if b"," in raw and b"0,000" in raw.translate(_DIGITS_AS_ZERO):
            raw = _GROUPED_BYTES.sub(rb"\1", raw)
        text = raw.translate(_ASCII_SEPARATORS).decode()
    else:
        if "," in text:
            text = _GROUPED.sub(r"\1", text)
        for separator in _SEPARATOR_CHARS:
            if separator in text:
                text = text.replace(separator, " ")
    return text.split()


def _candidates(text: str) -> list[str]:
    """The runs of a text that can be distinctive (hold a digit or a mark), in order."""
    marked = _MARKED
    return [run for run in _runs(text) if not run.isalpha() and marked(run)]  # (letters only: no mark)


def distinctive_values(payload: Any) -> frozenset[str]:
    """Keys of the distinctive values in a tool result, arguments or message text.

    JSON text is parsed first, so `'{"id": "A1"}'` and `{"id": "A1"}` give the same keys. Results
    for text are cached (bounded): the same content reappears in every step's context.
    """
    text = payload if isinstance(payload, str) else None
    if text is not None:
        cached = _cache.get(text)
        if cached is not None:
            return cached
        payload = parse_json_or_text(text[:MAX_SCAN_CHARS] if len(text) > MAX_SCAN_CHARS else text)
    keys = _keys_of(payload)
    if text is not None:
        global _cached_chars
        if _cached_chars + len(text) > _CACHE_CHARS:
            _cache.clear()
            _cached_chars = 0
        _cache[text] = keys
        _cached_chars += len(text)
    return keys


def _keys_of(payload: Any) -> frozenset[str]:
    """`value_key` of every leaf, each distinct leaf once (a text repeats its tokens, a result its
    rows), string leaves through a bounded memo (an id meets the analyzer in its result, its
    arguments and the answer): the same keys as mapping `value_key` over `leaves`."""
    distinct: Iterable[Any]
    if payload.__class__ is str and (len(payload) > 64 or _SPACE.search(payload)):
        # plain text (most answers and messages): its runs, as `_gather` would give them, without its walk
        distinct = set(filterfalse(str.isalpha, _runs(payload)))
    else:
        found: list[Any] = []
        _gather(payload, 0, found, set())
        try:
            distinct = set(found)
        except TypeError:  # an unhashable leaf (not from JSON): each is read
            distinct = found
    memo = _token_keys
    keys = set()
    for leaf in distinct:
        if leaf.__class__ is str and len(leaf) <= _TOKEN_MEMO_CHARS:
            if leaf.isalpha():
                continue  # letters only: no digit, no mark, never distinctive (most words of a text)
            key = memo.get(leaf, _UNKNOWN)
            if key is _UNKNOWN:
                if len(memo) >= _TOKEN_MEMO:
                    memo.clear()
                key = memo[leaf] = value_key(leaf)
        else:
            key = value_key(leaf)
        if key is not None:
            keys.add(key)
    return frozenset(keys)


# strings whose key `_keys_of` remembers (then it starts again), each at most this long: the memo
# holds at most ~2 MB, in the recorder's process too
_TOKEN_MEMO = 1 << 14
_TOKEN_MEMO_CHARS = 128
_token_keys: dict[str, str | None] = {}
_UNKNOWN = object()


# What a model computes with that is never distinctive itself, kept as keys beside the distinctive
# values a run received (`operand_values`), so that a number computed from them reads as computed,
# not made up (`fabricated_values`):
# - factors (`o:`): small numbers with a fraction (|x| < 10) and percentages, a rate, a share, a
#   tax (100 USD x 0.92 = 92 EUR; $250 plus 8% = $270);
#   (and a number in a field named as one: `{"discount_percent": 15}`);
# - totals (`t:`) of a list a JSON result holds: the sum and the mean of a list of numbers, of each
#   numeric field of a list of objects, and the sum of the products of two fields (a cart's
#   quantities times prices): a total no single value of the result states.
_FACTOR = re.compile(r"[+-]?(?:\d?\.\d+|\d+(?:\.\d+)?%)")  # 0.92, .15, -0.5, 8%, 8.5% (a whole token)
MAX_OPERANDS = 200  # factors tried per number (bounded: a long run stays cheap)
_MAX_TOTALS_ITEMS = 1000  # a list longer than this is not totalled
_MAX_TOTALS_FIELDS = 6  # numeric fields of a list of objects whose products are summed, at most


def operand_values(payload: Any) -> frozenset[str]:
    """The factors and totals (see above) of a tool result, arguments or message. Factors: its runs
    of non-separators (`_runs`, as `distinctive_values` reads text; JSON is read as its text) that
    are a fraction under 10 or a percentage. Totals: of the lists in it, when it is JSON. Read only
    for an answer that needs it (`fabricated_values`' `received`); text is cached as `distinctive_values`' is
    (the same system prompt and results reach every run of a process)."""
    if not isinstance(payload, str):
        return _operands_of(orjson.dumps(payload, default=str).decode(), payload)
    cached = _operand_cache.get(payload)
    if cached is None:
        global _operand_chars
        cached = _operands_of(payload, None)
        if _operand_chars + len(payload) > _CACHE_CHARS // 2:
            _operand_cache.clear()
            _operand_chars = 0
        _operand_cache[payload] = cached
        _operand_chars += len(payload)
    return cached


_operand_cache: dict[str, frozenset[str]] = {}
_operand_chars = 0


def _operands_of(text: str, data: Any) -> frozenset[str]:
    keys: set[str] = set()
    if "." in text or "%" in text:  # (most texts without either: no factor, one search in C)
        for run in [r for r in _runs(text) if "." in r or "%" in r]:
            token = run.strip(":!?*").rstrip(".")
            if _FACTOR.fullmatch(token):
                number = float(token[:-1]) / 100 if token.endswith("%") else float(token)
                if 0 < abs(number) < 10:
                    keys.add(f"o:{number:g}")
    if data is None and text.lstrip()[:1] in ("{", "["):
        data = parse_json_or_text(text[:MAX_SCAN_CHARS])
    if isinstance(data, (dict, list)):
        _totals(data, keys)
    return frozenset(keys)


_MAX_TOTALS_NODES = 10_000  # objects and lists visited per payload, at most
_PERCENT_FIELD = re.compile(r"(?i)percent|pct")


def _is_number(value: Any) -> bool:
    cls = value.__class__
    return cls is int or cls is float  # (a bool's class is neither)


def _totals(value: Any, keys: set[str]) -> None:
    """`t:` keys of the lists in a JSON value (see above), and `o:` keys of the numbers in fields
    named as percentages: one walk, plain loops, at most _MAX_TOTALS_NODES objects and lists."""
    stack = [value]
    budget = _MAX_TOTALS_NODES
    while stack and budget:
        node = stack.pop()
        budget -= 1
        if node.__class__ is dict:
            for k, v in node.items():
                if v.__class__ is dict or v.__class__ is list:
                    stack.append(v)
                elif _is_number(v) and isinstance(k, str) and _PERCENT_FIELD.search(k):  # {"discount_percent": 15}
                    keys.add(f"o:{v / 100:g}")
            continue
        if 2 <= len(node) <= _MAX_TOTALS_ITEMS:
            first = node[0]
            if _is_number(first):
                for v in node:
                    if not _is_number(v):
                        break
                else:
                    _add_total(keys, node)
                    continue  # (a list of numbers holds nothing more)
            elif first.__class__ is dict:
                _row_totals(node, first, keys)
        for v in node:
            if v.__class__ is dict or v.__class__ is list:
                stack.append(v)


def _row_totals(rows: list[Any], first: dict[str, Any], keys: set[str]) -> None:
    """A list of objects: the totals of each numeric field (as the first object has them) and of
    the products of two."""
    columns = []
    for field, v in first.items():
        if not _is_number(v):
            continue
        column = []
        for row in rows:
            x = row.get(field) if row.__class__ is dict else None
            if not _is_number(x):
                break
            column.append(x)
        else:
            columns.append(column)
            _add_total(keys, column)
            if len(columns) == _MAX_TOTALS_FIELDS:
                break
    for i, a in enumerate(columns):
        for b in columns[i + 1:]:
            total = sum(x * y for x, y in zip(a, b))
            if math.isfinite(total):
                keys.add(f"t:{total:g}")


def _add_total(keys: set[str], numbers: list[Any]) -> None:
    total = sum(numbers)
    if math.isfinite(total):  # (a NaN or an infinity in a payload built in code: no total)
        keys.add(f"t:{total:g}")
        keys.add(f"t:{total / len(numbers):g}")


# a date or time as one token (`2026-11-02`, `2026/11/02T09:30`, `02.11.2026`, `09:30:15`): an
# answer restating it in other words (`November 2, 2026`) names its parts
_DATE_OR_TIME = re.compile(r"(?:(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4})"
                           r"(?:T\d{1,2}:\d{2}(?::\d{2})?)?Z?|\d{1,2}:\d{2}(?::\d{2})?)$")  # (matched from pos 2)
_DATE_PARTS = re.compile(r"\d+")


def _is_date_or_time(key: str) -> bool:
    """Whether a value key (`s:...`) holds a date or time (the digit test first: most ids start with a letter)."""
    return key[2:3].isdigit() and key.startswith("s:") and _DATE_OR_TIME.match(key, 2) is not None


# what any known number may be multiplied by (`_multipliers`): itself (restated, or rounded), a
# small multiple or share (2 x 12.5; $120 split 4 ways), a hundredth or thousandth, or 100 or 1000
# times it (12999 cents are $129.99), or a common unit's conversion either way (42.2 km are 26.2
# miles: mile, pound, inch, foot, US gallon, ounce; a temperature's difference, 1.8; 8100 seconds
# are 135 minutes: a minute, an hour, a day in seconds, a day in hours)
_CONVERSIONS = (1.609344, 0.45359237, 2.54, 0.3048, 3.785411784, 28.349523125, 1.8, 60.0, 3600.0, 86400.0, 24.0)
_BASE_MULTIPLIERS = frozenset({1.0, 0.01, 0.001, 100.0, 1000.0} | {float(k) for k in range(2, 13)}
                              | {1 / k for k in range(2, 13)} | set(_CONVERSIONS) | {1 / c for c in _CONVERSIONS})


def _multipliers(numbers: list[float], factors: list[float]) -> list[float]:
    """Sorted: the base multipliers, each factor with it added or taken off and its inverse (100 x
    0.92; 250 plus 8%; 80 less 0.15; 100 / 0.92), and the known numbers (the product of two)."""
    out = set(_BASE_MULTIPLIERS)
    for f in factors:
        out.update((f, 1 + f, 1 - f, 1 / f))
    out.update(numbers)
    out.discard(0.0)
    return sorted(out)


def _computed(text: str, numbers: list[float], present: set[float], multipliers: list[float]) -> bool:
    """A number (as its key states it) the model could have computed from known numbers: one of
    them times a multiplier (`_multipliers`), or the sum of two; each to the digits stated. One
    bisection per known number: value = x * m within half a unit of the last digit stated."""
    value = float(text)
    half_unit = _half_unit(text)
    count = len(multipliers)
    for x in numbers:
        ratio, tolerance = value / x, half_unit / abs(x)
        i = bisect_left(multipliers, ratio - tolerance)
        if i < count and multipliers[i] <= ratio + tolerance:
            return True
        # a temperature in the other scale (72 °F are 22.2 °C; 22 °C are 71.6 °F)
        if abs(value - (x - 32) / 1.8) <= half_unit or abs(value - (x * 1.8 + 32)) <= half_unit:
            return True
    return any(abs(value - x) in present for x in numbers if abs(value - x) >= 10)


RECEIVED_TEXT_CHARS = 1 << 18  # received text kept per run for the final answer's check, at most


class Received:
    """The texts a run received (messages, tool results), for the factors and totals an answer may
    have computed with (`operand_values`): read on first need, then kept (`fabricated_values`)."""

    __slots__ = ("texts", "chars", "_read", "_operands")

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self.texts: list[str] = []
        self.chars = 0
        self._read = 0
        self._operands: set[str] = set()
        for text in texts:
            self.add(text)

    def add(self, text: str | None) -> None:
        """Keep a text (cut at MAX_SCAN_CHARS; none once RECEIVED_TEXT_CHARS characters are kept:
        the recorder holds them for the run's life, most of them strings the host holds too)."""
        if text and isinstance(text, str) and self.chars < RECEIVED_TEXT_CHARS:
            text = text[:MAX_SCAN_CHARS]
            self.texts.append(text)
            self.chars += len(text)

    def operands(self) -> set[str]:
        """The factors and totals of every text kept, each text read once."""
        for text in self.texts[self._read:]:
            self._operands |= operand_values(text)
        self._read = len(self.texts)
        return self._operands


_TWELVE_HOUR = re.compile(r"(1[0-2]|0?[1-9]):([0-5]\d)")  # a time on a 12-hour clock


def _in_a_date(key: str, dates: list[str], numbers: list[float] | None = None) -> bool:
    """A value that restates part of a known date or time: a number among its parts (2026 of
    `2026-11-02`), a date or time inside it (14:30 of `2026-02-11T14:30:00Z`); or a day computed
    from a known one (`_date_after`)."""
    if key.startswith("n:"):
        value = float(key[2:])
        return any(value == float(part) for date in dates for part in _DATE_PARTS.findall(date))
    if not _is_date_or_time(key):
        return False
    text = key[2:]
    clock = _TWELVE_HOUR.fullmatch(text)
    if clock is not None:  # 2:30 (PM) of 14:30; 12:05 (AM) of 00:05
        hour = int(clock.group(1))
        afternoon = f"{(hour + 12) % 24:02d}:{clock.group(2)}"
        return any(text in date or afternoon in date for date in dates)
    return any(text in date for date in dates) or _date_after(text, dates, numbers or ())


# a day: `2026-11-02`, `2026/11/02` (a time after it is left aside)
_DAY = re.compile(r"(\d{4})[-/](\d{1,2})[-/](\d{1,2})")
# periods a day is commonly computed with, in days: weeks, a month, a quarter, half a year, a year
_COMMON_DAYS = frozenset({7, 14, 21, 28, 30, 31, 60, 90, 180, 365, 366})


def _date_after(text: str, dates: list[str], numbers: Iterable[float]) -> bool:
    """A day a known day plus or minus a period: a common one (`_COMMON_DAYS`), a number of days
    the run received (a 30-day return window: `numbers`), or whole months (up to 24) or years (up
    to 10) to the same day of the month (renewed a year after 2026-01-15: 2027-01-15)."""
    day = _day(text)
    if day is None:
        return False
    periods = _COMMON_DAYS | {int(n) for n in numbers if n == int(n) and 0 < n <= 3660}
    for known in dates:
        other = _day(known)
        if other is None or other == day:
            continue
        if abs((day - other).days) in periods:
            return True
        months = (day.year - other.year) * 12 + day.month - other.month
        if day.day == other.day and months and (abs(months) <= 24 or (months % 12 == 0 and abs(months) <= 120)):
            return True
    return False


def _day(text: str) -> _dt.date | None:
    m = _DAY.match(text)
    if m is None:
        return None
    try:
        return _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def _half_unit(text: str) -> float:
    """Half a unit of the last digit a number is stated with (`19.99`: 0.005, `20`: 0.5)."""
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** ((int(exponent) if exponent else 0) - decimals)


def fabricated_values(answer: str | None, known: set[str] | frozenset[str],
                     received: Received | None = None) -> list[str]:
    """The values of a final answer never received and not derivable (sorted, without the
    `n:`/`s:` prefix): what `fabricated_value` reports. Derivable: a number computed from known
    ones, the known totals and factors (`t:` and `o:` keys of `known`; those of `received`, read
    on the first number the known ones do not explain; `operand_values`, `_computed`), a
    restated part of a known date or time (`_in_a_date`)."""
    if answer and _MAGNITUDE_WORD.search(answer):  # (a number known as written, `142 thousand` read as written too, stays)
        answer = _MAGNITUDE_WORD.sub(lambda m: m.group() if value_key(m.group(1)) in known else
                                     m.group(1).replace(",", "") + _MAGNITUDE_SUFFIX[m.group(2).lower()], answer)
    unseen = distinctive_values(answer or "") - known
    if not unseen:
        return []
    numbers = factors = present = multipliers = None  # built on the first number to explain
    more: tuple[Any, ...] | None = None  # the same with `received`'s factors and totals
    dates: list[str] | None = None  # the known dates and times, read only if a value needs them
    code_numbers: set[str] | None = None  # the digit runs of the known ids and codes, likewise
    made_up = []
    for key in unseen:
        if key.startswith("n:"):
            if numbers is None:
                numbers, factors = _operands(known)
                present, multipliers = set(numbers), _multipliers(numbers, factors)
            if _computed(key[2:], numbers, present, multipliers):
                continue
            if received is not None:
                if more is None:
                    more = _with(numbers, factors, received.operands() - known)
                if more and _computed(key[2:], *more):
                    continue
        if dates is None:
            dates = [k[2:] for k in known if _is_date_or_time(k)] + _epoch_days(known)
        if dates and key.startswith("s:") and numbers is None:
            numbers, factors = _operands(known)  # (a day may be a number of days after a known one)
            present, multipliers = set(numbers), _multipliers(numbers, factors)
        if dates and _in_a_date(key, dates, numbers):
            continue
        if key.startswith("n:") and key[2:].isdigit():  # the number of a code (4521 of `GH-4521`, 1001 of `A1001`)
            if code_numbers is None:
                code_numbers = {m.group(1) for k in known if k.startswith("s:") for m in [_CODE.match(k, 2)] if m}
            if key[2:] in code_numbers:
                continue
        made_up.append(_as_written(key[2:]))
    return sorted(made_up)


_SUFFIX_OF_EXPONENT = {str(_MAGNITUDES[suffix]): suffix for suffix in _MAGNITUDE_SUFFIX.values()}
# a code that is letters and a number (`GH-4521`, `A1001`, `#42`): the number names the same thing
_CODE = re.compile(r"[A-Za-z]*[-_#]?0*(\d+)$")


def _as_written(value: str) -> str:
    """A value as the report names it: a magnitude's key (`1.5e3`) with its suffix (`1.5k`)."""
    mantissa, e, exponent = value.partition("e")
    return mantissa + _SUFFIX_OF_EXPONENT[exponent] if e and exponent in _SUFFIX_OF_EXPONENT else value


def _epoch_days(known: set[str] | frozenset[str]) -> list[str]:
    """The days a known Unix timestamp (seconds or milliseconds, 2001-2099) falls on, and the day
    either side (shown in a local time zone; a key keeps 6 digits, so the hour is approximate)."""
    days = []
    for key in known:
        if key.startswith("n:") and "e+" in key:
            seconds = float(key[2:])
            if 1e12 <= seconds < 4.1e12:
                seconds /= 1000
            if 1e9 <= seconds < 4.1e9:
                day = _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc).date()
                days += [(day + _dt.timedelta(days=d)).isoformat() for d in (-1, 0, 1)]
    return days


def _with(numbers: list[float], factors: list[float], extra: set[str]) -> tuple[Any, ...]:
    """`_computed`'s operands with `extra`'s totals and factors added; () without any."""
    if not extra:
        return ()
    added, more_factors = _operands(extra)
    numbers = numbers + added
    return numbers, set(numbers), _multipliers(numbers, (factors + more_factors)[:MAX_OPERANDS])


def _operands(known: set[str] | frozenset[str]) -> tuple[list[float], list[float]]:
    """The known numbers and totals, and the factors (each bounded: huge runs stay cheap)."""
    numbers = [n for n in (float(k[2:]) for k in known if k.startswith(("n:", "t:"))) if n and math.isfinite(n)][:2000]
    factors = [float(k[2:]) for k in known if k.startswith("o:")][:MAX_OPERANDS]
    return numbers, factors
