"""Fail-open: instrumentation errors are logged once and never reach the host program.

Every wrapper calls our code through `safely(...)`; an exception raised inside it is logged the
first time it happens at that place (so a broken hook cannot flood the logs) and swallowed, and
the host call proceeds with exactly the result it would have had without us.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, TypeVar

from otel_agent_trace.errors import HostFacingError

logger = logging.getLogger("otel_agent_trace")
T = TypeVar("T")

_seen: set[str] = set()
_seen_lock = threading.Lock()


def log_once(where: str, exc: BaseException) -> None:
    """Log `exc` raised at `where` with its traceback, the first time only."""
    key = f"{where}:{type(exc).__name__}"
    with _seen_lock:
        if key in _seen:
            return
        _seen.add(key)
    logger.warning("otel-agent-trace: instrumentation error in %s (ignored, the agent continues)", where, exc_info=exc)


def safely(where: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """Run `fn`; on any exception log it once and return None.

    Exceptions we raise into the agent on purpose (`HostFacingError`) pass through.
    """
    try:
        return fn(*args, **kwargs)
    except HostFacingError:
        raise
    except Exception as exc:  # noqa: BLE001 - fail-open is the contract
        log_once(where, exc)
        return None


def reset_log_once() -> None:
    """Forget what was logged (tests)."""
    with _seen_lock:
        _seen.clear()
