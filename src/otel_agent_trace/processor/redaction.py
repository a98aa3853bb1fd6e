"""Value-level redaction of a finished span into keyed pseudonyms.

A match becomes `[KIND:tag]`, tag = first 8 hex of HMAC-SHA256(key, kind:normalized value): equal
values stay equal across spans (and across processes sharing `OTEL_AGENT_TRACE_REDACT_KEY`), so
value-flow and loop detection still work on redacted traces. Without a key a random one is drawn
per process: pseudonyms are then stable within a process only, and cannot be reversed by
hashing guessed phone numbers.

Contexts re-appear in every step, so results are cached by content (the string itself is the
dict key; Python hashes it once) and long strings are split at newlines into ~1 KB chunks, so
only text not seen before is scanned. JSON values (`gen_ai.input.messages`, tool arguments) are
parsed and their leaf strings redacted one by one, so they stay valid JSON and a message seen in
an earlier step costs one dict lookup.

Never touched: non-string values (token counts, sizes, timestamps), and hex ids/hashes under the
recorder's hash keys.
"""

from __future__ import annotations

import base64
import functools
import binascii
import hashlib
import hmac
import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

import orjson
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import Link, Status

from otel_agent_trace import semconv
from otel_agent_trace.processor import pii_detectors
from otel_agent_trace.processor.redaction_rules import Rules
from otel_agent_trace.semconv import REDACTION_COUNT

FAILED = "[REDACTED:ERROR]"
_log = logging.getLogger(__name__)

# Values under these keys are hex ids / hashes written by the recorder: left intact when they
# look like that (a non-hex value there is scanned like any other).
HEX_KEYS = frozenset({semconv.CONTEXT_HASH, semconv.CONTEXT_MESSAGE_HASHES, semconv.DEPENDS_ON})
_HEXLIKE = re.compile(r"[0-9a-fA-F]{8,128}")
# Enum-valued keys: nothing to find, skip the scan.
ENUM_KEYS = frozenset({
    semconv.LIFECYCLE_PHASE, semconv.ERROR_TYPE, semconv.TOOL_OUTCOME, semconv.STEP_KIND, semconv.LINK_RELATION,
    semconv.DEPENDS_ON_RELATIONS, semconv.GEN_AI_OPERATION_NAME, semconv.TOOL_SOURCE,
})
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
# base64 runs (standard or URL-safe alphabet) long enough to hold a value (10 chars = 7 bytes,
# an IPv4 address); see `_base64` for the runs that are never tried
_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{10,}={0,2}")
_ENUM, _HEX = "\0enum", "\0hex"  # key classes (never a pseudonym kind: those are [A-Z0-9_]+)
_CHUNK = 1024
# JSON inside JSON strings is parsed this deep; deeper, its text is scanned as escaped JSON, where
# `\uXXXX` escapes glue hex digits to a value (tool arguments nest 1-3 levels in practice)
_JSON_DEPTH = 8
_LONG = 4 * _CHUNK


class RedactedSpan(ReadableSpan):
    """A copy of a finished span with redacted content; keeps the original's dropped counts."""

    def __init__(self, original: ReadableSpan, **changes: Any) -> None:
        super().__init__(
            name=changes.get("name", original.name),
            context=original.context,
            parent=original.parent,
            resource=changes.get("resource", original.resource),
            attributes=changes.get("attributes", original.attributes),
            events=changes.get("events", original.events),
            links=changes.get("links", original.links),
            kind=original.kind,
            instrumentation_info=getattr(original, "_instrumentation_info", None),
            status=changes.get("status", original.status),
            start_time=original.start_time,
            end_time=original.end_time,
            instrumentation_scope=original.instrumentation_scope,
        )
        self._dropped = (original.dropped_attributes, original.dropped_events, original.dropped_links)

    @property
    def dropped_attributes(self) -> int:
        return self._dropped[0]

    @property
    def dropped_events(self) -> int:
        return self._dropped[1]

    @property
    def dropped_links(self) -> int:
        return self._dropped[2]


