"""Replay as the handler's interceptor (`recorder/interceptor.py`): asked by the chat wrapper
before each client call, and by the tool decorator before each tool (replay_tools=recorded).

`replayed(...)` returns what the caller gets from the recording (the provider's `build` makes
its SDK's response object from the recorded `ChatResponse`, or for `with_raw_response` the wire
body that the SDK's own method then receives, see replay/wire.py), or `LIVE` to call the provider. A
divergence in strict mode raises `ReplayDivergence` out of the client call; a configured
recording that cannot be replayed stops the process (see `replay.current`). The run's, step's
and chat span carry `agent_trace.replay.of` = the original trace id.
"""

from __future__ import annotations

from typing import Any

from otel_agent_trace._failopen import safely
from otel_agent_trace.messages import ChatRequest, ChatResponse
from otel_agent_trace.recorder.interceptor import LIVE, Build
from otel_agent_trace.replay.active import active, current
from otel_agent_trace.replay.errors import ReplayDivergence
from otel_agent_trace.replay.replayer import LIVE as _NO_RECORDING
from otel_agent_trace.replay.wire import Wire, through
from otel_agent_trace.semconv import REPLAY_OF


def replayed(invocation: Any, build: Build, wrapped: Any, instance: Any, args: tuple, kwargs: dict,
             where: str) -> Any:
    replayer = current()
    if replayer is None:
        return LIVE
    safely(f"{where}.replay.mark", _mark, invocation, replayer.origin)
    found = safely(f"{where}.replay.answer", _answer, replayer, invocation.request)
    if found is None:  # a fault of ours: fail-open, the call goes live
        return LIVE
    response, divergence = found
    if divergence is not None:
        raise divergence
    if response is None:
        return LIVE
    method = str(getattr(wrapped, "__name__", ""))
    result = safely(f"{where}.replay.build", build, response, invocation.request, instance, kwargs, method)
    if isinstance(result, Wire):  # a raw call: the SDK's own method, its HTTP send answered in process
        result = through(result, wrapped, args, kwargs)
    return LIVE if result is None else result


def _answer(replayer: Any, request: ChatRequest) -> tuple[ChatResponse | None, ReplayDivergence | None]:
    """The divergence (strict) is for the agent; any other exception is ours (see `safely`)."""
    try:
        return replayer.answer(request), None
    except ReplayDivergence as exc:
        return None, exc


def _mark(invocation: Any, origin: str) -> None:
    for span in (invocation.span, invocation.step.span, invocation.run.span):
        span.set_attribute(REPLAY_OF, origin)


class ReplayInterceptor:
    """The handler's interceptor while replay is on: each call asks the current replayer
    (`replay.current()`: the innermost `replay()` block's, else the configuration's)."""

    def chat(self, invocation: Any, build: Build, wrapped: Any, instance: Any, args: tuple, kwargs: dict,
             where: str) -> Any:
        return replayed(invocation, build, wrapped, instance, args, kwargs, where)

    def tool(self, name: str, arguments: Any) -> Any:
        replayer = current()
        if replayer is None or replayer.tools != "recorded":
            return LIVE
        found = replayer.tool_answer(name, arguments)
        return LIVE if found is _NO_RECORDING else found


INTERCEPTOR = ReplayInterceptor()


def wanted() -> bool:
    """Is replay on: a `replay()` block open, or a recording configured?"""
    from otel_agent_trace import config

    return active() or bool(config.current().replay)


def inject(handler: Any) -> None:
    """Give `handler` the replay interceptor while replay is on, and take it back when it is off."""
    handler.interceptor = INTERCEPTOR if wanted() else None
