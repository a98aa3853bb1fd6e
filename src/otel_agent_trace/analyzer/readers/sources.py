"""Byte sources: plain, gzip or zstd files, as numbered records (lines, or length-prefixed frames).

Compression is recognised by its magic bytes, not the file name. Two zstd layouts exist:
- a plain zstd stream (`zstd traces.jsonl`), read as JSON Lines;
- the Collector file exporter's `compression: zstd`: every exported batch compressed on its own
  and preceded by its length as a 4-byte big-endian unsigned integer. Each frame is one record
  (its "line" number is the frame's ordinal).
zstd needs the `zstandard` package; without it a `.zst` input is reported unreadable with a clear
reason, and every other input is still read.
"""

from __future__ import annotations

import gzip
import io
import zlib
from typing import IO, Callable, Iterator

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
BAD_RECORD = b"\x00bad-record:"  # a record the source could not produce; the rest is the reason


class UnreadableInput(OSError):
    """The whole input cannot be read (reported as the input's `error`)."""


def _zstd():
    try:
        import zstandard
    except ImportError:  # pragma: no cover - depends on the environment
        raise UnreadableInput("zstd-compressed input needs the 'zstandard' package (pip install zstandard)") from None
    return zstandard


def records(path: str, progress: Callable[[int], None] | None = None, start: int = 0, end: int | None = None,
            offsets: dict[int, int] | None = None) -> Iterator[tuple[int, bytes]]:
    """(record number from 1, raw bytes) of a file; `progress(n)` gets compressed bytes consumed.

    `start`/`end`: only the lines starting in that byte range of a plain file (`start` at a line
    start; numbers count from the file's first line). `offsets`: filled with line -> byte offset
    for a plain file (compressed records cannot be seeked to)."""
    raw = open(path, "rb", buffering=1 << 20)  # long lines (a batch of spans each): fewer copies
    try:
        if start or end is not None:
            yield from _plain(raw, progress, start, end, offsets)
            return
        head = raw.peek(8)[:8] if hasattr(raw, "peek") else b""
        if head.startswith((GZIP_MAGIC, ZSTD_MAGIC)) and not _decodes(raw, head):
            yield from _plain(raw, progress, 0, None, offsets)  # text that merely starts like a compressed stream
        elif head.startswith(GZIP_MAGIC):
            yield from _lines(gzip.GzipFile(fileobj=raw, mode="rb"), raw, progress)
        elif head.startswith(ZSTD_MAGIC):
            reader = _zstd().ZstdDecompressor().stream_reader(raw, read_across_frames=True)
            yield from _lines(io.BufferedReader(reader, 1 << 20), raw, progress)
        elif len(head) == 8 and head[4:8] == ZSTD_MAGIC and _decodes(raw, head):
            yield from _framed(raw, progress)
        else:
            yield from _plain(raw, progress, 0, None, offsets)
    finally:
        raw.close()


def _decodes(raw: IO[bytes], head: bytes) -> bool:
    """Does the start of the file really decompress? (A JSON Lines file whose first bytes happen
    to be a magic number, or a length and a magic number, is read as text.) The file position is
    left at 0."""
    prefix = raw.read(1 << 16)
    raw.seek(0)
    try:
        if head.startswith(GZIP_MAGIC):
            zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(prefix)
        elif not head.startswith(ZSTD_MAGIC):  # the file exporter's frames: a 4-byte length, then zstd
            _zstd().ZstdDecompressor().decompressobj().decompress(prefix[4:4 + int.from_bytes(prefix[:4], "big")])
        else:
            _zstd().ZstdDecompressor().decompressobj().decompress(prefix)
    except UnreadableInput:
        return True  # compressed, but we cannot tell more without zstandard: report that
    except Exception:  # noqa: BLE001 - zlib.error, zstandard.ZstdError: not a valid stream
        return False
    return True


def _lines(handle: IO[bytes], raw: IO[bytes], progress: Callable[[int], None] | None) -> Iterator[tuple[int, bytes]]:
    if progress is None:
        yield from enumerate(handle, start=1)
        return
    for number, line in enumerate(handle, start=1):
        if number % 256 == 0:
            progress(raw.tell())
        yield number, line
    progress(raw.tell())


def _plain(raw: IO[bytes], progress: Callable[[int], None] | None, start: int, end: int | None,
           offsets: dict[int, int] | None) -> Iterator[tuple[int, bytes]]:
    number = line_base(raw, start)
    raw.seek(start)
    position = start
    for line in raw:
        number += 1
        if offsets is not None:
            offsets[number] = position
        if progress is not None and number % 256 == 0:
            progress(position)
        yield number, line
        position += len(line)
        if end is not None and position >= end:
            break
    if progress is not None:
        progress(position)


def line_base(raw: IO[bytes], start: int) -> int:
    """How many lines end before byte `start` (so the line at `start` is number base + 1)."""
    if not start:
        return 0
    raw.seek(0)
    buffer = bytearray(1 << 22)  # reused: no fresh pages per block
    view = memoryview(buffer)
    count = 0
    left = start
    while left > 0:
        size = raw.readinto(view[:min(left, len(buffer))])
        if not size:
            break
        count += _newlines(buffer, size)
        left -= size
    return count


def _newlines(buffer: bytearray, size: int) -> int:
    """`buffer.count(b"\n", 0, size)`, faster for long lines (agent traces: a batch of spans per
    line, tens of KB): `find` skips to each newline with memchr, `count` tests every byte (~3
    times slower); short lines are counted."""
    find = buffer.find
    found = 0
    position = find(b"\n", 0, size)
    while position >= 0:
        found += 1
        if found == 64:  # short lines: a call per line would cost more
            return found + buffer.count(b"\n", position + 1, size)
        position = find(b"\n", position + 1, size)
    return found


def _framed(raw: IO[bytes], progress: Callable[[int], None] | None) -> Iterator[tuple[int, bytes]]:
    decompressor = _zstd().ZstdDecompressor()
    number = 0
    while True:
        size_bytes = raw.read(4)
        if not size_bytes:
            return
        number += 1
        if len(size_bytes) < 4:
            yield number, BAD_RECORD + b"truncated frame length"
            return
        size = int.from_bytes(size_bytes, "big")
        frame = raw.read(size)
        if len(frame) < size:
            yield number, BAD_RECORD + f"truncated frame: {len(frame)} of {size} bytes".encode()
            return
        try:
            data = decompressor.decompressobj().decompress(frame)
        except Exception as exc:  # noqa: BLE001 - zstandard.ZstdError; one bad frame, go on
            yield number, BAD_RECORD + f"undecodable zstd frame: {exc}".encode()
            continue
        if progress is not None:
            progress(raw.tell())
        yield number, data

