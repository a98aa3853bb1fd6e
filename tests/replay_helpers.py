"""What the replay tests share: an instrumented phase writing a real trace file, a recording made
against the scripted server, a URL nobody listens on, and a log of the tools the agent ran."""

from __future__ import annotations

import asyncio
import functools
import json
import socket
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_agent_trace
from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.instrumentor import AgentTraceInstrumentor
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

import support_agent


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class Session:
    """One instrumented phase: its spans go to `path` (if given) and to memory."""

    def __init__(self, path: Path | None = None, **config: Any):
        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        if path is not None:
            self.provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(str(path))))
        self.instrumentor = AgentTraceInstrumentor()
        self.config = config

    def __enter__(self) -> "Session":
        if self.instrumentor.is_instrumented_by_opentelemetry:
            self.instrumentor.uninstrument()
        self.instrumentor.instrument(tracer_provider=self.provider, **self.config)
        return self

    def __exit__(self, *exc: Any) -> None:
        otel_agent_trace.end_implicit_runs()
        self.provider.force_flush()
        self.instrumentor.uninstrument()
        support_agent._carrier_calls.clear()

    def spans(self) -> list[Any]:
        otel_agent_trace.end_implicit_runs()
        return list(self.memory.get_finished_spans())


def tool_log(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict]]:
    """Log every tool the example agents really run: each of `support_agent.TOOLS`, which their
    `run_tool` dispatches to and google-genai's automatic function calling is given."""
    calls: list[tuple[str, dict]] = []
    for name, real in list(support_agent.TOOLS.items()):

        @functools.wraps(real)  # the same name, signature and annotations: what the SDK declares
        def logged(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
            calls.append((_name, kwargs))
            return _real(*args, **kwargs)

        monkeypatch.setitem(support_agent.TOOLS, name, logged)
    return calls


def record(tmp_path: Path, agent: Any, **config: Any) -> tuple[Path, str]:
    path = tmp_path / "recorded.jsonl"
    with ScriptedOpenAIServer(support_agent.SCRIPTS) as server, Session(path, **config) as session:
        answer = agent(server.base_url)
        trace_ids = {s.context.trace_id for s in session.spans()}
    assert len(trace_ids) == 1
    return path, answer




def _ticket() -> list[Any]:
    return [{"role": "system", "content": support_agent.SYSTEM}, {"role": "user", "content": support_agent.TICKETS[0]}]


def _answered(messages: list[Any], calls: list[dict[str, str]]) -> None:
    """The assistant's tool calls and the tools' results, appended."""
    messages.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]})
    for c in calls:
        messages.append({"role": "tool", "tool_call_id": c["id"],
                         "content": support_agent.run_tool(c["name"], json.loads(c["arguments"] or "{}"))})


def chat_streamed(send: Callable[[list[Any]], Iterable[Any]]) -> str:
    """The support agent's loop over streamed Chat Completions chunks (`send(messages)` yields
    them), tool call deltas joined by index."""
    messages = _ticket()
    for _ in range(support_agent.MAX_TURNS):
        text, calls = "", {}
        for chunk in send(messages):
            delta = chunk.choices[0].delta if chunk.choices else None
            if delta is None:
                continue
            text += delta.content or ""
            for tc in delta.tool_calls or ():
                slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] = slot["id"] or tc.id or ""
                slot["name"] += tc.function.name or ""
                slot["arguments"] += tc.function.arguments or ""
        if not calls:
            return text
        _answered(messages, list(calls.values()))
    raise AssertionError("no answer")


def chat_async(create: Callable[[list[Any]], Awaitable[Any]]) -> str:
    """The support agent's loop with an async Chat Completions call (`create(messages)`)."""

    async def main() -> str:
        messages = _ticket()
        for _ in range(support_agent.MAX_TURNS):
            message = (await create(messages)).choices[0].message
            if not message.tool_calls:
                return message.content or ""
            _answered(messages, [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                                 for c in message.tool_calls])
        raise AssertionError("no answer")

    return asyncio.run(main())


def _order_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    """The order service now answers differently: the second model call's context has another tool result."""
    monkeypatch.setitem(support_agent.ORDERS, "A1001", {**support_agent.ORDERS["A1001"], "status": "returned"})


def diverges_at_the_changed_tool_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any,
                                        agent: Callable[[str], str]) -> None:
    """strict: the replay stops at step 1, naming message 3 (the tool result), said once on stderr."""
    from otel_agent_trace.replay import ReplayDivergence

    path, _ = record(tmp_path, agent)
    _order_returned(monkeypatch)
    with Session(), otel_agent_trace.replay(str(path)):
        with pytest.raises(ReplayDivergence) as caught:
            agent(closed_port_url())
    expected = "step 1: the context differs from the recording at message 3 (tool result of lookup_order)"
    assert expected in str(caught.value)
    assert (caught.value.step, caught.value.message_index) == (1, 3)
    assert capsys.readouterr().err.count(expected) == 1


def falls_through_after_the_changed_tool_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                agent: Callable[[str], str]) -> None:
    """fallthrough: step 0 answered from the recording, steps 1 and 2 by the (restarted) server."""
    path, _ = record(tmp_path, agent)
    _order_returned(monkeypatch)
    with ScriptedOpenAIServer(support_agent.SCRIPTS) as server, Session() as session, \
            otel_agent_trace.replay(str(path), mode="fallthrough") as replayer:
        answer = agent(server.base_url)
        served = len(server.requests)
    assert "$25.00" in answer
    assert served == 2
    assert replayer.diverged.startswith("step 1: the context differs from the recording at message 3")
    assert len([s for s in session.spans() if s.name.startswith("chat")]) == 3


def replayed_offline(path: Path, agent: Callable[[str], str], answer: str, **options: Any) -> tuple[list[Any], list[Any]]:
    """Replay `agent` from the recording at `path` with the model at a closed port: the same answer,
    three steps answered, no divergence, and the replayed SDK objects read back exactly as the live
    ones did (the same context per step, the same response ids, `replay.of` the original).
    `options` go to `otel_agent_trace.replay` (`tools="recorded"`). Returns the replayed (steps,
    chats) spans, in time order."""
    from otel_agent_trace.replay.recording import load

    original = load(str(path))
    with Session() as session, otel_agent_trace.replay(str(path), **options) as replayer:
        replayed = agent(closed_port_url())
    assert replayed == answer
    assert replayer.diverged is None and len(replayer.used) == 3
    spans = sorted(session.spans(), key=lambda s: s.start_time)
    steps = [s for s in spans if s.name.startswith("agent_step")]
    chats = [s for s in spans if s.name.startswith("chat")]
    assert [s.attributes["agent_trace.context.hash"] for s in steps] == [s.context_hash for s in original.steps]
    assert [c.attributes.get("gen_ai.response.id") for c in chats] == [s.response.id for s in original.steps]
    assert {s.attributes["agent_trace.replay.of"] for s in chats + steps} == {original.trace_id}
    return steps, chats
