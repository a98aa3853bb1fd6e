"""Replay: a run recorded against the scripted server, answered again with the server gone.

Real parts throughout: the `openai` client (sync, streaming, async), the SDK writing our OTLP
JSON Lines file, the analyzer's readers loading it back, `opentelemetry-instrument` for the
environment-variable form.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import openai
import pytest

import otel_agent_trace
from otel_agent_trace.replay import ReplayDivergence, ReplayUnavailable
from otel_agent_trace.replay.recording import load
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

import support_agent
from replay_helpers import (
    Session, chat_async, chat_streamed, closed_port_url, diverges_at_the_changed_tool_result,
    falls_through_after_the_changed_tool_result, record, tool_log,
)

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TICKET = support_agent.TICKETS[0]  # refund A1001: lookup -> calculate -> answer


# --- three agents over the same tickets: plain, streaming, async --------------------------------
def plain(base_url: str) -> str:
    client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0)
    return support_agent.handle_ticket(client, TICKET)


def streaming(base_url: str) -> str:
    client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0)

    def send(messages: list[Any]) -> Iterator[Any]:
        with client.chat.completions.create(model=support_agent.MODEL, messages=messages,
                                            tools=support_agent.TOOL_SCHEMAS, stream=True) as stream:
            yield from stream

    return chat_streamed(send)


def asynchronous(base_url: str) -> str:
    client = openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    return chat_async(lambda messages: client.chat.completions.create(
        model=support_agent.MODEL, messages=messages, tools=support_agent.TOOL_SCHEMAS))


@pytest.mark.parametrize("agent", [plain, streaming, asynchronous], ids=["plain", "streaming", "async"])
def test_replay_with_the_server_gone_gives_the_same_run(tmp_path, monkeypatch, agent):
    calls = tool_log(monkeypatch)
    path, answer = record(tmp_path, agent)
    recorded_calls = list(calls)
    assert [name for name, _ in recorded_calls] == ["lookup_order", "calculate_refund"]
    calls.clear()
    original = load(str(path)).trace_id
    with Session() as session, otel_agent_trace.replay(str(path)) as replayer:
        replayed = agent(closed_port_url())
    assert replayed == answer and "$25.00" in replayed
    assert calls == recorded_calls
    assert replayer.diverged is None and len(replayer.used) == 3
    # the replay is itself traced, and says what it replays
    spans = session.spans()
    runs = [s for s in spans if s.name.startswith("invoke_agent")]
    chats = [s for s in spans if s.name.startswith("chat")]
    assert len(runs) == 1 and len(chats) == 3
    assert {s.attributes["agent_trace.replay.of"] for s in runs + chats} == {original}
    assert all(s.status.is_ok for s in chats)
    assert [s.attributes.get("agent_trace.step.kind") for s in sorted(
        (s for s in spans if s.name.startswith("agent_step")), key=lambda s: s.start_time)] == ["tool_call", "tool_call", "final"]


def test_divergence_names_the_step_and_the_first_differing_message(tmp_path, monkeypatch, capsys):
    diverges_at_the_changed_tool_result(tmp_path, monkeypatch, capsys, plain)


def test_fallthrough_goes_on_live_after_a_divergence(tmp_path, monkeypatch, capsys):
    falls_through_after_the_changed_tool_result(tmp_path, monkeypatch, plain)
    assert "going on live" in capsys.readouterr().err


def test_a_run_longer_than_its_recording_diverges_at_the_first_extra_call(tmp_path):
    path, _ = record(tmp_path, plain)
    with Session(), otel_agent_trace.replay(str(path)):
        plain(closed_port_url())
        with pytest.raises(ReplayDivergence, match="step 3: the recording has 3 model calls"):
            plain(closed_port_url())


def test_a_trace_recorded_without_content_says_which_setting_to_turn_on(tmp_path):
    path, _ = record(tmp_path, plain, capture_content=False)
    with pytest.raises(ReplayUnavailable, match="OTEL_AGENT_TRACE_CAPTURE_CONTENT=true"):
        otel_agent_trace.replay(str(path)).__enter__()


def test_a_missing_trace_id_names_the_choices(tmp_path):
    path, _ = record(tmp_path, plain)
    with pytest.raises(ReplayUnavailable, match="no agent run with trace id ffff"):
        otel_agent_trace.replay(str(path), trace_id="ffff").__enter__()


ONE_TICKET = """
import sys
sys.path.insert(0, {examples!r})
import openai, support_agent
client = openai.OpenAI(max_retries=0)
print(support_agent.handle_ticket(client, support_agent.TICKETS[0]))
"""


def _instrumented(script: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env.update({"OTEL_TRACES_EXPORTER": "agent_trace_file", "OTEL_METRICS_EXPORTER": "none",
                "OTEL_LOGS_EXPORTER": "none", "OPENAI_API_KEY": "test", **env_extra})
    return subprocess.run([str(BIN / "opentelemetry-instrument"), sys.executable, str(script)], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("detector", [True, False], ids=["resource-detector", "spans-only"])
def test_replay_by_environment_variable_under_opentelemetry_instrument(tmp_path, detector):
    script = tmp_path / "one_ticket.py"
    script.write_text(ONE_TICKET.format(examples=str(ROOT / "examples")))
    recorded = tmp_path / "recorded.jsonl"
    detectors = {"OTEL_EXPERIMENTAL_RESOURCE_DETECTORS": "agent_trace_replay"} if detector else {}
    with ScriptedOpenAIServer(support_agent.SCRIPTS) as server:
        first = _instrumented(script, {"OPENAI_BASE_URL": server.base_url, "OTEL_AGENT_TRACE_FILE": str(recorded),
                                       **detectors})
    assert first.returncode == 0, first.stderr
    replayed_file = tmp_path / "replayed.jsonl"
    # a prefix of the trace id is enough: the detector and the replay resolve it alike
    original = load(str(recorded))
    again = _instrumented(script, {"OPENAI_BASE_URL": closed_port_url(), "OTEL_AGENT_TRACE_FILE": str(replayed_file),
                                   "OTEL_AGENT_TRACE_REPLAY": f"{recorded}#{original.trace_id[:8]}", **detectors})
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout and "$25.00" in again.stdout
    replay_run = load(str(replayed_file))
    assert [s.context_hash for s in replay_run.steps] == [s.context_hash for s in original.steps]
    assert f'"agent_trace.replay.of","value":{{"stringValue":"{original.trace_id}"' in replayed_file.read_text()
    # the resource says so when the detector is enabled (the recording's, not being a replay, does not)
    resources = [r["resource"] for line in replayed_file.read_text().splitlines() for r in json.loads(line)["resourceSpans"]]
    on_resource = {a["value"]["stringValue"] for r in resources for a in r["attributes"] if a["key"] == "agent_trace.replay.of"}
    assert on_resource == ({original.trace_id} if detector else set())
    assert "agent_trace.replay.of" not in "".join(
        json.dumps(r["resource"]) for line in recorded.read_text().splitlines() for r in json.loads(line)["resourceSpans"])
    # original and replay compared: the saved case is checked against its replay
    cases = tmp_path / "cases"
    cli = str(BIN / "otel-agent-trace")
    saved = subprocess.run([cli, "save", original.trace_id, str(recorded), "--to", str(cases), "--name", "refund"],
                           capture_output=True, text=True, timeout=120)
    assert saved.returncode == 0, saved.stderr
    compared = subprocess.run([cli, "regress", str(cases), "--against", str(replayed_file)],
                              capture_output=True, text=True, timeout=120)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "PASS  case refund [regular]" in compared.stdout


def test_an_unusable_recording_by_environment_stops_with_one_clear_line(tmp_path):
    script = tmp_path / "one_ticket.py"
    script.write_text(ONE_TICKET.format(examples=str(ROOT / "examples")))
    recorded = tmp_path / "recorded.jsonl"
    with ScriptedOpenAIServer(support_agent.SCRIPTS) as server:
        first = _instrumented(script, {"OPENAI_BASE_URL": server.base_url, "OTEL_AGENT_TRACE_FILE": str(recorded),
                                       "OTEL_AGENT_TRACE_CAPTURE_CONTENT": "false"})
    assert first.returncode == 0, first.stderr
    again = _instrumented(script, {"OPENAI_BASE_URL": closed_port_url(), "OTEL_AGENT_TRACE_FILE": str(tmp_path / "x.jsonl"),
                                   "OTEL_AGENT_TRACE_REPLAY": f"{recorded}"})
    assert again.returncode == 2
    assert "OTEL_AGENT_TRACE_CAPTURE_CONTENT=true" in again.stderr
    assert "Traceback" not in again.stderr


def decorated_tools(monkeypatch: pytest.MonkeyPatch, ran: list[str]) -> None:
    """The example's tools, decorated with @otel_agent_trace.tool; `ran` logs real executions."""
    def decorated(name: str, real: Any) -> Any:
        def impl(**arguments: Any) -> Any:
            ran.append(name)
            return real(**arguments)

        impl.__name__ = name
        return otel_agent_trace.tool(name=name)(impl)

    monkeypatch.setattr(support_agent, "TOOLS", {n: decorated(n, f) for n, f in support_agent.TOOLS.items()})


