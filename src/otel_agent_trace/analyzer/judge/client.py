"""The judge's requests: one OpenAI-compatible Chat Completions call per question, through the
real `openai` client (optional: extra `[judge]`), within the budget, answered from the cache
when asked before, and never recorded by our own instrumentation or any other.

Every request is kept out of every trace, so analysing traces under `opentelemetry-instrument`
adds nothing to them: it is sent with the client's low-level `post` (instrumentations wrap
`chat.completions.create`), inside OpenTelemetry's instrumentation suppression (the context keys
our recorder (`Handler.chat`) and HTTP client instrumentations check), under an unsampled current
span (an instrumentation that checks neither, such as openai-v2 2.4b0, then records nothing
under the SDK's default parent-based sampler). The `Ledger` counts what was spent, and what came back unusable.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterator

from otel_agent_trace.analyzer.judge.cache import AnswerCache, request_key
from otel_agent_trace.analyzer.judge.questions import Question, parse, response_format
from otel_agent_trace.analyzer.judge.settings import JudgeSettings

OK, MALFORMED, REFUSED, FAILED, BUDGET = "ok", "malformed", "refused", "failed", "budget"
_UNREACHABLE_AFTER = 3  # consecutive failed requests after which the endpoint is given up


class JudgeUnavailable(RuntimeError):
    """The judge cannot run at all (no `openai` client, no key): the message says what to do."""


@dataclass
class Reply:
    status: str  # OK | MALFORMED | REFUSED | FAILED | BUDGET
    answer: dict[str, Any] | None = None
    cached: bool = False
    detail: str = ""


@dataclass
class Ledger:
    """What the judge spent and got, for the report's `judge` section."""

    requests: int = 0  # sent to the endpoint
    cached: int = 0  # answered from the cache (free)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0  # None once a request could not be priced
    malformed: int = 0
    refused: int = 0
    failed: int = 0  # transport or HTTP errors (not cached)
    over_budget: int = 0  # questions not asked: the budget was spent
    runs_judged: int = 0
    verdicts: int = 0
    runs_skipped: int = 0  # runs not judged at all (budget spent, endpoint unreachable)
    errors: int = 0  # runs whose judging failed inside the judge (its entry says why; the report goes on)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["cost_usd"] = None if self.cost_usd is None else round(self.cost_usd, 6)
        return out


