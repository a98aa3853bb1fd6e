"""crewai as a user runs it: `opentelemetry-instrument python agent.py` in a venv of its own
(tests/stacks/peer_venvs.py: crewai 1.15.30 cannot be installed beside the test venv's pins), its
native OpenAI provider against the scripted server, then `otel-agent-trace analyze`.

The small refund crew (one agent, `support`, on one task; crew `refunds`): `lookup_order` returns
`[]` for the malformed order id, the reply names no amount, and the program raises
`MissingRefundAmount` when it checks the reply, after the crew answered. With and without an
entry point around the kickoff and the check: exactly one run, `failed` with the program's
exception, the empty lookup named as origin, every step and tool in it (tool spans explicit,
matched to the model's call ids). Delegation to a coworker is a sub-run under its tool span; an
agent's kickoff without a crew is a run; text (ReAct) tool calls are tool spans; a fault in our
code changes no answer. A hundred concurrent kickoffs (50 `kickoff` from 8 threads while 50
`akickoff` tasks run, ~14 s in one process) never mix steps, tools or tokens. crewai's own telemetry
is left on in one case (it exports to crewai's endpoint with a provider of its own: nothing of it
reaches our file, nothing of ours changes) and turned off with `CREWAI_DISABLE_TELEMETRY=true`
elsewhere (offline, its exporter's retries at exit cost ~10 s)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any

import pytest

from stacks.peer_venvs import peer_python
from stacks.zero_code import analyze, attributes, run_instrumented, spans_of

REFUND_APP = """
import support_agent
from pydantic import BaseModel
from crewai import Agent, Crew, LLM, Task
from crewai.tools import tool
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

server = ScriptedOpenAIServer(support_agent.SCRIPTS).start()


class Item(BaseModel):  # (a bare `list[dict]` gets a strict schema that allows no key at all)
    sku: str
    price: float
    qty: int


@tool("lookup_order")
def lookup_order(order_id: str) -> list:
    \"\"\"Find an order by id.\"\"\"
    return support_agent.lookup_order(order_id)


@tool("calculate_refund")
def calculate_refund(order_id: str, items: list[Item]) -> dict:
    \"\"\"Refund amount for order items.\"\"\"
    return support_agent.calculate_refund(order_id, [i if isinstance(i, dict) else i.model_dump() for i in items])


def crew():
    llm = LLM(model="gpt-4o-mini", base_url=server.base_url, api_key="test", max_retries=0)
    agent = Agent(role="support", goal="Answer refund tickets", backstory=support_agent.SYSTEM,
                  tools=[lookup_order, calculate_refund], llm=llm)
    task = Task(description="{ticket}", expected_output="the reply to the customer", agent=agent)
    return Crew(agents=[agent], tasks=[task], name="refunds")


def answer(ticket):
    return crew().kickoff(inputs={"ticket": ticket}).raw


def handle_ticket(ticket):
    return support_agent.check_reply(ticket, answer(ticket))
"""

PROGRAM = """
import refund_app, support_agent
refund_app.handle_ticket(support_agent.TICKETS[1])   # raises MissingRefundAmount after the crew answered
"""

DESK_APP = """
import support_agent
from support_agent import _call
from crewai import Agent, Crew, LLM, Task
from refund_app import calculate_refund, lookup_order, server

TRIAGE = "Triage the ticket: "
server.scripts[TRIAGE + support_agent.TICKETS[1]] = [
    {"tool_calls": [_call("delegate_work_to_coworker", task="Please process a refund for order A10O2",
                          context="a customer's refund ticket", coworker="support")]},
    {"content": "Support found nothing to refund yet."}]


def handle_ticket(ticket):
    llm = LLM(model="gpt-4o-mini", base_url=server.base_url, api_key="test", max_retries=0)
    support = Agent(role="support", goal="Answer refund tickets", backstory=support_agent.SYSTEM,
                    tools=[lookup_order, calculate_refund], llm=llm)
    triage = Agent(role="triage", goal="Route tickets", backstory="You hand tickets to the right coworker.",
                   llm=llm, allow_delegation=True)
    task = Task(description=TRIAGE + "{ticket}", expected_output="the reply to the customer", agent=triage)
    crew = Crew(agents=[triage, support], tasks=[task], name="desk")
    return support_agent.check_reply(ticket, crew.kickoff(inputs={"ticket": ticket}).raw)


handle_ticket(support_agent.TICKETS[1])
"""

SOLO = """
import refund_app, support_agent
from crewai import Agent, LLM