def test_recorded_tools_answer_decorated_tools_from_the_trace(tmp_path, monkeypatch, capsys):
    ran: list[str] = []
    decorated_tools(monkeypatch, ran)
    path, answer = record(tmp_path, plain)
    assert ran == ["lookup_order", "calculate_refund"]
    ran.clear()
    # the live order service is gone too: only the recording can answer
    monkeypatch.setattr(support_agent, "ORDERS", {})
    with Session() as session, otel_agent_trace.replay(str(path), tools="recorded") as replayer:
        assert plain(closed_port_url()) == answer
    assert ran == [] and replayer.diverged is None
    tools = [s for s in session.spans() if s.name.startswith("execute_tool")]
    assert [s.attributes["gen_ai.tool.name"] for s in tools] == ["lookup_order", "calculate_refund"]
    assert "cannot stub" not in capsys.readouterr().err


def test_recorded_tools_say_which_inferred_tools_they_cannot_stub(tmp_path, capsys):
    path, answer = record(tmp_path, plain)
    with Session(), otel_agent_trace.replay(str(path), tools="recorded"):
        assert plain(closed_port_url()) == answer
    err = capsys.readouterr().err
    assert err.count("replay_tools=recorded cannot stub calculate_refund, lookup_order") == 1
    assert "OTEL_AGENT_TRACE_TOOLS" in err


