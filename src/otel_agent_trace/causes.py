"""The exception that caused a failure: exception groups unwrapped to their first leaf.

anyio and asyncio task groups wrap what a task raised in `ExceptionGroup: unhandled errors in a
TaskGroup`, once per task group it leaves (mcp's stdio client and `ClientSession` hold one each):
a report naming the group names no cause. `cause(exc)` unwraps a live exception (the recorder,
before it writes a failed span); `event_exception(attributes)` unwraps a recorded `exception`
event (the analyzer, for spans another instrumentation wrote) from the traceback text its
`exception.stacktrace` holds. The first leaf that is not a cancellation is the cause: the
sibling tasks a failure cancels are its effect.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

_MAX_DEPTH = 64
_CANCELLED = ("CancelledError", "Cancelled")


def is_group(exc: BaseException) -> bool:
    """A `BaseExceptionGroup` (builtin, or the `exceptiongroup` backport on Python 3.10)."""
    return isinstance(getattr(exc, "exceptions", None), tuple) and any(
        klass.__name__ == "BaseExceptionGroup" for klass in type(exc).__mro__)


def cause(exc: BaseException) -> BaseException:
    """`exc`, or for an exception group the first leaf that caused it (depth first)."""
    for _ in range(_MAX_DEPTH):
        if not is_group(exc) or not exc.exceptions:  # type: ignore[attr-defined]
            return exc
        inner = exc.exceptions  # type: ignore[attr-defined]
        exc = next((e for e in inner if _causal(e)), inner[0])
    return exc


def _causal(exc: BaseException) -> bool:
    """Not a bare cancellation (a group holding one is causal when one of its leaves is)."""
    if is_group(exc):
        return any(_causal(e) for e in exc.exceptions)  # type: ignore[attr-defined]
    return type(exc).__name__ not in _CANCELLED


# --- recorded events --------------------------------------------------------------------------
# `traceback.format_exception` of a group: its own traceback, then each sub-exception's block
# after a `+-+---- 1 ----` / `+---- 2 ----` separator, every line of a block behind `| `, nested
# groups indented further; a block's last line is `Type: message` (or `Type`).
_SEPARATOR = re.compile(r"^\s*\+[-+]*-+(?: (?:\d+|\.\.\.) .*)?-*\s*$")
_BLOCK_LINE = re.compile(r"^\s*\| ?(.*)$")
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)(?::\s?(.*))?$")


def event_exception(attributes: Mapping[str, Any]) -> tuple[str, str]:
    """(exception.type, exception.message) of a recorded exception event; for a group, those of
    the first leaf its stacktrace shows (the group's own when it shows none)."""
    exc_type = str(attributes.get("exception.type", "") or "")
    message = str(attributes.get("exception.message", "") or "")
    if exc_type.endswith("ExceptionGroup"):
        leaf = leaf_from_stacktrace(str(attributes.get("exception.stacktrace", "") or ""))
        if leaf is not None:
            return leaf
    return exc_type, message


def leaf_from_stacktrace(text: str) -> tuple[str, str] | None:
    """(type, message) of the first non-cancellation leaf in a formatted exception group."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if _SEPARATOR.match(line):
            current = []
            blocks.append(current)
        elif current is not None:
            match = _BLOCK_LINE.match(line)
            if match is not None:
                current.append(match.group(1))
    first: tuple[str, str] | None = None
    for block in blocks:
        found = _block_exception(block)
        if found is None or found[0].endswith("ExceptionGroup"):
            continue  # a nested group's own block: its leaves follow as their own blocks
        if found[0].rsplit(".", 1)[-1] not in _CANCELLED:
            return found
        first = first or found
    return first


def _block_exception(block: list[str]) -> tuple[str, str] | None:
    """The exception a leaf's block ends with: the first unindented line after its last frame
    (a message may go on over more lines)."""
    body = [line for line in block if line.strip()]
    frames = [i for i, line in enumerate(body) if line.startswith(" ") or line.startswith("Traceback")]
    start = frames[-1] + 1 if frames else 0
    for i in range(start, len(body)):
        match = _EXCEPTION_LINE.match(body[i])
        if match is not None:
            message = "\n".join([match.group(2) or "", *body[i + 1:]]).strip()
            return match.group(1), message
    return None
