"""Replay of a LangGraph agent on LangChain's `ChatOpenAI`, which sends every model call through
the openai SDK's `with_raw_response.create` (and its async twin). Recorded against the scripted
server, replayed with the server stopped and the model pointed at a closed port: the same tool
calls, the same answer, each model call answered from the recording inside the SDK's own
raw-response code (replay/wire.py)."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import langgraph_agent
import pytest
import support_agent
from replay_helpers import record, replayed_offline

TICKET = support_agent.TICKETS[0]  # refund A1001: lookup -> calculate -> answer


def graph_sync(base_url: str) -> str:
    return langgraph_agent.handle_ticket(langgraph_agent.build_agent(base_url), TICKET)


def graph_async(base_url: str) -> str:
    agent = langgraph_agent.build_agent(base_url)
    reply = asyncio.run(agent.ainvoke({"messages": [("user", TICKET)]}))["messages"][-1].content
    return support_agent.check_reply(TICKET, reply)


def _tool_log(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple, dict]]:
    """Every tool the graph's LangChain tools really run (they call support_agent's functions)."""
    calls: list[tuple[str, tuple, dict]] = []
    for name in ("lookup_order", "track_shipment", "calculate_refund"):
        real = getattr(support_agent, name)

        def logged(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
            calls.append((_name, args, kwargs))
            return _real(*args, **kwargs)

        monkeypatch.setattr(support_agent, name, logged)
    return calls


def _raw_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SDK's raw responses parsed, each once (`parse()` is cached and read more than once):
    proves the agent goes through `with_raw_response`."""
    import openai._legacy_response as legacy

    seen: list[str] = []
    real = legacy.LegacyAPIResponse.parse

    def parse(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not getattr(self, "_counted_by_test", False):
            self._counted_by_test = True
            seen.append(self.http_request.url.path)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(legacy.LegacyAPIResponse, "parse", parse)
    return seen


@pytest.mark.parametrize("agent", [graph_sync, graph_async], ids=["invoke", "ainvoke"])
def test_chatopenai_replays_with_the_server_gone(tmp_path, monkeypatch, agent: Callable[[str], str]):
    calls = _tool_log(monkeypatch)
    raw = _raw_calls(monkeypatch)
    path, answer = record(tmp_path, agent)
    recorded_calls = list(calls)
    assert [name for name, _, _ in recorded_calls] == ["lookup_order", "calculate_refund"]
    assert "$25.00" in answer
    assert raw == ["/v1/chat/completions"] * 3  # ChatOpenAI: every call through with_raw_response
    calls.clear()
    raw.clear()
    replayed_offline(path, agent, answer)  # the model at a closed port: the same answer, steps and contexts
    assert calls == recorded_calls
    assert raw == ["/v1/chat/completions"] * 3  # the SDK's own LegacyAPIResponse, over the recorded body