def is_ours(span: ReadableSpan) -> bool:
    """Did our recorder create this span (its instrumentation scope)? Only those get `agent_trace.*`
    stamps from the processor, so no foreign span is ever mistaken for ours downstream."""
    scope = span.instrumentation_scope
    return scope is not None and scope.name == semconv.INSTRUMENTATION_SCOPE


def plain(attrs: Any) -> Any:
    """The dict inside a finished SDK span's `BoundedAttributes` (read-only use): `.get`, `.items()`
    and `.values()` on the mapping itself run in Python (`collections.abc.Mapping`), ~0.2-0.5 us
    each, on every span the processor reads. Anything else is returned as it is."""
    inner = getattr(attrs, "_dict", None)
    return inner if type(inner) is dict else attrs


def with_attributes(span: ReadableSpan, extra: Mapping[str, Any]) -> ReadableSpan:
    """`span` with attributes added (our own copies are changed in place)."""
    if isinstance(span, RedactedSpan) and isinstance(span._attributes, dict):
        span._attributes.update(extra)
        return span
    attrs = dict((plain(span._attributes) if type(span) is ReadableSpan else span.attributes) or {})
    attrs.update(extra)
    if type(span) is ReadableSpan and span.dropped_attributes == 0:
        # the SDK's end-of-span snapshot: a shallow copy is 3x cheaper than a full rebuild
        copy = object.__new__(ReadableSpan)
        copy.__dict__.update(span.__dict__)
        copy._attributes = attrs
        return copy
    return RedactedSpan(span, attributes=attrs)


