"""What every provider's replay `build` shares: a finished stream over chunks or events built
from the recording, an async client's awaitable answer, and the test for a raw call (answered at
the HTTP client instead, replay/wire.py).

The stream stands in for the SDK's `Stream` / `AsyncStream`: iteration, `with`, `close()`, and
`response` (the SDK's own stream helpers, `ResponseStream` and `MessageStream`, read and close
it). The recorder's stream proxy wraps it like a live stream, so a replayed stream is recorded
like one.
"""

from __future__ import annotations

from typing import Any

RAW_HEADER = "X-Stainless-Raw-Response"  # set by the openai and anthropic SDKs' `with_raw_response`


def is_raw(kwargs: dict[str, Any]) -> bool:
    """`with_raw_response` / `with_streaming_response`: the caller gets the SDK's HTTP response
    object, so `build` gives the wire body (`replay.wire.Wire`) and the SDK's own method runs."""
    headers = kwargs.get("extra_headers")
    return isinstance(headers, dict) and RAW_HEADER in headers


def is_async_client(instance: Any) -> bool:
    """`AsyncCompletions`, `AsyncResponses`, `AsyncMessages`: their calls return awaitables."""
    return type(instance).__name__.startswith("Async")


def answer(value: Any, is_async: bool) -> Any:
    """What the patched call returns: `value`, or for an async client an awaitable of it."""
    return _ready(value) if is_async else value


async def _ready(value: Any) -> Any:
    return value


def stream(items: list[Any], is_async: bool) -> Any:
    return AsyncReplayedStream(items) if is_async else ReplayedStream(items)


class ReplayedStream:
    """A finished `Stream`'s surface over recorded items."""

    def __init__(self, items: list[Any]):
        self._items = iter(items)

    @property
    def response(self) -> "ReplayedStream":
        return self  # what the SDK's helpers close

    def __iter__(self) -> "ReplayedStream":
        return self

    def __next__(self) -> Any:
        return next(self._items)

    def __enter__(self) -> "ReplayedStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._items = iter(())


class AsyncReplayedStream:
    """An `AsyncStream`'s surface over recorded items."""

    def __init__(self, items: list[Any]):
        self._items = iter(items)

    @property
    def response(self) -> "AsyncReplayedStream":
        return self

    def __aiter__(self) -> "AsyncReplayedStream":
        return self

    async def __anext__(self) -> Any:
        try:
            return next(self._items)
        except StopIteration:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> "AsyncReplayedStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        self._items = iter(())

    async def aclose(self) -> None:
        await self.close()