llm = LLM(model="gpt-4o-mini", base_url=refund_app.server.base_url, api_key="test", max_retries=0)
agent = Agent(role="support", goal="Answer refund tickets", backstory=support_agent.SYSTEM,
              tools=[refund_app.lookup_order, refund_app.calculate_refund], llm=llm)
print(agent.kickoff(support_agent.TICKETS[0]).raw)
support_agent.check_reply(support_agent.TICKETS[1], agent.kickoff(support_agent.TICKETS[1]).raw)
"""

REACT = """
import json, refund_app, support_agent
from crewai import Agent, Crew, LLM, Task

def act(tool, **arguments):
    return {"content": f"Thought: I need it.\\nAction: {tool}\\nAction Input: {json.dumps(arguments)}"}

refund_app.server.scripts["*"] = [  # (an o1 model gets no system message: the first user message is crewai's)
    act("lookup_order", order_id="A10O2"), act("calculate_refund", order_id="A10O2", items=[]),
    {"content": "Thought: I know it.\\nFinal Answer: nothing to refund yet."}]
llm = LLM(model="o1-mini", base_url=refund_app.server.base_url, api_key="test", max_retries=0)
assert not llm.supports_function_calling()  # crewai falls back to text tool calls
agent = Agent(role="support", goal="Answer refund tickets", backstory=support_agent.SYSTEM,
              tools=[refund_app.lookup_order, refund_app.calculate_refund], llm=llm)
task = Task(description=support_agent.TICKETS[1], expected_output="the reply to the customer", agent=agent)
support_agent.check_reply(support_agent.TICKETS[1], Crew(agents=[agent], tasks=[task], name="refunds").kickoff().raw)
"""

FAULTS = """
import asyncio, refund_app, support_agent
import otel_agent_trace.frameworks.crewai as ours

def boom(*args, **kwargs):
    raise RuntimeError("injected failure inside otel-agent-trace")

ours.open_agent_run = ours.open_member_run = ours._tool_name = boom  # every kickoff, task and tool of ours
for _ in range(2):
    print("REPLY", refund_app.answer(support_agent.TICKETS[0]))
    print("ASYNC", asyncio.run(refund_app.crew().akickoff(inputs={"ticket": support_agent.TICKETS[0]})).raw)
"""

HALF = 50
CROWD = f"""
import asyncio
from concurrent.futures import ThreadPoolExecutor
import refund_app, support_agent

