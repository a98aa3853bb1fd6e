"""Failure signatures: what a replay's failure looked like, so that a smaller candidate counts as
"still failing" only when it fails *the same way* (seed 004's first trap: a candidate that fails
because a needed step is gone is another bug, not a smaller case of this one).

Built-in kinds: `PASS` (the output is the expected one), `WRONG_OUTPUT(hash)` (an output exists,
with this content hash), `TOOL_ERROR(type: last line)` (a step failed), `NO_OUTPUT` (nothing was
produced). A harness may return any other kind (`Signature("DB_STATE", "...")`); the runner adds
`HARNESS_ERROR(type: last line)` and `HARNESS_TIMEOUT` when the harness itself crashes or hangs.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

PASS, WRONG_OUTPUT, TOOL_ERROR, NO_OUTPUT = "PASS", "WRONG_OUTPUT", "TOOL_ERROR", "NO_OUTPUT"
HARNESS_ERROR, HARNESS_TIMEOUT = "HARNESS_ERROR", "HARNESS_TIMEOUT"
HASH_CHARS = 12  # as in the seed's WRONG_OUTPUT(969a12dd4967)

# how two signatures are compared (`--signature`)
MODES = ("exact", "error", "output", "any")
_TEXT = re.compile(r"^(?P<kind>[A-Z][A-Z0-9_]*)(?:\((?P<detail>.*)\))?$", re.S)


@dataclass(frozen=True)
class Signature:
    kind: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind}({self.detail})" if self.detail else self.kind

    @property
    def failing(self) -> bool:
        return self.kind != PASS

    @property
    def error_type(self) -> str:
        """`KeyError` of `TOOL_ERROR(KeyError: 'x')`: the detail before its first `: `."""
        return self.detail.split(": ", 1)[0]

    @classmethod
    def parse(cls, text: str) -> "Signature":
        """`WRONG_OUTPUT(abc)` -> Signature("WRONG_OUTPUT", "abc"); what a harness may return as text."""
        match = _TEXT.match(text.strip())
        if not match:
            raise ValueError(f"not a signature: {text!r} (expected KIND or KIND(detail))")
        return cls(match["kind"], match["detail"] or "")


def output_signature(content: bytes | str, expected: str | None = None) -> Signature:
    """PASS when the content's sha256 starts with `expected` (a hex prefix), else WRONG_OUTPUT(hash)."""
    data = content.encode() if isinstance(content, str) else content
    digest = hashlib.sha256(data).hexdigest()
    if expected and digest.startswith(expected.lower()):
        return Signature(PASS)
    return Signature(WRONG_OUTPUT, digest[:HASH_CHARS])


def error_signature(error_type: str, text: str) -> Signature:
    """TOOL_ERROR(type: last line); when the last line already starts with `type:`, it is kept as is."""
    lines = [line.strip() for line in (text or "").strip().splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if not last:
        return Signature(TOOL_ERROR, error_type)
    if last.startswith(error_type + ":") or re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b:", last):
        return Signature(TOOL_ERROR, last)
    return Signature(TOOL_ERROR, f"{error_type}: {last}")


def same_failure(original: Signature, candidate: Signature, mode: str = "exact") -> bool:
    """Whether `candidate` reproduces `original` under `mode`:

    - `exact`: kind and detail equal;
    - `error`: kind equal and, for TOOL_ERROR, the error type (messages may differ);
    - `output`: kind equal and, for WRONG_OUTPUT, the hash (any TOOL_ERROR matches a TOOL_ERROR);
    - `any`: the candidate fails at all (seed 004's loose R0, kept to show why it is wrong).
    A harness that crashed or hung never reproduces anything.
    """
    if candidate.kind in (HARNESS_ERROR, HARNESS_TIMEOUT) or candidate.kind == PASS:
        return False
    if mode == "any":
        return True
    if candidate.kind != original.kind:
        return False
    if mode == "exact":
        return candidate.detail == original.detail
    if mode == "error":
        return original.kind != TOOL_ERROR or candidate.error_type == original.error_type
    if mode == "output":
        return original.kind != WRONG_OUTPUT or candidate.detail == original.detail
    raise ValueError(f"unknown signature mode {mode!r}; one of {', '.join(MODES)}")
