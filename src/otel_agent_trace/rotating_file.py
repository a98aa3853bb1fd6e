"""Append whole lines to a file that rotates by size, keeping a bounded set of backups.

Why not `logging.handlers.RotatingFileHandler`: its backups are named `.1`, `.2`, ... newest
first, so a sorted listing (what the analyzer does with a directory or a glob) reads them out of
order, and a reader cannot tell a rotated file from a live one. Here, as with the Collector file
exporter (lumberjack/timberjack), the live file keeps its name and a full one is renamed to
`<stem>-<UTC time>.<ext>`: names sort oldest first and before the live file, so
`analyze 'traces/agent-traces*.jsonl'` (or the directory) reads a rotated set in write order.

Boundary guarantees: a line is written with one `os.write` on an `O_APPEND` descriptor (looped
only if the kernel writes less), rotation happens only between lines and renames a closed file,
so every backup holds whole lines only and no line is split across two files; a reader that
lists the set after the writer has finished sees every line once. A live file may end in a line
that is still being written, which the analyzer reports as a truncated line.
Rotation assumes one writing process per path (forked workers should each get their own path).
"""

from __future__ import annotations

import os
import re
import threading
import time


def backup_pattern(path: str) -> re.Pattern[str]:
    """The names of `path`'s backups (in its directory), e.g. `agent-traces-20261201T170501.123456Z.jsonl`."""
    stem, ext = os.path.splitext(os.path.basename(path))
    return re.compile(re.escape(stem) + r"-\d{8}T\d{6}\.\d{6}Z" + re.escape(ext) + r"\Z")


def backups_of(path: str) -> list[str]:
    """`path`'s backups, oldest first (their names sort in time order)."""
    folder = os.path.dirname(os.path.abspath(path))
    pattern = backup_pattern(path)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    return [os.path.join(folder, n) for n in sorted(n for n in names if pattern.match(n))]


def _backup_name(path: str, micros: int) -> str:
    stem, ext = os.path.splitext(path)
    seconds, fraction = divmod(micros, 1_000_000)
    return f"{stem}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime(seconds))}.{fraction:06d}Z{ext}"


class RotatingLineFile:
    """Thread-safe appender of whole lines; `max_bytes` 0 never rotates; `backups` 0 keeps every backup."""

    def __init__(self, path: str, max_bytes: int = 0, backups: int = 0) -> None:
        if max_bytes < 0 or backups < 0:
            raise ValueError(f"{path}: max_bytes and backups must be >= 0 (got {max_bytes}, {backups})")
        self.path = os.path.abspath(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self._lock = threading.Lock()
        # opened at the first write, and again after a failed one: a file that cannot be opened
        # (read-only disk, a path through a file) fails that write, never the exporter's creation
        self._fd: int | None = None
        self._size = 0
        self._last_micros = 0
        self.closed = False

    def _open(self) -> int:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        self._size = os.fstat(fd).st_size
        return fd

    def write_line(self, line: bytes) -> None:
        """Append one line (which must end in a newline), rotating first if it would overflow."""
        with self._lock:
            if self.closed:
                raise ValueError(f"{self.path}: write to a closed file")
            try:
                if self._fd is None:
                    self._fd = self._open()
                if self.max_bytes and self._size and self._size + len(line) > self.max_bytes:
                    self._rotate()
                view = memoryview(line)
                while view:
                    written = os.write(self._fd, view)
                    view = view[written:]
            except OSError:
                self._drop()  # a fresh handle for the next line
                raise
            self._size += len(line)

    def _drop(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def _rotate(self) -> None:
        self._drop()
        # names must sort in write order: never reuse or go below the last stamp (same microsecond,
        # clock stepped back)
        micros = max(time.time_ns() // 1000, self._last_micros + 1)
        while os.path.exists(target := _backup_name(self.path, micros)):
            micros += 1
        self._last_micros = micros
        os.replace(self.path, target)
        self._fd = self._open()
        if self.backups:
            for old in backups_of(self.path)[:-self.backups]:
                try:
                    os.remove(old)
                except FileNotFoundError:
                    pass

    def close(self) -> None:
        with self._lock:
            if not self.closed:
                self.closed = True
                self._drop()
