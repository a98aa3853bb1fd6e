"""A replayed raw call answered at the HTTP client: the recorded answer as the provider's wire body.

`with_raw_response` and `with_streaming_response` (openai, anthropic) hand the caller the SDK's
own HTTP response object (`LegacyAPIResponse`, `APIResponse`), which the SDK builds from the
request it sends, the response it receives and the call's private options, cast type and stream
class. Rebuilding those from the SDKs' private constructors would copy each method's internals.
Instead a replayed raw call runs the SDK's real method, and its one HTTP send is answered in
process: `send` of the SDK's HTTP client (`httpx2` or `httpx`, both public API) returns a response
made of the recorded body (JSON, or server-sent events for a stream, rendered by the same code as
the scripted test server) with the request the SDK built. No socket is opened; everything above
the send (headers, `parse()`, streams, post-parsers) is the SDK's own code.

The send patch is installed on first use, is inert outside a replayed raw call (a context
variable holds the one pending answer) and is removed by `uninstrument`. If it cannot be installed the call goes live, said once.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

logger = logging.getLogger("otel_agent_trace")

LIBRARIES = ("httpx2", "httpx")  # the HTTP clients of the openai and anthropic SDKs, newest first


@dataclass
class Wire:
    """One recorded answer as the HTTP body the provider would have sent."""

    body: bytes
    content_type: str
    is_async: bool
    sent: bool = False


def json_answer(payload: dict[str, Any], is_async: bool) -> Wire:
    return Wire(json.dumps(payload).encode(), "application/json", is_async)


def sse_answer(body: bytes, is_async: bool) -> Wire:
    return Wire(body, "text/event-stream", is_async)


_pending: contextvars.ContextVar[Wire | None] = contextvars.ContextVar("agent_trace_replay_wire", default=None)
_installed: bool | None = None
_patched: list[Any] = []  # the HTTP library modules whose `send` is wrapped
_lock = threading.Lock()


def through(wire: Wire, wrapped: Any, args: tuple, kwargs: dict) -> Any:
    """`wrapped(*args, **kwargs)` with its HTTP send answered by `wire`; None if that cannot be."""
    if not _install():
        return None
    if wire.is_async:
        return _through_async(wire, wrapped, args, kwargs)
    token = _pending.set(wire)
    try:
        return wrapped(*args, **kwargs)
    finally:
        _pending.reset(token)


async def _through_async(wire: Wire, wrapped: Any, args: tuple, kwargs: dict) -> Any:
    token = _pending.set(wire)  # set where the coroutine runs: the send happens when it is awaited
    try:
        return await wrapped(*args, **kwargs)
    finally:
        _pending.reset(token)


def _install() -> bool:
    global _installed
    with _lock:
        if _installed is None:
            _installed = _patch()
    return _installed


def _patch() -> bool:
    import wrapt

    try:
        found = [sys.modules[name] for name in LIBRARIES if name in sys.modules]
        for module in found:
            wrapt.wrap_function_wrapper(module, "Client.send", _send)
            wrapt.wrap_function_wrapper(module, "AsyncClient.send", _send_async)
            _patched.append(module)
        if not found:
            raise LookupError(f"none of {', '.join(LIBRARIES)} is imported")
    except Exception as exc:  # noqa: BLE001 - fail-open: the call goes live, said once
        logger.warning("otel-agent-trace replay: with_raw_response/with_streaming_response calls go live: "
                       "cannot answer them at the HTTP client (%s: %s)", type(exc).__name__, exc)
        return False
    return True


def uninstall() -> None:
    """Unwrap `send` (the instrumentor's `uninstrument`); the next replayed raw call installs it again."""
    global _installed
    from opentelemetry.instrumentation.utils import unwrap

    with _lock:
        while _patched:
            module = _patched.pop()
            unwrap(module.Client, "send")
            unwrap(module.AsyncClient, "send")
        _installed = None


def _take() -> Wire | None:
    wire = _pending.get()
    if wire is None or wire.sent:
        return None
    wire.sent = True
    return wire


def _send(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    wire = _take()
    return wrapped(*args, **kwargs) if wire is None else response(args[0] if args else kwargs["request"], wire)


def _send_async(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    wire = _take()
    return wrapped(*args, **kwargs) if wire is None else _ready(response(args[0] if args else kwargs["request"], wire))


async def _ready(value: Any) -> Any:
    return value


def response(request: Any, wire: Wire) -> Any:
    """A 200 response of the request's own HTTP library, holding `wire`'s body."""
    library = sys.modules[type(request).__module__.split(".")[0]]
    answer = library.Response(200, headers={"content-type": wire.content_type}, content=wire.body, request=request)
    answer.elapsed = timedelta(0)  # set by the client when it reads a real response
    return answer
