"""Harnesses: what replays a subset of steps and says how it failed.

A harness is a callable `harness(steps) -> Outcome | Signature | str` (`"WRONG_OUTPUT(ab12)"`),
given the chosen steps in their recorded order. It may have `pure(step) -> bool`, saying which
steps change nothing a later step could need (the closure then skips edges into them). `sandbox`
is the built-in one (sandbox.py); `module:function` names any other.

Every call is guarded: a harness that raises gives `HARNESS_ERROR(type: last line)`, one that
does not answer within `timeout` seconds gives `HARNESS_TIMEOUT` (its thread is left behind, as a
daemon), and the search goes on with the next candidate.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any, Callable, Sequence

from otel_agent_trace.minimizer.ddmin import Outcome
from otel_agent_trace.minimizer.signature import HARNESS_ERROR, HARNESS_TIMEOUT, Signature
from otel_agent_trace.minimizer.trajectory import MinimizeError, Step

Harness = Callable[[Sequence[Step]], Any]


def load_harness(spec: str) -> Harness:
    """`package.module:function` -> the function (or any callable attribute)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise MinimizeError(f"--harness {spec}: expected module:function or sandbox")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # the user's module: any import error is theirs to see
        raise MinimizeError(f"--harness {spec}: cannot import {module_name}: {type(exc).__name__}: {exc}") from None
    target: Any = module
    for part in attribute.split("."):
        target = getattr(target, part, None)
    if not callable(target):
        raise MinimizeError(f"--harness {spec}: {attribute} is not a callable of {module_name}")
    return target


def as_outcome(value: Any) -> Outcome:
    if isinstance(value, Outcome):
        return value
    if isinstance(value, Signature):
        return Outcome(value)
    if isinstance(value, str):
        return Outcome(Signature.parse(value))
    raise TypeError(f"the harness returned {type(value).__name__}, not an Outcome, Signature or str")


def guarded(harness: Harness, steps: Sequence[Step], timeout: float | None) -> Outcome:
    """`harness(steps)` as an Outcome; crashes and hangs become HARNESS_ERROR / HARNESS_TIMEOUT."""
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["outcome"] = as_outcome(harness(list(steps)))
        except BaseException as exc:  # noqa: BLE001 - a harness's SystemExit is a crash to report too
            lines = str(exc).strip().splitlines()
            box["outcome"] = Outcome(Signature(HARNESS_ERROR, f"{type(exc).__name__}: {lines[-1] if lines else ''}".rstrip(": ")),
                                     note=f"{type(exc).__name__}: {exc}")

    worker = threading.Thread(target=call, name="otel-agent-trace-harness", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        return Outcome(Signature(HARNESS_TIMEOUT, f"no answer after {timeout:g} s"))
    return box["outcome"]