def test_parse_replays_a_parsed_completion(tmp_path):
    from pydantic import BaseModel

    class Refund(BaseModel):
        order_id: str
        amount: float

    def ask(base_url: str) -> Any:
        client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0)
        return client.chat.completions.parse(model="gpt-4o-mini", response_format=Refund,
                                             messages=[{"role": "user", "content": "refund as json"}])

    path = tmp_path / "parsed.jsonl"
    scripts = {"refund as json": [{"content": '{"order_id": "A1001", "amount": 25.0}'}]}
    with ScriptedOpenAIServer(scripts) as server, Session(path):
        live = ask(server.base_url)
    with Session(), otel_agent_trace.replay(str(path)):
        replayed = ask(closed_port_url())
    from openai.types.chat import ParsedChatCompletion

    assert isinstance(replayed, ParsedChatCompletion)
    assert replayed.choices[0].message.parsed == live.choices[0].message.parsed == Refund(order_id="A1001", amount=25.0)


def test_regress_against_matches_a_replay_to_the_case_it_replays(tmp_path, capsys):
    """A replay that left its recording at once (another ticket, fallthrough) has another input:
    only its `agent_trace.replay.of` ties it to the saved case, which is then checked, not skipped."""
    from otel_agent_trace.cli import main as cli_main

    path, _ = record(tmp_path, plain)
    original = load(str(path)).trace_id
    cases = tmp_path / "cases"
    assert cli_main(["save", original, str(path), "--to", str(cases), "--name", "refund"]) == 0
    replayed = tmp_path / "replayed.jsonl"
    with ScriptedOpenAIServer(support_agent.SCRIPTS) as server, Session(replayed), \
            otel_agent_trace.replay(str(path), mode="fallthrough") as replayer:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        support_agent.handle_ticket(client, support_agent.TICKETS[2])
    assert replayer.diverged.startswith("step 0: the context differs from the recording at message 1 (user message)")
    capsys.readouterr()
    cli_main(["regress", str(cases), "--against", str(replayed)])
    out = capsys.readouterr().out
    assert "case refund [regular]" in out and not out.startswith("SKIP"), out
