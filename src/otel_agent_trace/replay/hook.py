"""The recorder's side of replay: asked by the chat wrapper before each client call.

`replayed(...)` returns what the caller gets from the recording (the provider's `build` makes
its SDK's response object from the recorded `ChatResponse`), or `LIVE` to call the provider. A
divergence in strict mode raises `ReplayDivergence` out of the client call; a configured
recording that cannot be replayed stops the process (see `replay.current`). The run's, step's
and chat span carry `agent_trace.replay.of` = the original trace id.
"""

from __future__ import annotations

from typing import Any, Callable

from otel_agent_trace._failopen import safely
from otel_agent_trace.model import ChatRequest, ChatResponse
from otel_agent_trace.replay import REPLAY_OF, current

# build(response, request, instance, kwargs) -> the SDK object (an awaitable for an async client)
Build = Callable[[ChatResponse, ChatRequest, Any, dict], Any]
LIVE = object()


def replayed(invocation: Any, build: Build, instance: Any, kwargs: dict, where: str) -> Any:
    replayer = current()
    if replayer is None:
        return LIVE
    safely(f"{where}.replay.mark", _mark, invocation, replayer.origin)
    response = replayer.answer(invocation.request)
    if response is None:
        return LIVE
    result = safely(f"{where}.replay.build", build, response, invocation.request, instance, kwargs)
    return LIVE if result is None else result


def _mark(invocation: Any, origin: str) -> None:
    for span in (invocation.span, invocation.step.span, invocation.run.span):
        span.set_attribute(REPLAY_OF, origin)
