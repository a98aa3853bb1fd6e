"""Harnesses for tests/test_minimize.py, named on the command line as `minimize_harnesses:NAME`.

They replay with the built-in sandbox, except on the candidates they are told to crash or hang
on; the test sets WORKSPACE / OUTPUT / CRASH_ON / HANG_ON before running the CLI.
"""

from __future__ import annotations

import time

from otel_agent_trace.minimizer import Sandbox

WORKSPACE: str | None = None
OUTPUT: str | None = None
CRASH_ON: set[tuple[int, ...]] = set()  # candidates (positions) on which the harness raises
HANG_ON: set[tuple[int, ...]] = set()  # candidates on which it does not answer for HANG_SECONDS
HANG_SECONDS = 3.0
calls: list[tuple[int, ...]] = []


def flaky(steps):
    positions = tuple(s.position for s in steps)
    calls.append(positions)
    if positions in CRASH_ON:
        raise RuntimeError("harness fell over\nconnection to the sandbox host lost")
    if positions in HANG_ON:
        time.sleep(HANG_SECONDS)
    return Sandbox(WORKSPACE, OUTPUT)(steps)


def as_text(steps):
    """A harness that answers with the signature as text, as a user's harness may."""
    return str(Sandbox(WORKSPACE, OUTPUT)(steps).signature)