tickets = [support_agent.TICKETS[0], support_agent.TICKETS[1]] * {HALF // 2}
with ThreadPoolExecutor(8) as pool:
    threaded = [pool.submit(refund_app.answer, t) for t in tickets]

    async def tasks():
        return await asyncio.gather(*(refund_app.crew().akickoff(inputs={{"ticket": t}}) for t in tickets))

    answers = [a.raw for a in asyncio.run(tasks())] + [f.result() for f in threaded]
assert sum("$25.00" in a for a in answers) == {HALF}, answers
"""


@pytest.fixture(scope="module")
def crewai_python():
    python, output = peer_python("crewai")
    if python is None:
        pytest.skip(f"the crewai venv could not be installed (no package registry?):\n{output}")
    return python


def _ours(traces: Any) -> list[dict[str, Any]]:
    spans = spans_of(traces)
    assert {scope for scope, _ in spans} == {"otel_agent_trace"}  # crewai's telemetry spans stay its own
    return [s for _, s in spans]


@pytest.mark.parametrize("entry_point", [False, True], ids=["own-run", "entry-point"])
def test_one_failed_run_with_the_origin_at_the_empty_lookup(tmp_path, crewai_python, entry_point):
    (tmp_path / "refund_app.py").write_text(REFUND_APP)
    env = ({"OTEL_AGENT_TRACE_ENTRYPOINTS": "refund_app:handle_ticket"} if entry_point
           else {"CREWAI_DISABLE_TELEMETRY": "true"})
    proc, traces = run_instrumented(PROGRAM, tmp_path, python=crewai_python, **env)
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-3000:]
    ours = _ours(traces)
    runs = [s for s in ours if s["name"].startswith("invoke_agent")]
    assert len(runs) == 1, [r["name"] for r in runs]  # no second run around or inside the crew's
    [run_span] = runs
    steps = [s for s in ours if s["name"].startswith("agent_step")]
    assert len(steps) == 3 and {s["parentSpanId"] for s in steps} == {run_span["spanId"]}
    step_ids = {s["spanId"] for s in steps}
    tools = [s for s in ours if s["name"].startswith("execute_tool")]
    assert [s["name"] for s in tools] == ["execute_tool lookup_order", "execute_tool calculate_refund"]
    for span in tools:  # where the tool ran, with the model's call id (matched by name and arguments)
        assert span["parentSpanId"] in step_ids
        assert attributes(span)["agent_trace.tool.source"] == "explicit"
        assert attributes(span)["gen_ai.tool.call.id"].startswith("call_")
    assert attributes(tools[0])["gen_ai.tool.call.result"] == "[]"
    chats = [s for s in ours if s["name"].startswith("chat")]
    assert len(chats) == 3 and {s["parentSpanId"] for s in chats} == step_ids  # crewai's native openai calls
    agents = attributes(run_span).get("agent_trace.run.agents")
    if entry_point:  # the entry point's run, listing the crew and its agent
        assert attributes(run_span)["gen_ai.agent.name"] == "handle_ticket"
        assert agents == {"values": [{"stringValue": "refunds"}, {"stringValue": "support"}]}
    else:  # the crew's run, listing the agent that worked on its task
        assert attributes(run_span)["gen_ai.agent.name"] == "refunds"
        assert agents == {"values": [{"stringValue": "support"}]}

    [run] = analyze(traces)["runs"]
    assert run["status"] == "failed", run
    assert run["critical"]["error_type"] == "run_exception"
    assert "MissingRefundAmount" in run["critical"]["description"]
    assert (run["origin"]["tool"], run["origin"]["error_type"]) == ("lookup_order", "tool_empty_result"), run
    assert run["bug_class"] == "tool"


def test_delegation_to_a_coworker_is_a_sub_run_under_its_tool(tmp_path, crewai_python):
    """crewai's "Delegate work to coworker": the coworker's task is a sub-agent's run nested under
    the delegating tool span, linked `delegated_to`; the crew's run fails with the program's
    exception and the analyzer follows the failure into the sub-agent, to its empty lookup."""
    (tmp_path / "refund_app.py").write_text(REFUND_APP)
    proc, traces = run_instrumented(DESK_APP, tmp_path, python=crewai_python, CREWAI_DISABLE_TELEMETRY="true")
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-3000:]
    ours = _ours(traces)
    by_id = {s["spanId"]: s for s in ours}
    desk, support = sorted((s for s in ours if s["name"].startswith("invoke_agent")),
                           key=lambda s: int(s["startTimeUnixNano"]))
    assert (desk["name"], support["name"]) == ("invoke_agent desk", "invoke_agent support")
    assert attributes(desk)["agent_trace.run.agents"] == {"values": [{"stringValue": "triage"}]}
    delegate = by_id[support["parentSpanId"]]
    assert delegate["name"] == "execute_tool delegate_work_to_coworker"
    assert attributes(support)["agent_trace.depends_on.relations"] == {"values": [{"stringValue": "delegated_to"}]}
    lookup = [s for s in ours if s["name"] == "execute_tool lookup_order"]
    assert [by_id[by_id[s["parentSpanId"]]["parentSpanId"]]["name"] for s in lookup] == ["invoke_agent support"]
    runs = {r["run_span_id"]: r for r in analyze(traces)["runs"]}
    failed = runs[desk["spanId"]]
    assert failed["status"] == "failed" and "MissingRefundAmount" in failed["critical"]["description"]
    assert (failed["origin"]["tool"], failed["origin"]["agent"]) == ("lookup_order", "support"), failed
    assert failed["origin"]["span_id"] == lookup[0]["spanId"]


def test_agent_kickoff_without_a_crew_is_a_run_named_after_its_role(tmp_path, crewai_python):
    """`Agent.kickoff(messages)`: one run per kickoff, named after the role; the program's
    exception about the second answer fails the second, its origin the empty lookup."""
    (tmp_path / "refund_app.py").write_text(REFUND_APP)
    proc, traces = run_instrumented(SOLO, tmp_path, python=crewai_python, CREWAI_DISABLE_TELEMETRY="true")
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-3000:]
    runs = sorted(analyze(traces)["runs"], key=lambda r: r["status"])
    assert [(r["agent"], r["status"], r["steps"]) for r in runs] == [("support", "failed", 3), ("support", "ok", 3)]
    assert (runs[0]["origin"]["tool"], runs[0]["origin"]["error_type"]) == ("lookup_order", "tool_empty_result")


def test_text_tool_calls_are_tool_spans_too(tmp_path, crewai_python):
    """A model without function calling (crewai's ReAct text: `Action:` / `Action Input:`): each
    tool still runs inside its span (`CrewStructuredTool.invoke`), without a call id, in the step
    whose answer asked for it; the run fails, its origin the empty lookup."""
    (tmp_path / "refund_app.py").write_text(REFUND_APP)
    proc, traces = run_instrumented(REACT, tmp_path, python=crewai_python, CREWAI_DISABLE_TELEMETRY="true")
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-3000:]
    ours = _ours(traces)
    steps = sorted((s for s in ours if s["name"].startswith("agent_step")), key=lambda s: int(s["startTimeUnixNano"]))
    tools = sorted((s for s in ours if s["name"].startswith("execute_tool")), key=lambda s: int(s["startTimeUnixNano"]))
    assert [(s["name"], s["parentSpanId"]) for s in tools] == [
        ("execute_tool lookup_order", steps[0]["spanId"]), ("execute_tool calculate_refund", steps[1]["spanId"])]
    assert [attributes(s)["agent_trace.tool.source"] for s in tools] == ["explicit", "explicit"]
    assert json.loads(attributes(tools[0])["gen_ai.tool.call.arguments"]) == {"order_id": "A10O2"}
    assert attributes(tools[0])["gen_ai.tool.call.result"] == "[]"
    [run] = analyze(traces)["runs"]
    assert run["status"] == "failed" and run["steps"] == 3
    assert (run["origin"]["tool"], run["origin"]["error_type"]) == ("lookup_order", "tool_empty_result"), run


def test_a_fault_in_our_crewai_code_leaves_the_crew_unchanged(tmp_path, crewai_python):
    """Fail-open: our run, task and tool code raising on every call; each kickoff, sync and async,
    answers exactly as without us, and each fault is logged once."""
    (tmp_path / "refund_app.py").write_text(REFUND_APP)
    proc, traces = run_instrumented(FAULTS, tmp_path, python=crewai_python, CREWAI_DISABLE_TELEMETRY="true")
    assert proc.returncode == 0, proc.stderr[-3000:]
    reply = "Your refund for order A1001 is $25.00; it will reach your card in 3-5 days."
    assert proc.stdout.splitlines() == [f"REPLY {reply}", f"ASYNC {reply}"] * 2
    logged = re.findall(r"instrumentation error in (crewai\S*)", proc.stderr)
    assert sorted(logged) == ["crewai.kickoff", "crewai.task", "crewai.tool.begin"], proc.stderr[-3000:]  # once each


def _children(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for span in sorted(spans, key=lambda s: int(s["startTimeUnixNano"])):
        out[span.get("parentSpanId", "")].append(span)
    return out


def test_hundred_concurrent_kickoffs_never_mix(tmp_path, crewai_python):
    (tmp_path / "refund_app.py").write_text(REFUND_APP)
    proc, traces = run_instrumented(CROWD, tmp_path, python=crewai_python, CREWAI_DISABLE_TELEMETRY="true")
    assert proc.returncode == 0, proc.stderr[-3000:]
    ours = _ours(traces)
    children = _children(ours)
    runs = [s for s in ours if s["name"].startswith("invoke_agent")]
    assert len(runs) == 2 * HALF and len({r["traceId"] for r in runs}) == 2 * HALF
    tokens: dict[str, set[int]] = defaultdict(set)
    orders = []
    for run in runs:
        assert attributes(run)["gen_ai.agent.name"] == "refunds"  # the agent's task in it, sync or async:
        assert attributes(run)["agent_trace.run.agents"] == {"values": [{"stringValue": "support"}]}
        steps = children[run["spanId"]]
        assert [s["name"] for s in steps] == [f"agent_step {i}" for i in range(3)]
        inside = [c for s in steps for c in children[s["spanId"]]]
        chats = [c for c in inside if c["name"].startswith("chat")]
        calls = [c for c in inside if c["name"].startswith("execute_tool")]
        assert len(chats) == 3 and len(calls) == 2, [c["name"] for c in inside]
        assert {c["traceId"] for c in inside} == {run["traceId"]}
        order = {json.loads(attributes(t)["gen_ai.tool.call.arguments"]).get("order_id") for t in calls} - {None}
        assert len(order) == 1, order  # one ticket's order in all its tools
        orders.append(order.pop())
        tokens[orders[-1]].add(sum(int(attributes(c)["gen_ai.usage.input_tokens"])
                                   + int(attributes(c)["gen_ai.usage.output_tokens"]) for c in chats))
    assert sorted(orders) == sorted(["A1001", "A10O2"] * HALF)
    assert all(len(v) == 1 for v in tokens.values()), tokens  # same conversation, same tokens
    report = analyze(traces)
    assert sorted(r["status"] for r in report["runs"]) == ["ok"] * HALF + ["suspect"] * HALF
    assert {r["origin"]["tool"] for r in report["runs"] if r["status"] == "suspect"} == {"lookup_order"}
