"""Failure evidence a trace proves in its text: tool results, observations, exception messages.

Foreign instrumentations (OpenInference, OpenLLMetry, GenAI semconv) record a tool's result as
text (`output.value`, `traceloop.entity.output`, `gen_ai.tool.call.result`) and a framework's
exception as an `exception` event. Neither carries an error type. This module reads them,
conservatively: a pattern must appear in the *head* of a result (its first `HEAD_CHARS`
characters, where a fetched page's title, an HTTP client's error line or an error banner sit),
never deep inside page content, where the same words are just text the tool found.

`result_error(text)` -> `(kind, evidence)` or None, kinds:
* `http`        - an HTTP error page or client error: `Title: Error 403`, `## Error 404`,
                  `403 Client Error: Forbidden for url`, `HTTP Error 404`, `403 Forbidden`,
                  `429 Too Many Requests`, `503 Service Unavailable`;
* `rate_limit`  - `rate limit exceeded` / `rate limited` / `RateLimitError`;
* `not_found`   - `No such file or directory`, `FileNotFoundError`;
* `connection`  - `Connection aborted`, `ConnectionError`, `Max retries exceeded with url`,
                  `Name or service not known`, `Connection refused`;
* `timeout`     - `timed out`, `TimeoutError`, `ReadTimeout`, `deadline exceeded`;
* `traceback`   - a Python traceback (`Traceback (most recent call last):`).

`exception_kind(type, message)` -> what a framework's exception says about who failed:
* `format`      - the model's output could not be parsed (smolagents `AgentParsingError`,
                  `Error in code parsing`, `regex pattern ... was not found`, `Code parsing failed`,
                  a `SyntaxError` in generated code, `OutputParserException`), or its code was
                  refused by the sandbox as written (smolagents `InterpreterError`, except the
                  operation limit);
* `arguments`   - a tool was called with arguments its signature does not accept (`TypeError:
                  ... got an unexpected keyword argument`, `missing N required positional
                  argument`, `takes N positional arguments but M were given`) or rejected by
                  its input schema (`ValidationError`);
* `operations`  - an interpreter's operation / recursion budget was exhausted (smolagents
                  `Reached the max number of operations`, `RecursionError`);
* `max_steps`   - the agent hit its step limit (`AgentMaxStepsError`, `max steps`);
* `generation`  - the model call itself failed (`AgentGenerationError`, provider errors);
* `timeout`, `not_found`, `http`, `connection`, `rate_limit` - as for results;
* `exception`   - anything else.

`asks_for_lookup(text)` -> the first words of a plan that ask for something from outside the task
(search, look up, retrieve, consult a source, a web page, Wikipedia, a database, a paper), or None
when the plan works only on what the task gives (parse, compute, reason).

`listed_tools(prompt)` -> the tool (and team-member) names a prompt lists in the smolagents
convention, one per line at the start of the line: `- name: description` (indented bullets such
as a plan's `  - Reasoning:` are not listings). `mentioned(text, names)` -> those of `names` the
text contains as whole words. Together they prove that a model's own plan named a tool it had.
"""

from __future__ import annotations

import re

HEAD_CHARS = 400  # where an error banner sits in a tool result

# (kind, pattern, words): a head can match the pattern only if its lower case holds one of `words`
# (looked for first: a substring test costs far less than these searches, and most heads hold none).
# For a pattern that ignores case the test is made on ASCII heads only (`re` folds some non-ASCII
# letters onto ASCII ones: `ı` matches `i`).
_RESULT_PATTERNS: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    ("http", re.compile(r"^\s*(?:Title:\s*|#+\s*)Error\s+([45]\d\d)\b", re.MULTILINE), ("error",)),
    ("http", re.compile(r"\b([45]\d\d) (?:Client|Server) Error\b"), ("error",)),
    ("http", re.compile(r"\bHTTP(?:Error| Error)\s*:?\s*([45]\d\d)\b"), ("http",)),
    ("http", re.compile(r"^\s*(?:Title:\s*|#+\s*)?([45]\d\d) (?:Forbidden|Not Found|Unauthorized|Too Many Requests|"
                        r"Service Unavailable|Internal Server Error|Bad Gateway|Gateway Time-?out)\b", re.MULTILINE),
     ("forbidden", "not found", "unauthorized", "too many requests", "service unavailable", "internal server error",
      "bad gateway", "gateway time")),
    ("rate_limit", re.compile(r"\brate[ _-]?limit(?:ed| exceeded|error)\b|\bRateLimitError\b", re.IGNORECASE),
     ("limit",)),
    ("not_found", re.compile(r"No such file or directory|\bFileNotFoundError\b"),
     ("no such file or directory", "filenotfounderror")),
    ("connection", re.compile(r"Connection aborted|\bConnectionError\b|Max retries exceeded with url|"
                              r"Name or service not known|Connection refused|RemoteDisconnected"),
     ("connection aborted", "connectionerror", "max retries exceeded with url", "name or service not known",
      "connection refused", "remotedisconnected")),
    ("timeout", re.compile(r"\btimed out\b|\bTimeoutError\b|\bReadTimeout\b|deadline exceeded", re.IGNORECASE),
     ("timed out", "timeouterror", "readtimeout", "deadline exceeded")),
    ("traceback", re.compile(r"^Traceback \(most recent call last\):", re.MULTILINE),
     ("traceback (most recent call last):",)),
)

