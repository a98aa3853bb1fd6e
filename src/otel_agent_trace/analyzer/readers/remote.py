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

Safety: credentials given in the URL (`https://user:token@jaeger.example`) are sent as an HTTP
Basic `Authorization` header and never appear in the report, a span's source or an error message
(the URL is shown as `https://***@jaeger.example`); a redirect is followed only to the same
scheme, host and port; a response over `MAX_RESPONSE_BYTES` or taking longer than
`MAX_RESPONSE_SECONDS` in all (a server that drips bytes) is refused with that reason.
"""

from __future__ import annotations

import base64
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Iterator

import orjson

from otel_agent_trace.analyzer.readers.otlp_json import spans_of_doc
from otel_agent_trace.analyzer.spans import InputReport, Span

TIMEOUT = 30.0  # per connect / read
MAX_RESPONSE_SECONDS = 120.0  # a whole response
MAX_RESPONSE_BYTES = 512 << 20
_CHUNK = 1 << 16
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> int:
    """Seconds of `90s`, `15m`, `1h`, `2d`, `1w` (also combined: `1h30m`)."""
    parts = re.findall(r"(\d+)([smhdw])", text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise ValueError(f"bad duration {text!r} (use e.g. 30m, 1h, 2d)")
    return sum(int(n) * _UNITS[u] for n, u in parts)


class _Endpoint:
    """A base URL without its credentials, the header that carries them, and the strings that
    must never be shown."""

    def __init__(self, base: str) -> None:
        parts = urllib.parse.urlsplit(base.rstrip("/"))
        self.secrets: list[str] = []
        self.headers: dict[str, str] = {}
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, host = netloc.rpartition("@")
            user, _, password = userinfo.partition(":")
            user, password = urllib.parse.unquote(user), urllib.parse.unquote(password)
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            self.headers["Authorization"] = f"Basic {token}"
            self.secrets = [s for s in (userinfo, password, user, token) if s]
            netloc = host
        self.base = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
        self.origin = (parts.scheme, netloc.lower())
        self.shown = urllib.parse.urlunsplit((parts.scheme, ("***@" if self.secrets else "") + netloc, parts.path,
                                              parts.query, parts.fragment))

    def show(self, url: str) -> str:
        """`url` (built on `base`) as it may be shown."""
        return self.shown + url[len(self.base):] if url.startswith(self.base) else self.scrub(url)

    def scrub(self, text: str) -> str:
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return text

    def get(self, url: str, accept: str = "application/json") -> bytes:
        request = urllib.request.Request(url, headers={"Accept": accept, "User-Agent": "otel-agent-trace", **self.headers})
        opener = urllib.request.build_opener(_SameOrigin(self.origin))
        deadline = time.monotonic() + MAX_RESPONSE_SECONDS
        with opener.open(request, timeout=TIMEOUT) as response:
            length = response.headers.get("Content-Length")
            if length and length.isdigit() and int(length) > MAX_RESPONSE_BYTES:
                raise ResponseRefused(f"response of {int(length)} bytes is over the {MAX_RESPONSE_BYTES}-byte limit")
            chunks: list[bytes] = []
            size = 0
            while True:
                chunk = response.read1(_CHUNK) if hasattr(response, "read1") else response.read(_CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise ResponseRefused(f"response over the {MAX_RESPONSE_BYTES}-byte limit")
                if time.monotonic() > deadline:
                    raise ResponseRefused(f"response took longer than {MAX_RESPONSE_SECONDS:g} s")
                chunks.append(chunk)
            return b"".join(chunks)

    def describe(self, exc: Exception) -> str:
        if isinstance(exc, urllib.error.HTTPError):
            text = f"HTTP {exc.code} {exc.reason}"
        elif isinstance(exc, urllib.error.URLError):
            text = f"cannot connect: {exc.reason}"
        elif isinstance(exc, ResponseRefused):
            text = str(exc)
        else:
            text = f"{type(exc).__name__}: {exc}"
        return self.scrub(text)


class ResponseRefused(OSError):
    """A response refused for its size, duration or redirect."""


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to the same scheme, host and port: the credentials go nowhere else."""

    def __init__(self, origin: tuple[str, str]) -> None:
        self.origin = origin

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001
        parts = urllib.parse.urlsplit(urllib.parse.urljoin(req.full_url, newurl))
        if (parts.scheme, parts.netloc.rpartition("@")[2].lower()) != self.origin:
            raise ResponseRefused(f"redirect to another host refused ({parts.scheme}://{parts.hostname})")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def fetch_jaeger(base: str, service: str, lookback: str, limit: int, report: InputReport) -> Iterator[Span]:
    end = _Endpoint(base)
    base = end.base
    seconds = parse_duration(lookback)
    query = urllib.parse.urlencode({"service": service, "lookback": lookback, "limit": limit})
    url = f"{base}/api/traces?{query}"
    report.path = end.show(url)
    try:
        body = end.get(url)
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            report.error = f"cannot fetch: {end.describe(exc)}"
            return
        now = time.time()
        query = urllib.parse.urlencode({
            "query.service_name": service,
            "query.start_time_min": _rfc3339(now - seconds), "query.start_time_max": _rfc3339(now),
            "query.search_depth": limit})
        url = f"{base}/api/v3/traces?{query}"
        report.path = end.show(url)
        try:
            body = end.get(url)
        except (OSError, ValueError) as exc2:
            report.error = f"cannot fetch: {end.describe(exc2)}"
            return
    except (OSError, ValueError) as exc:
        report.error = f"cannot fetch: {end.describe(exc)}"
        return
    yield from _parse(body, end.show(url), report)


def fetch_tempo(base: str, traceql: str, limit: int, since: str | None, report: InputReport) -> Iterator[Span]:
    end = _Endpoint(base)
    base = end.base
    params: dict[str, object] = {"q": traceql, "limit": limit}
    if since:
        now = int(time.time())
        params.update(start=now - parse_duration(since), end=now)
    url = f"{base}/api/search?{urllib.parse.urlencode(params)}"
    report.path = end.show(url)
    try:
        found = orjson.loads(end.get(url))
    except (OSError, ValueError) as exc:
        report.error = f"cannot search: {end.describe(exc)}"
        return
    ids = [t.get("traceID") for t in (found.get("traces") or []) if isinstance(t, dict)] if isinstance(found, dict) else []
    for number, trace_id in enumerate(ids, start=1):
        if not isinstance(trace_id, str) or not re.fullmatch(r"[0-9a-fA-F]{1,32}", trace_id):
            report.bad(number, f"search result with a bad trace id {trace_id!r}")
            continue
        try:
            body = end.get(f"{base}/api/traces/{trace_id}")
        except (OSError, ValueError) as exc:
            report.bad(number, f"trace {trace_id}: {end.describe(exc)}")
            continue
        yield from _parse(body, end.show(url), report, number)


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
