"""`result_error` looks for each pattern's words before searching: the words must never hide a match."""

from __future__ import annotations

import re

from otel_agent_trace.analyzer.normalize.evidence import _RESULT_PATTERNS, result_error

EXAMPLES = [
    "Title: Error 404", "## Error 503", "403 Client Error: Forbidden for url", "HTTP Error 404", "HTTPError: 500",
    "403 Forbidden", "404 Not Found", "429 Too Many Requests", "503 Service Unavailable", "502 Bad Gateway",
    "504 Gateway Time-out", "rate limit exceeded", "Rate-Limited", "RateLimitError", "No such file or directory",
    "FileNotFoundError", "Connection aborted", "ConnectionError", "Max retries exceeded with url",
    "Name or service not known", "Connection refused", "RemoteDisconnected", "timed out", "TIMED OUT",
    "TimeoutError", "ReadTimeout", "deadline exceeded", "Traceback (most recent call last):",
]


def test_every_match_holds_one_of_its_words():
    for text in EXAMPLES:
        for _, pattern, words in _RESULT_PATTERNS:
            if pattern.search(text):
                assert any(w in text.lower() for w in words), (text, pattern.pattern)
        assert result_error(text) is not None, text


def test_case_folded_letters_still_match():
    # `re` folds `ı` onto `i` when ignoring case: the words are not looked for in such a head
    assert re.search(r"\btimed out\b", "request tımed out", re.IGNORECASE)
    assert result_error("request tımed out") == ("timeout", "request tımed out")
    assert result_error("rate lımited") == ("rate_limit", "rate lımited")
