"""Agent runs: the `invoke_agent` span that holds one run's steps, and everything the run has
recorded so far.

A run begins at `agent_run(name)` (or `handler.run(name)`), at a function named in
`OTEL_AGENT_TRACE_ENTRYPOINTS`, or implicitly: a chat request that continues no open run's
conversation starts one (`implicit_runs.py` says when an implicit run ends). An exception leaving
an explicit run, or ending the program after an implicit one, marks it failed: phase `critical`.

The run owns its state: every change is one of its methods below, taken under its lock (tools may
run in threads); the code that writes steps and tool spans (chat.py, tools.py, guards.py, the
frameworks) reads its fields and calls those methods, and never assigns a field nor takes the lock.
"""

from __future__ import annotations

import sys
import threading
import time
import weakref
from collections import Counter
from typing import Any, Callable, Iterable, TypeVar

from opentelemetry import trace
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, format_span_id, format_trace_id

from otel_agent_trace import detectors, hashing
from otel_agent_trace.causes import cause
from otel_agent_trace.hashing import value_key
from otel_agent_trace.config import AgentTraceConfig
from otel_agent_trace.errors import AgentBudgetExceeded
from otel_agent_trace.json_text import parse_json_or_text
from otel_agent_trace.messages import ChatRequest, ChatResponse, Message
from otel_agent_trace.semconv import (
    ERROR_TYPE,
    ERROR_TYPE_SEMCONV,
    GEN_AI_AGENT_NAME,
    GEN_AI_OPERATION_NAME,
    LIFECYCLE_PHASE,
    LINK_RELATION,
    OP_INVOKE_AGENT,
    RUN_AGENTS,
    RUN_ENDED_BY,
    RUN_IMPLICIT,
    RUN_OUTCOME_OF,
    RUN_OUTCOME_SPAN,
    RUN_RESUMES,
)
from otel_agent_trace.vocabulary import INSTRUCTION_ROLES, ErrorType, Outcome, Phase, Relation
from otel_agent_trace.recorder.content import ContentPolicy
from otel_agent_trace.recorder.flow import distinctive_values
from otel_agent_trace.recorder.invocation import Invocation
from otel_agent_trace.recorder.links import Dependencies
from otel_agent_trace.recorder.state import PendingCall, StepState, ToolRecord, explicit_run

T = TypeVar("T")
# messages whose values the model legitimately received (the fabrication check's ground truth)
_RECEIVED_ROLES = ("user", "system", "developer", "tool")


def current_task() -> Any:
    """A weak reference to the running asyncio task, if any (no import of asyncio, no raise)."""
    asyncio = sys.modules.get("asyncio")
    loop = asyncio._get_running_loop() if asyncio is not None else None
    task = asyncio.current_task(loop) if loop is not None else None
    return weakref.ref(task) if task is not None else None


def caller_of_here() -> tuple[int, Any]:
    """This thread's id and a weak reference to the running asyncio task (None outside one):
    where a run's caller is, for `bind_caller` / `hold_open`."""
    return threading.get_ident(), current_task()


