"""What we remember of each checkpointed LangGraph thread (checkpointer, `thread_id`), so that a
resume (`Command(resume=...)`, or no input, after `interrupt`) finds the run it resumes.

- `lingering(thread)`: the thread's last own run while it is still open (weakly held: an ended
  run is dropped with its last reference); the resume goes on in it (delegation.continue_run).
- `earlier(thread)`: the span context of the run the thread's last invocation recorded into, kept
  after that run ended, in a bounded map (`LIMIT` threads, least recently used dropped); a resume
  that is a run of its own links to it (`RunInvocation.link_resumed`). Within one process: a
  checkpointer that persists threads across restarts resumes them unlinked.

A thread is keyed by its checkpointer's `id()` and `thread_id`; the checkpointer is held weakly
beside the entry, so a new checkpointer that reuses a dead one's address is no match."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any

from opentelemetry.trace import SpanContext

LIMIT = 4096  # threads remembered (an entry: a key and a span context, ~200 bytes)

_lock = threading.Lock()
_lingering: "weakref.WeakValueDictionary[tuple[int, str], Any]" = weakref.WeakValueDictionary()
_earlier: "OrderedDict[tuple[int, str], tuple[Any, SpanContext]]" = OrderedDict()


def thread_of(checkpointer: Any, thread_id: Any) -> tuple[int, str] | None:
    if checkpointer is None or isinstance(checkpointer, bool) or thread_id is None:
        return None
    return id(checkpointer), str(thread_id)


def _ref(checkpointer: Any) -> Any:
    try:
        return weakref.ref(checkpointer)
    except TypeError:  # (no weak reference: the id alone)
        return None


def remember(thread: tuple[int, str], checkpointer: Any, run: Any, own: bool) -> None:
    """The thread's invocation records into `run` (`own`: a run of its own, which lingers)."""
    with _lock:
        if own:
            _lingering[thread] = run
        _earlier[thread] = (_ref(checkpointer), run.span.get_span_context())
        _earlier.move_to_end(thread)
        while len(_earlier) > LIMIT:
            _earlier.popitem(last=False)


def lingering(thread: tuple[int, str]) -> Any:
    with _lock:
        return _lingering.get(thread)


def earlier(thread: tuple[int, str], checkpointer: Any) -> SpanContext | None:
    with _lock:
        entry = _earlier.get(thread)
    if entry is None:
        return None
    ref, context = entry
    return context if ref is None or ref() is checkpointer else None
