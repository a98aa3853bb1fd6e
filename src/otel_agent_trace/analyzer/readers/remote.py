"""Fetch traces over HTTP from Jaeger or Tempo (stdlib urllib; no client library).

- Jaeger query service: `GET /api/traces?service=S&lookback=1h&limit=N` (the HTTP API the UI
  uses, `{"data": [...]}`; Jaeger v1 and v2). When it answers 404 (an API-v3-only endpoint), the
  v3 API is used: `GET /api/v3/traces?query.service_name=S&query.start_time_min=...&
  query.start_time_max=...&query.search_depth=N` (`{"result": {"resourceSpans": [...]}}`).
- Tempo: `GET /api/search?q=<TraceQL>&limit=N&start=&end=` (`{"traces": [{"traceID"}, ...]}`),
  then `GET /api/traces/<id>` with `Accept: application/json` for each (OTLP JSON, `{"batches"}`
  or `{"resourceSpans"}`).

Each fetch is one input of the report, named by its URL; an HTTP or connection error makes it
unreadable (exit 2), and the other inputs are still analysed.
"""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Iterator

import orjson

from otel_agent_trace.analyzer.readers.otlp_json import spans_of_doc
from otel_agent_trace.analyzer.spans import InputReport, Span

TIMEOUT = 30.0
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> int:
    """Seconds of `90s`, `15m`, `1h`, `2d`, `1w` (also combined: `1h30m`)."""
    parts = re.findall(r"(\d+)([smhdw])", text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise ValueError(f"bad duration {text!r} (use e.g. 30m, 1h, 2d)")
    return sum(int(n) * _UNITS[u] for n, u in parts)


def _get(url: str, accept: str = "application/json") -> bytes:
    request = urllib.request.Request(url, headers={"Accept": accept, "User-Agent": "otel-agent-trace"})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:  # noqa: S310 - user-given URL
        return response.read()


def _describe(exc: Exception) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return f"cannot connect: {exc.reason}"
    return f"{type(exc).__name__}: {exc}"


def fetch_jaeger(base: str, service: str, lookback: str, limit: int, report: InputReport) -> Iterator[Span]:
    base = base.rstrip("/")
    seconds = parse_duration(lookback)
    query = urllib.parse.urlencode({"service": service, "lookback": lookback, "limit": limit})
    url = f"{base}/api/traces?{query}"
    report.path = url
    try:
        body = _get(url)
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            report.error = f"cannot fetch: {_describe(exc)}"
            return
        now = time.time()
        query = urllib.parse.urlencode({
            "query.service_name": service,
            "query.start_time_min": _rfc3339(now - seconds), "query.start_time_max": _rfc3339(now),
            "query.search_depth": limit})
        url = f"{base}/api/v3/traces?{query}"
        report.path = url
        try:
            body = _get(url)
        except (OSError, ValueError) as exc2:
            report.error = f"cannot fetch: {_describe(exc2)}"
            return
    except (OSError, ValueError) as exc:
        report.error = f"cannot fetch: {_describe(exc)}"
        return
    yield from _parse(body, url, report)


def fetch_tempo(base: str, traceql: str, limit: int, since: str | None, report: InputReport) -> Iterator[Span]:
    base = base.rstrip("/")
    params: dict[str, object] = {"q": traceql, "limit": limit}
    if since:
        now = int(time.time())
        params.update(start=now - parse_duration(since), end=now)
    url = f"{base}/api/search?{urllib.parse.urlencode(params)}"
    report.path = url
    try:
        found = orjson.loads(_get(url))
    except (OSError, ValueError) as exc:
        report.error = f"cannot search: {_describe(exc)}"
        return
    ids = [t.get("traceID") for t in (found.get("traces") or []) if isinstance(t, dict)] if isinstance(found, dict) else []
    for number, trace_id in enumerate(ids, start=1):
        if not isinstance(trace_id, str) or not re.fullmatch(r"[0-9a-fA-F]{1,32}", trace_id):
            report.bad(number, f"search result with a bad trace id {trace_id!r}")
            continue
        try:
            body = _get(f"{base}/api/traces/{trace_id}")
        except (OSError, ValueError) as exc:
            report.bad(number, f"trace {trace_id}: {_describe(exc)}")
            continue
        yield from _parse(body, url, report, number)


def _parse(body: bytes, url: str, report: InputReport, number: int = 1) -> Iterator[Span]:
    # /api/v3/traces may stream several JSON objects (one per chunk), one per line or back to back
    try:
        docs = [orjson.loads(body)]
    except orjson.JSONDecodeError:
        docs = []
        for line_number, line in enumerate(body.splitlines(), start=number):
            if line.strip():
                try:
                    docs.append(orjson.loads(line))
                except orjson.JSONDecodeError as exc:
                    report.bad(line_number, f"invalid JSON in the response: {exc}")
    for doc in docs:
        if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
            error = doc["error"]
            if error.get("httpCode") == 404 or error.get("code") == 5:  # v3: no trace found
                continue
            report.bad(number, f"API error: {error.get('message') or error}")
            continue
        yield from spans_of_doc(doc, url, number, report)


def _rfc3339(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