class RunInvocation(Invocation):
    """One agent run: its span and its state, guarded by `lock` (tools may run in threads)."""

    kind = "run"

    def __init__(self, tracer: trace.Tracer, config: AgentTraceConfig, content: ContentPolicy,
                 name: str | None, implicit: bool, validate: Callable[[str], Any] | None = None,
                 delegated_by: Any = None, start_ns: int | None = None):
        super().__init__()
        self.tracer, self.config, self.content = tracer, config, content
        self.name = name
        self.implicit = implicit
        self.validate = validate
        attributes: dict[str, Any] = {GEN_AI_OPERATION_NAME: OP_INVOKE_AGENT}
        if name:
            attributes[GEN_AI_AGENT_NAME] = name
        if implicit:
            attributes[RUN_IMPLICIT] = True
        # a child of whatever span is current (an HTTP server span, ...); a sub-agent's run is a
        # child of the step or tool that delegated to it, linked `delegated_to` (delegation.py)
        parent, links = None, None
        if delegated_by is not None:
            deps = Dependencies()
            deps.add(delegated_by.get_span_context(), Relation.DELEGATED_TO)
            attributes.update(deps.attributes())
            parent, links = trace.set_span_in_context(delegated_by), deps.links()
        self.span = tracer.start_span(
            f"{OP_INVOKE_AGENT} {name}" if name else OP_INVOKE_AGENT, context=parent, kind=SpanKind.INTERNAL,
            attributes=attributes, links=links, start_time=start_ns)
        self.started = time.monotonic()
        self.steps: list[StepState] = []
        self.open_step: StepState | None = None
        self.pending: dict[str, PendingCall] = {}
        self.records_by_call_id: dict[str, ToolRecord] = {}
        self.records: list[ToolRecord] = []
        self.seen_messages: set[str] = set()
        self.message_roles: dict[str, str] = {}  # short hash -> role
        self.last_request_hashes: list[str] = []
        self.last_output_hash: str | None = None
        self.call_counts: Counter = Counter()
        self.tokens = 0
        # value flow (flow.py): value key -> the first tool result it appeared in
        self.value_producers: dict[str, ToolRecord] = {}
        # values the model legitimately received: tool results, user, system and developer messages
        self.known_values: set[str] = set()
        # the texts they came in, read for the factors and totals an answer may have computed with
        # only when it holds a number known_values alone does not explain (bounded: detectors.Received)
        self.received = detectors.Received()
        self.resource_writers: dict[str, ToolRecord] = {}
        self.budget_exceeded: str | None = None
        self.answered_ns: int | None = None  # when the model last gave a final answer
        self.failed_call_ns: int | None = None  # when a model call last failed (its error reached the program)
        self.last_active_ns = time.time_ns()
        self.tools_recorded: Any = None  # the tool list last written as gen_ai.tool.definitions
        self.tool_definitions: dict[str, dict] = {}  # tool listings of its sessions (mcp), by name
        self.agents: list[str] = []  # framework agents it is the body of (agent_trace.run.agents)
        self.thread: int | None = None  # the thread of its latest LLM call (implicit runs' end)
        self.task: Any = None  # a weak reference to the asyncio task of its latest LLM call, if any
        self.lock = threading.RLock()
        self._run_token: Any = None

    @property
    def ended(self) -> bool:
        return self.settled

    @property
    def over(self) -> bool:
        """The program has what it gets from this run: the model answered, or its last call
        failed with nothing pending (a flush ends such a run, `Handler.end_for_flush`)."""
        return self.answered_ns is not None or (
            self.failed_call_ns is not None and self.failed_call_ns >= self.last_active_ns and not self.open_calls())

    # --- as a context manager: the explicit run of the code inside ------------------------------
    def __enter__(self) -> "RunInvocation":
        super().__enter__()
        self._run_token = explicit_run.set(self)
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        if self._run_token is not None:
            explicit_run.reset(self._run_token)
            self._run_token = None
        return super().__exit__(exc_type, exc, tb)

    # --- ending ---------------------------------------------------------------------------------
    def end(self, exc: BaseException | None = None, end_ns: int | None = None) -> None:
        """Close the open step and the run span; an exception marks the run critical."""
        if exc is None:
            self.stop(end_ns)
        else:
            self.fail(exc)

    def _on_stop(self, end_ns: int | None = None) -> None:
        with self.lock:
            self.close_open_step(end_ns)
            self.span.end(end_time=end_ns)

    def _on_fail(self, exc: BaseException) -> None:
        with self.lock:
            self.close_open_step()
            if isinstance(exc, AgentBudgetExceeded):
                self.span.record_exception(exc)  # already marked critical, budget_exceeded, when raised
            else:
                self.mark_critical(ErrorType.RUN_EXCEPTION, f"{type(exc).__name__}: {exc}", exc)
            self.span.end()

    def end_by_shutdown(self) -> None:
        """The tracer provider shuts down while this run is open: it ends now, saying why (its
        outcome is unknown: status unset), rather than after the provider can export it."""
        if not self.settled:
            self.span.set_attribute(RUN_ENDED_BY, "provider_shutdown")
            self.stop()

    def report_outcome(self, exc: BaseException) -> None:
        """`exc` failed this run after a flush had exported it: a `run_outcome` span under the
        run says so (an ended span cannot change); the analyzer reads the run as failed."""
        span = self.tracer.start_span(RUN_OUTCOME_SPAN, context=trace.set_span_in_context(self.span),
                                      kind=SpanKind.INTERNAL,
                                      attributes={RUN_OUTCOME_OF: format_span_id(self.span.get_span_context().span_id)})
        exc = cause(exc)
        span.set_attribute(LIFECYCLE_PHASE, Phase.CRITICAL.value)
        span.set_attribute(ERROR_TYPE, ErrorType.RUN_EXCEPTION.value)
        span.set_attribute(ERROR_TYPE_SEMCONV, type(exc).__qualname__)
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        span.end()

    def mark_critical(self, error_type: ErrorType, description: str, exc: BaseException | None = None) -> None:
        span = self.span
        span.set_attribute(LIFECYCLE_PHASE, Phase.CRITICAL.value)
        span.set_attribute(ERROR_TYPE, error_type.value)
        span.set_attribute(ERROR_TYPE_SEMCONV, type(exc).__qualname__ if exc is not None else error_type.value)
        if exc is not None:
            span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, description))

    # --- being current -----------------------------------------------------------------------
    def enter(self) -> Any:
        """Make this the explicit run of the caller's context (a framework's agent); the token is
        for `leave`."""
        return explicit_run.set(self)

    @staticmethod
    def leave(token: Any) -> None:
        explicit_run.reset(token)

    # --- activity -------------------------------------------------------------------------------
    def touch(self, now: int | None = None) -> None:
        self.last_active_ns = now or time.time_ns()

    def call_failed(self) -> None:
        """A model call of this run failed: its error reached the program."""
        with self.lock:
            self.last_active_ns = self.failed_call_ns = time.time_ns()

    def bind_caller(self) -> None:
        """Remember the thread and asyncio task of the caller: where the run's end is looked for."""
        with self.lock:
            self.thread, self.task = caller_of_here()

    def hold_open(self, caller: tuple[int, Any] | None = None) -> None:
        """A framework's agent returned its answer: the run waits, like an answered implicit run,
        for what its caller (`caller_of_here()` where the program invoked the agent, when it
        answers in another thread or task; default: here) does next."""
        now = time.time_ns()
        with self.lock:
            self.answered_ns = self.answered_ns or now
            self.last_active_ns = now
            self.close_open_step(now)  # its last step is over: only the run span lingers
            self.thread, self.task = caller or caller_of_here()

    def reopen(self) -> None:
        """A lingering run's agent goes on (a LangGraph thread resumed after `interrupt`): it has
        not answered yet after all."""
        with self.lock:
            self.answered_ns = None
            self.last_active_ns = time.time_ns()

    def link_resumed(self, earlier: SpanContext) -> None:
        """This run resumes `earlier`, a run that has ended (a LangGraph thread resumed after its
        interrupted run ended): a link to its span, relation `resumes`, and its trace id in
        `agent_trace.run.resumes` (backends that drop link attributes keep the attribute)."""
        with self.lock:
            if self.settled or not earlier.is_valid or earlier.span_id == self.span.get_span_context().span_id:
                return
            self.span.add_link(earlier, {LINK_RELATION: Relation.RESUMES.value})
            self.span.set_attribute(RUN_RESUMES, format_trace_id(earlier.trace_id))

    def add_agent(self, agent: str) -> None:
        """An unnamed run takes the agent's name. A run already named (an entry point,
        `agent_run("x")`) keeps it and lists the agent in `agent_trace.run.agents`, so that the
        framework's own run span of that agent, directly inside, is read as the same run
        (analyzer/runs.py `_without_echoes`)."""
        with self.lock:
            if not self.name:
                self.name = agent
                self.span.set_attribute(GEN_AI_AGENT_NAME, agent)
                self.span.update_name(f"{OP_INVOKE_AGENT} {agent}")
            elif agent != self.name and agent not in self.agents:
                self.agents = self.agents + [agent]
                self.span.set_attribute(RUN_AGENTS, self.agents)

    def add_tool_definitions(self, tools: dict[str, dict]) -> list[dict] | None:
        """Add a session's tool listing; the union of the run's listings when this one adds to it."""
        with self.lock:
            if all(self.tool_definitions.get(name) == tool for name, tool in tools.items()):
                return None
            self.tool_definitions.update(tools)
            return list(self.tool_definitions.values())

    def exceed_budget(self, reason: str) -> bool:
        """The run exhausted a budget: True the first time (the caller marks the span)."""
        with self.lock:
            if self.budget_exceeded is not None:
                return False
            self.budget_exceeded = reason
            return True

    # --- a chat: its request, its step, its decision --------------------------------------------
    def begin_chat(self, open_chat: Callable[["RunInvocation", ChatRequest, list[str]], T],
                   request: ChatRequest, hashes: list[str]) -> T:
        """One transition with the run's lock held: `open_chat(self, request, hashes)` (chat.py)
        checks the budgets, records the tool results the request carries and opens the step."""
        with self.lock:
            self.thread, self.task = caller_of_here()
            return open_chat(self, request, hashes)

    def learn_messages(self, new: Iterable[tuple[str, Message]]) -> None:
        """Messages this run sees for the first time (short hash, message): their roles, and the
        values the model legitimately received from them."""
        with self.lock:
            for short, message in new:
                self.seen_messages.add(short)
                self.message_roles[short] = message.role
                if message.role in _RECEIVED_ROLES and message.content and not self._scanned_as_tool_result(message):
                    self.known_values |= distinctive_values(message.content)
                    self.received.add(message.content)

    def _scanned_as_tool_result(self, message: Message) -> bool:
        """An inferred tool span already indexed exactly this text as its result."""
        record = self.records_by_call_id.get(message.tool_call_id) if message.role == "tool" and message.tool_call_id else None
        return record is not None and record.source == "inferred"

    def begin_step(self, step: StepState, hashes: list[str]) -> None:
        with self.lock:
            self.steps.append(step)
            self.open_step = step
            self.last_request_hashes = list(hashes)

    def tools_to_record(self, tools: Any) -> bool:
        """Is this tool list new to the run (providers hand the same object while it does not change)?"""
        return bool(tools) and tools is not self.tools_recorded

    def tools_recorded_as(self, tools: Any) -> None:
        self.tools_recorded = tools

    def record_decision(self, step: StepState, response: ChatResponse, output_hash: str, final: bool,
                        now: int) -> None:
        """The model answered in `step`: its tokens, its output, the tool calls now pending."""
        with self.lock:
            self.tokens += (response.input_tokens or 0) + (response.output_tokens or 0)
            self.last_output_hash = output_hash
            self.last_active_ns = now
            self.seen_messages.add(output_hash[: hashing.SHORT])
            for call in response.tool_calls:
                self.pending[call.id] = PendingCall(call=call, step=step)
            if final:
                self.answered_ns = now

    def count_call(self, key: Any) -> int:
        """One more request of this tool call (name, arguments): how many so far in the run."""
        with self.lock:
            self.call_counts[key] += 1
            return self.call_counts[key]

    # --- tools ----------------------------------------------------------------------------------
    def claim_call(self, name: str, arguments: str | None, call_id: str | None,
                   open_span: Callable[[str | None, StepState | None], Any]) -> tuple[Any, PendingCall | None]:
        """An explicit tool starts: match the model's pending call (by id, else name and
        arguments), open its span with `open_span(call_id, step)` and claim the call at once, so
        that a result message arriving meanwhile is not inferred twice."""
        with self.lock:
            pending = self._match_pending(name, arguments, call_id)
            if pending is not None:
                call_id = pending.call.id
            step = pending.step if pending is not None else self.open_step
            start = open_span(call_id, step)
            if pending is not None:
                pending.record = ToolRecord(name, call_id, arguments, Outcome.OK, start.span.get_span_context(),
                                            step.index if step else None, "explicit")
            return start, pending

    def _match_pending(self, name: str, arguments: str | None, call_id: str | None) -> PendingCall | None:
        pending = self.pending
        if call_id and call_id in pending and pending[call_id].record is None:
            return pending[call_id]
        candidates = [p for p in pending.values() if p.record is None and p.call.name == name]
        if not candidates:
            return None
        if arguments is not None:
            wanted = value_key(parse_json_or_text(arguments))
            for p in candidates:
                if value_key(parse_json_or_text(p.call.arguments)) == wanted:
                    return p
        return candidates[0]

    def record_tool(self, record: ToolRecord, retry_of: ToolRecord | None, result_text: str | None,
                    writes: Iterable[str]) -> None:
        """A tool span ended: its record, the values its result produced, the resources it wrote."""
        with self.lock:
            if retry_of is not None:
                retry_of.retried = True
            self.records.append(record)
            if record.call_id:
                self.records_by_call_id[record.call_id] = record
            if result_text:
                values = distinctive_values(result_text)
                self.known_values |= values
                self.received.add(result_text)
                for key in values:
                    self.value_producers.setdefault(key, record)
            for key in writes:
                self.resource_writers[key] = record

    def index_result(self, call_id: str, record: ToolRecord) -> None:
        """The result of call `call_id` reached the model as a tool message, recorded as `record`."""
        with self.lock:
            self.records_by_call_id[call_id] = record

    def consume_call(self, call_id: str) -> None:
        """The request carries the result of this pending call: it is pending no more."""
        with self.lock:
            self.pending.pop(call_id, None)

    # --- steps ----------------------------------------------------------------------------------
    def close_open_step(self, end_ns: int | None = None) -> None:
        with self.lock:
            step = self.open_step
            if step is not None:
                self.open_step = None
                step.span.end(end_time=end_ns)

    def open_calls(self) -> list[PendingCall]:
        """The tool calls the model requested that no tool has run yet, oldest first."""
        with self.lock:
            return [p for p in self.pending.values() if p.record is None]

    def step_for_call(self, call_id: str | None) -> StepState | None:
        pending = self.pending.get(call_id) if call_id else None
        return pending.step if pending else None

    def continues(self, request: ChatRequest, hashes: list[str]) -> bool:
        """Does this request go on with the run's conversation?

        Yes when it answers a tool call the run requested, carries the run's last model output,
        starts with the run's previous request, or keeps at least half of that request's turns
        (system/developer messages aside): a history truncated or rewritten in place goes on.
        """
        for m in request.messages:
            if m.role == "tool" and m.tool_call_id and m.tool_call_id in self.pending:
                return True
        if self.last_output_hash and self.last_output_hash in hashes:
            return True
        prev = self.last_request_hashes
        if not prev:
            return False
        if hashes[: len(prev)] == prev:
            return True
        turns = [h for h in prev if self.message_roles.get(h[: hashing.SHORT]) not in INSTRUCTION_ROLES]
        kept = set(hashes).intersection(turns)
        return bool(kept) and 2 * len(kept) >= len(turns)


def current_explicit() -> RunInvocation | None:
    run = explicit_run.get()
    return run if run is not None and not run.ended else None


def live(run: RunInvocation | None) -> bool:
    return run is not None and not run.ended