class Redactor:
    """Finds and pseudonymizes sensitive values in strings, JSON and whole spans. Thread-safe."""

    def __init__(
        self,
        key: str | bytes | None = None,
        rules: Rules | None = None,
        cache_chars: int = 32 * 1024 * 1024,
        scanner: Any = None,
        disabled: Iterable[str] = (),
    ) -> None:
        """`disabled`: detector kinds (`detectors.KINDS`, e.g. `US_SSN`) whose values are left as
        they are; the scanner is then called with `disabled=` (both built-in scanners take it)."""
        if key is None:
            key = os.urandom(32)
        self._key = key.encode() if isinstance(key, str) else bytes(key)
        self.rules = rules or Rules()
        self._scan = scanner or _default_scanner()
        self.disabled = frozenset(disabled)
        if self.disabled:
            self._scan = functools.partial(self._scan, disabled=self.disabled)
        self._cache: dict[str, tuple[str, int]] = {}
        self._pseudonyms: dict[str, str] = {}
        self._cache_chars = 0
        self._cache_limit = cache_chars
        self._resources: dict[int, tuple[Resource, Resource]] = {}
        self._key_classes: dict[str, str | None] = {}  # attribute key -> how its strings are read
        self._key_rules = len(self.rules.keys)  # key rules added later clear `_key_classes`
        self._lock = threading.Lock()

    # --- strings ------------------------------------------------------------------------------
    def pseudonym(self, kind: str, norm: str) -> str:
        memo = f"{kind}:{norm}"
        hit = self._pseudonyms.get(memo)
        if hit is None:
            tag = hmac.new(self._key, memo.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:8]
            hit = f"[{kind}:{tag}]"
            if len(self._pseudonyms) > 65536:
                self._pseudonyms.clear()
            self._pseudonyms[memo] = hit
        return hit

    def text(self, s: str) -> tuple[str, int]:
        """Redacted text and number of replacements; cached by content."""
        if len(s) < 6:
            return s, 0
        hit = self._cache.get(s)
        if hit is not None:
            return hit
        if len(s) > _LONG:
            result = self._long(s)
        else:
            result = self._scan_text(s)
        self._remember(s, result)
        return result

    def _long(self, s: str) -> tuple[str, int]:
        # chunks end at a newline: no detected value spans a newline, and earlier steps'
        # chunks come back from the cache
        parts: list[str] = []
        count = 0
        start = 0
        size = len(s)
        while start < size:
            cut = s.find("\n", start + _CHUNK)
            end = size if cut == -1 else cut + 1
            chunk = s[start:end]
            hit = self._cache.get(chunk)
            if hit is None:
                hit = self._scan_text(chunk)
                self._remember(chunk, hit)
            parts.append(hit[0])
            count += hit[1]
            start = end
        return "".join(parts), count

    def _scan_text(self, s: str) -> tuple[str, int]:
        out, n = self._scan_plain(s)
        if "%" in out and _PERCENT.search(out):
            # URLs hide values behind percent-encoding (+86%20138...): scan the decoded text too,
            # and if it holds more, the decoded redacted text is what goes out
            decoded = unquote(out)
            red, more = self._scan_plain(decoded)
            if more:
                out, n = red, n + more
        if len(out) >= 10:
            out, more = self._base64(out)
            n += more
        return out, n

    def _base64(self, s: str) -> tuple[str, int]:
        """Values hidden in base64 text (data URLs, encoded payloads, basic-auth headers): each run
        that decodes to UTF-8 text is scanned, and when it holds a value it is re-encoded, in the
        same alphabet and padding, from its redacted text. Hashes and words decode to binary and
        are left alone. Runs are looked for only inside the long whitespace-separated tokens
        (`str.split` is C-fast; a regex pass over the whole text cost 4x more)."""
        replaced: dict[str, str] = {}
        total = 0
        for token in s.split():
            if len(token) < 10 or token.islower() or token.isdigit() or ("-" in token and token.isupper()):
                continue  # words, hex, numbers, ids and timestamps (`"2026-11-30T12:05:00Z",`)
            for m in _B64_RUN.finditer(token):
                run = m.group()
                if run in replaced or run.islower() or run.isdigit() or (run[0].isupper() and run[1:].islower()) \
                        or ("-" in run and run.isupper()):
                    continue  # words, hex ids, numbers, ids and timestamps (ORD-1234, 2026-11-30T12)
                decoded = _b64_text(run)
                if decoded is None:
                    continue
                red, n = self._scan_plain(decoded)
                if "%" in red and _PERCENT.search(red):
                    red2, more = self._scan_plain(unquote(red))
                    if more:
                        red, n = red2, n + more
                if n:
                    replaced[run] = _b64_encode(red, run)
                    total += n
        for run in sorted(replaced, key=len, reverse=True):  # a longer run first: never a piece of one
            s = s.replace(run, replaced[run])
        return s, total

    def _scan_plain(self, s: str) -> tuple[str, int]:
        found = self._scan(s)
        if self.rules.values:
            found = list(found)
            for rule in self.rules.values:
                for m in rule.pattern.finditer(s):
                    if m.end() > m.start():
                        found.append(pii_detectors.Found(m.start(), m.end(), rule.name, m.group()))
            found = pii_detectors.merge(found)
        if not found:
            return s, 0
        out: list[str] = []
        pos = 0
        for f in found:
            out.append(s[pos:f.start])
            out.append(self.pseudonym(f.kind, f.norm))
            pos = f.end
        out.append(s[pos:])
        return "".join(out), len(found)

    def _remember(self, s: str, result: tuple[str, int]) -> None:
        with self._lock:
            if self._cache_chars + len(s) > self._cache_limit:
                self._cache.clear()  # generational reset: cheap, and the next step refills it
                self._cache_chars = 0
            self._cache[s] = result
            self._cache_chars += len(s)

    # --- values -------------------------------------------------------------------------------
    def value(self, key: str, v: Any) -> tuple[Any, int]:
        """Redacted attribute value; non-strings are returned as they are."""
        if isinstance(v, str):
            return self._string_value(key, v)
        if isinstance(v, (list, tuple)) and v and any(isinstance(x, str) for x in v):
            total = 0
            out = []
            for x in v:
                if isinstance(x, str):
                    x, n = self._string_value(key, x)
                    total += n
                out.append(x)
            return (tuple(out) if total else v), total
        return v, 0

    def _key_class(self, key: str) -> str | None:
        """`_ENUM`, `_HEX`, a key rule's pseudonym kind, or None (scan the value): decided once
        per attribute key, since spans repeat the same few keys."""
        try:
            return self._key_classes[key]
        except KeyError:
            pass
        if key in ENUM_KEYS:
            found: str | None = _ENUM
        elif key in HEX_KEYS:
            found = _HEX
        else:
            found = self.rules.key_kind(key)
        if len(self._key_classes) < 4096:
            self._key_classes[key] = found
        return found

    def _string_value(self, key: str, s: str) -> tuple[str, int]:
        try:
            kind = self._key_class(key)
            if kind is _ENUM:
                return s, 0
            if kind is _HEX:
                if _HEXLIKE.fullmatch(s):
                    return s, 0
                kind = self.rules.key_kind(key)
            if kind is not None:
                return (self.pseudonym(kind, s), 1) if s else (s, 0)
            head = s[:1]
            if head in ("{", "[") or (head.isspace() and s.lstrip()[:1] in ("{", "[")):
                red = self._json(s)
                if red is not None:
                    return red
            return self.text(s)
        except Exception:  # noqa: BLE001 - fail closed for this value: drop it rather than leak it
            _log_once("redaction of one value failed; the value was replaced")
            return FAILED, 1

    def _json(self, s: str, depth: int = 0) -> tuple[str, int] | None:
        hit = self._cache.get(s)
        if hit is not None:
            return hit
        try:
            doc = orjson.loads(s)
        except orjson.JSONDecodeError:
            return None  # truncated or not JSON: scanned as text
        doc, n = self._walk(doc, depth)
        result = (orjson.dumps(doc).decode() if n else s), n
        self._remember(s, result)
        return result

    def _walk(self, node: Any, depth: int) -> tuple[Any, int]:
        if isinstance(node, str):
            if depth < _JSON_DEPTH and node[:1] in ("{", "["):
                red = self._json(node, depth + 1)
                if red is not None:
                    return red
            return self.text(node)
        if isinstance(node, list):
            total = 0
            for i, item in enumerate(node):
                new, n = self._walk(item, depth)
                if n:
                    node[i] = new
                    total += n
            return node, total
        if isinstance(node, dict):
            total = 0
            for k, item in node.items():
                kind = self.rules.key_kind(k) if isinstance(k, str) else None
                if kind is not None and item not in (None, "", [], {}):
                    raw = item if isinstance(item, str) else orjson.dumps(item).decode()
                    node[k] = self.pseudonym(kind, raw)
                    total += 1
                    continue
                new, n = self._walk(item, depth)
                if n:
                    node[k] = new
                    total += n
            return node, total
        return node, 0

    def attributes(self, attrs: Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, int]:
        """Redacted copy of an attribute mapping (None when nothing changed)."""
        if not attrs:
            return None, 0
        out: dict[str, Any] | None = None
        total = 0
        for k, v in attrs.items():
            if isinstance(v, str):
                new, n = self._string_value(k, v)
            elif isinstance(v, (list, tuple)):
                new, n = self.value(k, v)
            else:
                continue
            if n:
                if out is None:
                    out = dict(attrs)
                out[k] = new
                total += n
        return out, total

    # --- spans --------------------------------------------------------------------------------
    def resource(self, resource: Resource) -> Resource:
        """Redacted resource, computed once per resource object."""
        hit = self._resources.get(id(resource))
        if hit is not None and hit[0] is resource:
            return hit[1]
        attrs, n = self.attributes(resource.attributes)
        red = Resource(attrs, resource.schema_url) if n else resource
        with self._lock:
            if len(self._resources) > 64:
                self._resources.clear()
            self._resources[id(resource)] = (resource, red)
        return red

    def span(self, span: ReadableSpan) -> ReadableSpan:
        """The span with every string it carries redacted; `agent_trace.redaction.count` set on
        our own spans (another instrumentation's span is redacted alike but not stamped)."""
        if len(self.rules.keys) != self._key_rules:
            self._key_rules = len(self.rules.keys)
            self._key_classes = {}
        changes: dict[str, Any] = {}
        total = 0
        name, n = self.text(span.name)
        if n:
            changes["name"] = name
            total += n
        # the SDK's `attributes` / `events` / `links` properties copy on every read: read them once
        raw_attrs, raw_events, raw_links = _raw_parts(span)
        attrs, n = self.attributes(raw_attrs)
        total += n
        if raw_events:
            events = []
            changed = False
            for e in raw_events:
                ename, n1 = self.text(e.name)
                eattrs, n2 = self.attributes(e.attributes)
                if n1 or n2:
                    changed = True
                    total += n1 + n2
                    events.append(Event(ename, eattrs if eattrs is not None else e.attributes, e.timestamp))
                else:
                    events.append(e)
            if changed:
                changes["events"] = tuple(events)
        if raw_links:
            links = []
            changed = False
            for link in raw_links:
                lattrs, n = self.attributes(link.attributes)
                if n:
                    changed = True
                    total += n
                    links.append(Link(link.context, lattrs))
                else:
                    links.append(link)
            if changed:
                changes["links"] = tuple(links)
        status = span.status
        if status.description:
            desc, n = self.text(status.description)
            if n:
                changes["status"] = Status(status.status_code, desc)
                total += n
        resource = self.resource(span.resource)
        if resource is not span.resource:
            changes["resource"] = resource
        if total and is_ours(span):  # foreign spans are redacted alike, never stamped
            attrs = attrs if attrs is not None else dict(raw_attrs or {})
            attrs[REDACTION_COUNT] = total
        if attrs is not None:
            changes["attributes"] = attrs
        return RedactedSpan(span, **changes) if changes else span