class JudgeClient:
    """`ask(question)` -> `Reply`. `price(prompt, completion)` -> USD or None."""

    def __init__(self, settings: JudgeSettings, price: Callable[[int, int], float | None] | None = None):
        try:
            import openai
        except ImportError:
            raise JudgeUnavailable("--judge needs the openai client: pip install 'otel-agent-trace[judge]'") from None
        from openai.types.chat import ChatCompletion

        self._openai = openai
        self._completion = ChatCompletion
        try:
            self._client = openai.OpenAI(base_url=settings.base_url, api_key=settings.api_key,
                                         timeout=settings.timeout, max_retries=1)
        except openai.OpenAIError as exc:  # no key: the client's own message names OPENAI_API_KEY
            raise JudgeUnavailable(f"--judge: {exc} (any non-empty key for an endpoint that needs none)") from None
        self.settings = settings
        self.cache = AnswerCache(settings.cache_dir())
        self.ledger = Ledger()
        self._price = price
        self._failures_in_a_row = 0
        self.given_up = ""  # why no further request is sent ("" while they are)

    def ask(self, question: Question) -> Reply:
        settings = self.settings
        request = {"model": settings.model, "messages": question.messages,
                   "response_format": response_format(question.kind, settings.response_format),
                   "max_tokens": settings.answer_tokens}
        key = request_key(request)
        stored = self.cache.get(key)
        if stored is not None:
            self.ledger.cached += 1
            return self._read(question.kind, stored, cached=True)
        if self.given_up or not self._affordable(request):
            self.ledger.over_budget += 1
            return Reply(BUDGET, detail=self.given_up or "budget spent")
        self.ledger.requests += 1
        try:
            with _suppressed():
                # the client's documented low-level request: instrumentations wrap the resource
                # methods (`chat.completions.create`), and some ignore the suppression key
                response = self._client.post("/chat/completions", body=request, cast_to=self._completion)
        except self._openai.OpenAIError as exc:
            self.ledger.failed += 1
            self._failures_in_a_row += 1
            if self._failures_in_a_row >= _UNREACHABLE_AFTER:
                self.given_up = f"{self._failures_in_a_row} requests in a row failed (last: {type(exc).__name__})"
            return Reply(FAILED, detail=f"{type(exc).__name__}: {exc}")
        self._failures_in_a_row = 0
        stored = _stored(response, request)
        self._spend(stored)
        self.cache.put(key, stored)
        return self._read(question.kind, stored, cached=False)

    def spent(self) -> bool:
        """No further request fits: the calls are used up, or the tokens left hold no answer."""
        ledger, settings = self.ledger, self.settings
        return (bool(self.given_up) or ledger.requests >= settings.max_calls
                or ledger.prompt_tokens + ledger.completion_tokens + settings.answer_tokens > settings.max_tokens)

    def _affordable(self, request: dict[str, Any]) -> bool:
        ledger, settings = self.ledger, self.settings
        if ledger.requests >= settings.max_calls:
            return False
        spent = ledger.prompt_tokens + ledger.completion_tokens
        return spent + estimate_tokens(request["messages"]) + settings.answer_tokens <= settings.max_tokens

    def _spend(self, stored: dict[str, Any]) -> None:
        prompt, completion = stored["prompt_tokens"], stored["completion_tokens"]
        self.ledger.prompt_tokens += prompt
        self.ledger.completion_tokens += completion
        cost = self._price(prompt, completion) if self._price is not None else None
        self.ledger.cost_usd = None if cost is None or self.ledger.cost_usd is None else self.ledger.cost_usd + cost

    def _read(self, kind: str, stored: dict[str, Any], cached: bool) -> Reply:
        if stored.get("refusal") or stored.get("finish_reason") == "content_filter":
            self.ledger.refused += 1
            return Reply(REFUSED, cached=cached, detail=str(stored.get("refusal") or "content_filter"))
        answer = parse(kind, stored.get("content"))
        if answer is None:
            self.ledger.malformed += 1
            return Reply(MALFORMED, cached=cached, detail=str(stored.get("content"))[:200])
        return Reply(OK, answer, cached=cached)


def _stored(response: Any, request: dict[str, Any]) -> dict[str, Any]:
    """What is kept of an answer (and cached): its text, refusal, finish reason and token counts."""
    choices = getattr(response, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    content = getattr(message, "content", None)
    usage = getattr(response, "usage", None)
    prompt = getattr(usage, "prompt_tokens", None)
    completion = getattr(usage, "completion_tokens", None)
    return {"content": content if isinstance(content, str) else None,
            "refusal": getattr(message, "refusal", None) or None,
            "finish_reason": getattr(choices[0], "finish_reason", None) if choices else None,
            "prompt_tokens": prompt if isinstance(prompt, int) else estimate_tokens(request["messages"]),
            "completion_tokens": completion if isinstance(completion, int) else len(content or "") // 4 + 1}


def estimate_tokens(messages: list[dict[str, str]]) -> int:
    """A request's prompt tokens, before sending it: ~4 characters per token."""
    return sum(len(m.get("content") or "") for m in messages) // 4 + 4 * len(messages)


@contextmanager
def _suppressed() -> Iterator[None]:
    """One request out of every trace: OpenTelemetry's instrumentation suppression (and HTTP
    clients'), and, for an instrumentation that ignores it, an unsampled current span (the SDK's
    default sampler, parent-based, then samples none of its children)."""
    from opentelemetry import context, trace
    from opentelemetry.context import _SUPPRESS_HTTP_INSTRUMENTATION_KEY
    from opentelemetry.instrumentation.utils import suppress_instrumentation
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    ids = RandomIdGenerator()
    unsampled = trace.NonRecordingSpan(trace.SpanContext(ids.generate_trace_id(), ids.generate_span_id(),
                                                         is_remote=False, trace_flags=trace.TraceFlags(0)))
    quiet = context.set_value(_SUPPRESS_HTTP_INSTRUMENTATION_KEY, True, trace.set_span_in_context(unsampled))
    token = context.attach(quiet)
    try:
        with suppress_instrumentation():
            yield
    finally:
        context.detach(token)
