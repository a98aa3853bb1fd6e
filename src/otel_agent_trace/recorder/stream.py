"""Stream proxies that finalize a chat invocation exactly once.

The proxy hands every chunk to the caller unchanged and to an accumulator (provider specific);
the invocation is finished when the stream is exhausted, closed, left by `with`, or garbage
collected, and failed when iteration raises. Everything else is forwarded to the real stream
(`wrapt.ObjectProxy`), so `stream.response`, `stream.close()` etc. keep working.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import wrapt

from otel_agent_trace._failopen import safely
from otel_agent_trace.messages import ChatResponse
from otel_agent_trace.recorder.chat import ChatInvocation


class Accumulator(Protocol):
    def add(self, chunk: Any) -> None: ...

    def response(self) -> ChatResponse: ...


class _Finalizer:
    def __init__(self, invocation: ChatInvocation, accumulator: Accumulator):
        self.invocation = invocation
        self.accumulator = accumulator
        self.done = False

    def chunk(self, chunk: Any) -> None:
        safely("stream.chunk", self.accumulator.add, chunk)

    def finish(self) -> None:
        if not self.done:
            self.done = True
            response = safely("stream.response", self.accumulator.response)
            safely("stream.finish", self.invocation.finish, response or ChatResponse())

    def fail(self, exc: BaseException) -> None:
        if not self.done:
            self.done = True
            safely("stream.fail", self.invocation.fail, exc)

    def stopped(self, exc: BaseException) -> None:
        """Reading the next chunk raised: the end of the stream finishes it, anything else fails it."""
        if isinstance(exc, (StopIteration, StopAsyncIteration)):
            self.finish()
        else:
            self.fail(exc)

    def end(self, exc: BaseException | None) -> None:
        """Leaving the stream (`with`, close): finished, or failed by what interrupted it."""
        if exc is not None:
            self.fail(exc)
        else:
            self.finish()


class _StreamProxy(wrapt.ObjectProxy):  # type: ignore[misc]
    """What both proxies share: the finalizer, and finishing when the proxy is collected unread."""

    def __init__(self, stream: Any, invocation: ChatInvocation, accumulator: Accumulator):
        super().__init__(stream)
        self._self_final = _Finalizer(invocation, accumulator)

    def __del__(self) -> None:
        final = getattr(self, "_self_final", None)
        if final is not None:
            final.finish()


class SyncStreamProxy(_StreamProxy):
    def __iter__(self) -> "SyncStreamProxy":
        return self

    def __next__(self) -> Any:
        try:
            chunk = self.__wrapped__.__next__()
        except BaseException as exc:
            self._self_final.stopped(exc)
            raise
        self._self_final.chunk(chunk)
        return chunk

    def __enter__(self) -> "SyncStreamProxy":
        self.__wrapped__.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> Any:
        try:
            return self.__wrapped__.__exit__(*exc_info)
        finally:
            self._self_final.end(exc_info[1])

    def close(self) -> None:
        try:
            self.__wrapped__.close()
        finally:
            self._self_final.finish()


class AsyncStreamProxy(_StreamProxy):
    def __aiter__(self) -> "AsyncStreamProxy":
        return self

    async def __anext__(self) -> Any:
        try:
            chunk = await self.__wrapped__.__anext__()
        except BaseException as exc:
            self._self_final.stopped(exc)
            raise
        self._self_final.chunk(chunk)
        return chunk

    async def __aenter__(self) -> "AsyncStreamProxy":
        await self.__wrapped__.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        try:
            return await self.__wrapped__.__aexit__(*exc_info)
        finally:
            self._self_final.end(exc_info[1])

    async def close(self) -> None:
        try:
            await self.__wrapped__.close()
        finally:
            self._self_final.finish()


def wrap_stream(stream: Any, invocation: ChatInvocation, accumulator: Accumulator, is_async: bool) -> Any:
    cls: Callable[..., Any] = AsyncStreamProxy if is_async else SyncStreamProxy
    return cls(stream, invocation, accumulator)