def _raw_parts(span: ReadableSpan) -> tuple[Any, Any, Any]:
    """A span's attributes, events and links as stored (an SDK span), else through its properties."""
    try:
        return plain(span._attributes), span._events, span._links
    except AttributeError:
        return span.attributes, span.events, span.links


def scrub_span(span: ReadableSpan) -> ReadableSpan:
    """Last resort when redaction itself failed: keep ids, times, kind, status code and the
    non-string attributes; drop every string (a span that says less beats a leaked value)."""
    attrs = {k: v for k, v in (span.attributes or {}).items() if not isinstance(v, str)
             and not (isinstance(v, (list, tuple)) and any(isinstance(x, str) for x in v))}
    if is_ours(span):
        attrs[REDACTION_COUNT] = -1
    return RedactedSpan(
        span, name="[REDACTED]", attributes=attrs, events=(), links=tuple(Link(l.context) for l in span.links),
        status=Status(span.status.status_code), resource=Resource({}, span.resource.schema_url),
    )


def _b64_text(run: str) -> str | None:
    """The printable UTF-8 text a base64 run decodes to, or None (binary, or not base64)."""
    body = run.rstrip("=")
    urlsafe = "-" in body or "_" in body
    if len(body) % 4 == 1 or (urlsafe and ("+" in body or "/" in body)):
        return None
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_" if urlsafe else None, validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if not text or not (text.isprintable() or all(c.isprintable() or c.isspace() for c in text)):
        return None
    return text


def _b64_encode(text: str, like: str) -> str:
    """`text` in base64 with the alphabet of `like`; padded unless `like` is unpadded URL-safe or
    was left unpadded where it needed padding."""
    body = like.rstrip("=")
    urlsafe = "-" in body or "_" in body
    out = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(text.encode()).decode()
    if like.endswith("=") or (not urlsafe and len(body) % 4 == 0):
        return out
    return out.rstrip("=")


_logged: set[str] = set()


def _log_once(message: str) -> None:
    if message not in _logged:
        _logged.add(message)
        _log.warning("otel-agent-trace: %s", message, exc_info=True)


_SCANNER: Any = None


def _default_scanner() -> Any:
    """Hyperscan front end when installed (shared, thread-safe), else pure `re`."""
    global _SCANNER
    if _SCANNER is None:
        from otel_agent_trace.processor.fast_scan import best_scanner

        _SCANNER = best_scanner()
    return _SCANNER
