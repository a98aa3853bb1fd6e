"""litellm `completion` / `acompletion` (and the Router's, which call them) and `responses` /
`aresponses` → the normalized model: one chat span per call, whatever provider litellm routes to.

litellm takes and returns the Chat Completions shapes (messages, tools, `ModelResponse`,
streamed chunks), so the translation is openai.py's; its `responses` takes and returns the
Responses API's (responses.py's, `previous_response_id` chains included). Its own calls into a provider's client (the
openai client's `with_raw_response.create`, or `post` directly) happen inside our wrapper, where
`recorder/calls.recording` passes them through: never a second chat span. Its stream wrapper can
be iterated both ways, so each entry point says which.
"""

from __future__ import annotations

from typing import Any

from otel_agent_trace.messages import ChatRequest
from otel_agent_trace.providers import openai as openai_provider
from otel_agent_trace.providers import openai_replay
from otel_agent_trace.providers import responses as responses_provider
from otel_agent_trace.providers._translate import get as _get
from otel_agent_trace.recorder.calls import chat_wrapper
from otel_agent_trace.recorder.stream import wrap_stream
from otel_agent_trace.integration import Integration, Patch

MODULE = "litellm"


def _provider(request: ChatRequest, kwargs: dict[str, Any]) -> ChatRequest:
    model = request.model or ""
    prefix, slash, _ = model.partition("/")
    request.provider = str(kwargs.get("custom_llm_provider") or (prefix if slash else "litellm"))
    return request


def _request(instance: Any, args: tuple, kwargs: dict[str, Any]) -> ChatRequest:
    if args:  # completion(model, messages, ...) positionally
        kwargs = {**dict(zip(("model", "messages"), args)), **kwargs}
    return _provider(openai_provider.parse_request(kwargs), kwargs)


def _responses_request(instance: Any, args: tuple, kwargs: dict[str, Any]) -> ChatRequest:
    if args:  # responses(input, model, ...) positionally
        kwargs = {**dict(zip(("input", "model"), args)), **kwargs}
    return _provider(responses_provider.parse_request(kwargs), kwargs)


def _responses_end(is_async: bool) -> Any:
    def end(invocation: Any, result: Any) -> Any:
        if _get(result, "output") is None and (hasattr(result, "__iter__") or hasattr(result, "__aiter__")):
            invocation.defer()
            accumulator = responses_provider.StreamAccumulator(invocation.request, invocation)
            return wrap_stream(result, invocation, accumulator, is_async)
        return responses_provider.end_call(invocation, result)

    return end


def _end(is_async: bool) -> Any:
    def end(invocation: Any, result: Any) -> Any:
        if _get(result, "choices") is None and (hasattr(result, "__iter__") or hasattr(result, "__aiter__")):
            invocation.defer()
            return wrap_stream(result, invocation, openai_provider.StreamAccumulator(), is_async)
        invocation.stop(openai_provider.parse_response(result))
        return result

    return end


TARGETS = {"completion": chat_wrapper(_request, _end(False), "litellm", openai_replay.litellm_build(False)),
           "acompletion": chat_wrapper(_request, _end(True), "litellm", openai_replay.litellm_build(True)),
           # (not replayed: litellm's own ResponsesAPIResponse types; docs/replay.md)
           "responses": chat_wrapper(_responses_request, _responses_end(False), "litellm"),
           "aresponses": chat_wrapper(_responses_request, _responses_end(True), "litellm")}
INTEGRATION = Integration("litellm", tuple(Patch(MODULE, target, wrapper) for target, wrapper in TARGETS.items()))