_FORMAT = re.compile(r"AgentParsingError|Error in code parsing|regex pattern .{0,80}was not found|Code parsing failed|"
                     r"\bSyntaxError\b|OutputParserException|Could not parse (?:LLM|model) output|ParsingError", re.IGNORECASE | re.DOTALL)
# smolagents' sandbox refused the model's code as written (not a resource limit: see _OPERATIONS)
_SANDBOX = re.compile(r"InterpreterError: (?!Reached the max)")
_ARGUMENTS = re.compile(r"got an unexpected keyword argument|missing \d+ required (?:positional|keyword-only) argument|"
                        r"takes \d+ positional arguments? but \d+ (?:were|was) given|"
                        r"(?:input|argument)s? (?:validation|schema) (?:error|failed)|\bValidationError\b")
_OPERATIONS = re.compile(r"max(?:imum)? number of operations|\bRecursionError\b|maximum recursion depth", re.IGNORECASE)
_MAX_STEPS = re.compile(r"MaxStepsError|max(?:imum)?[ _]steps|step limit|\bbudget\b", re.IGNORECASE)
_GENERATION = re.compile(r"AgentGenerationError|Error in generating model output|\bBadRequestError\b|"
                         r"\bAPIError\b|\bAuthenticationError\b", re.IGNORECASE)


def result_error(text: object) -> tuple[str, str] | None:
    """(kind, evidence) when the head of a tool result proves a failure, else None."""
    if text is None:
        return None
    head = (text if isinstance(text, str) else str(text))[:HEAD_CHARS]
    lower = head.lower()
    ascii_head = head.isascii()
    for kind, pattern, words in _RESULT_PATTERNS:
        if (ascii_head or not pattern.flags & re.IGNORECASE) and not any(w in lower for w in words):
            continue  # cannot match (see _RESULT_PATTERNS)
        match = pattern.search(head)
        if match:
            return kind, _line_of(head, match.start())
    return None


def exception_kind(exc_type: str, message: str) -> str:
    """What a framework exception (type + message) says about who failed; see the module doc."""
    text = f"{exc_type} {message}"
    if _MAX_STEPS.search(exc_type) or re.search(r"Reached max steps|max steps", message, re.IGNORECASE):
        return "max_steps"
    if _GENERATION.search(exc_type) or message.startswith("Error in generating model output"):
        return "generation"
    if _FORMAT.search(exc_type) or _FORMAT.search(message[:200]):
        return "format"
    if _ARGUMENTS.search(text):
        return "arguments"
    if _OPERATIONS.search(text):
        return "operations"
    if _SANDBOX.search(message):
        return "format"
    found = result_error(message)
    if found:
        return found[0] if found[0] != "traceback" else "exception"
    if re.search(r"timeout|timed out", text, re.IGNORECASE):
        return "timeout"
    return "exception"


_LISTED_TOOL = re.compile(r"^- ([A-Za-z_][A-Za-z0-9_]*):", re.MULTILINE)


def listed_tools(prompt: object) -> set[str]:
    """Tool / team-member names listed in a prompt, `- name: description` at the start of a line."""
    if not isinstance(prompt, str) or not (prompt.startswith("- ") or "\n- " in prompt):
        return set()  # no line starts with `- `: nothing to search for
    return set(_LISTED_TOOL.findall(prompt))


def mentioned(text: object, names: set[str]) -> set[str]:
    """The names the text contains as whole words (identifiers: `search_agent`, `visualizer`)."""
    if not isinstance(text, str) or not names:
        return set()
    # (a name not in the text at all needs no search for it as a word)
    return {n for n in names if n in text and re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", text)}


# Words by which a plan asks for information the task does not hold (an act of looking something
# up, or a place it would be found). A plan that names none works from the task and the model.
_LOOKUP = re.compile(r"\b(?:search\w*|look(?:s|ing)?[ -]up|lookup|retriev\w*|research\w*|brows\w*|consult\w*|"
                     r"locat\w*|download\w*|visit\w*|web|online|internet|wikipedia|databases?|sources?|"
                     r"documentation|articles?|websites?|pages?|papers?|urls?)\b", re.IGNORECASE)


def asks_for_lookup(text: object) -> str | None:
    """The word by which a plan asks for something from outside the task, or None (see `_LOOKUP`)."""
    if not isinstance(text, str):
        return None
    found = _LOOKUP.search(text)
    return found.group(0) if found else None


def _line_of(text: str, pos: int, limit: int = 120) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    line = text[start: end if end >= 0 else len(text)].strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."
