"""pydantic-ai through its real public API (`Agent`, `tool_plain`, `run`/`run_sync`, an
`OpenAIChatModel` over the real openai client) against the scripted server: each agent run is one
named run, each tool runs inside an explicit `execute_tool` span carrying the model's call id, a
`ModelRetry` / argument validation failure is a failed result the model recovered from,
concurrent runs never mix, and pydantic-ai's own instrumentation beside ours counts nothing twice."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import openai
import pytest
import support_agent
from opentelemetry.trace import StatusCode
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from span_helpers import attrs, hexid
from stacks.zero_code import analyze, attributes, run_instrumented, spans_of

from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

HEALTHY, EMPTY = support_agent.TICKETS[0], support_agent.TICKETS[1]
# the refund ticket's steps: what each holds
REFUND_TREE = [["chat gpt-4o-mini", "execute_tool lookup_order"], ["chat gpt-4o-mini", "execute_tool calculate_refund"],
               ["chat gpt-4o-mini"]]


def make_agent(base_url: str, name: str | None = "support", **tools: Any) -> Agent:
    """The demo's refund agent as a pydantic-ai agent (its two refund tools, or `tools`)."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
    agent = Agent(model, name=name, system_prompt=support_agent.SYSTEM)
    for function in (tools or {"lookup_order": support_agent.lookup_order,
                               "calculate_refund": support_agent.calculate_refund}).values():
        agent.tool_plain(function)
    return agent


def ours(traced: Any, prefix: str) -> list[Any]:
    return [s for s in traced.named(prefix) if s.instrumentation_scope.name == "otel_agent_trace"]


def test_two_step_run_tree_call_ids_name_and_tool_definitions(instrument, demo_server):
    traced = instrument()
    result = make_agent(demo_server.base_url).run_sync(HEALTHY)
    assert result.output.startswith("Your refund for order A1001 is $25.00")
    [run] = traced.runs()
    assert run.name == "invoke_agent support" and attrs(run)["gen_ai.agent.name"] == "support"
    steps = traced.children(run)
    assert [[c.name for c in traced.children(s)] for s in steps] == REFUND_TREE
    assert len(ours(traced, "chat")) == 3  # exactly one chat span per model call
    lookup, calc = traced.named("execute_tool")
    assert attrs(lookup)["gen_ai.tool.call.id"] == "call_0_0" and attrs(calc)["gen_ai.tool.call.id"] == "call_1_0"
    assert attrs(lookup)["agent_trace.tool.source"] == "explicit"  # recorded where it ran, not inferred
    assert json.loads(attrs(lookup)["gen_ai.tool.call.result"])[0]["order_id"] == "A1001"
    assert json.loads(attrs(lookup)["gen_ai.tool.call.arguments"]) == {"order_id": "A1001"}
    # the tool span lies between the decision that asked for it and the next request
    chat0, chat1 = (traced.children(s)[0] for s in steps[:2])
    assert chat0.end_time <= lookup.start_time <= lookup.end_time <= chat1.start_time
    definitions = json.loads(attrs(traced.children(steps[0])[0])["gen_ai.tool.definitions"])
    assert sorted(d["function"]["name"] for d in definitions) == ["calculate_refund", "lookup_order"]
    assert attrs(steps[1])["agent_trace.depends_on"] == (hexid(lookup),)


def test_silent_empty_result_is_the_origin_on_the_tool_span(instrument, demo_server):
    traced = instrument()
    make_agent(demo_server.base_url).run_sync(EMPTY)
    lookup, calc = traced.named("execute_tool")
    assert attrs(lookup)["agent_trace.tool.outcome"] == "empty_result"
    assert attrs(lookup)["agent_trace.lifecycle.phase"] == "origin"
    assert attrs(calc)["agent_trace.lifecycle.phase"] == "propagate"


def test_tool_exception_fails_the_tool_span_and_the_run(instrument):
    def lookup_order(order_id: str) -> Any:
        """Find an order by id."""
        raise ConnectionError("order service unreachable")

    scripts = {"refund for order A1001": support_agent.SCRIPTS["refund for order A1001"]}
    with ScriptedOpenAIServer(scripts) as server:
        traced = instrument()
        with pytest.raises(ConnectionError):
            make_agent(server.base_url, lookup_order=lookup_order).run_sync(HEALTHY)
    [tool] = traced.named("execute_tool")
    assert tool.status.status_code is StatusCode.ERROR
    assert attrs(tool)["agent_trace.tool.outcome"] == "exception"
    assert attrs(tool)["error.type"] == "ConnectionError"
    assert attrs(tool)["gen_ai.tool.call.id"] == "call_0_0"
    assert [e.name for e in tool.events] == ["exception"]
    [run] = traced.runs()
    assert run.status.status_code is StatusCode.ERROR
    assert attrs(run)["agent_trace.lifecycle.phase"] == "critical"


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def test_model_retry_and_invalid_arguments_are_failed_results_the_model_recovered_from(instrument):
    """pydantic-ai answers a `ModelRetry` and invalid arguments with a retry prompt (the legacy
    `RetryPromptPart`): the span fails with the cause, the next call of the tool retries it."""
    attempts: list[str] = []

    def lookup_order(order_id: str) -> Any:
        """Find an order by id."""
        attempts.append(order_id)
        if len(attempts) == 1:
            raise ModelRetry("order ids look like A1001: try again")
        return support_agent.lookup_order(order_id)

    scripts = {"refund for order A1001": [
        {"tool_calls": [_call("lookup_order", order_id="a1001")]},
        {"tool_calls": [_call("lookup_order", order_id="A1001")]},
        {"tool_calls": [_call("calculate_refund", order_id="A1001", items="all of them")]},  # not a list
        {"tool_calls": [_call("calculate_refund", order_id="A1001", items=[{"sku": "MUG-1", "price": 12.5, "qty": 2}])]},
        {"content": "Your refund for order A1001 is $25.00."},
    ]}
    with ScriptedOpenAIServer(scripts) as server:
        traced = instrument()
        agent = make_agent(server.base_url, lookup_order=lookup_order, calculate_refund=support_agent.calculate_refund)
        assert agent.run_sync(HEALTHY).output.endswith("$25.00.")
    retried, looked_up, invalid, calculated = traced.named("execute_tool")
    assert attrs(retried)["error.type"] == "ModelRetry" and retried.status.status_code is StatusCode.ERROR
    assert "try again" in retried.status.description
    assert attrs(retried)["agent_trace.lifecycle.phase"] == "origin"
    assert attrs(looked_up)["agent_trace.lifecycle.phase"] == "recovered"
    assert attrs(looked_up)["agent_trace.depends_on.relations"][-1] == "retry_of"
    assert attrs(looked_up)["agent_trace.depends_on"][-1] == hexid(retried)
    assert attrs(invalid)["agent_trace.tool.outcome"] == "exception"  # never ran: its arguments failed
    assert attrs(invalid)["gen_ai.tool.call.id"] == "call_2_0"
    assert attrs(calculated)["agent_trace.lifecycle.phase"] == "recovered"
    assert len(ours(traced, "chat")) == 5


def test_async_runs_and_concurrent_runs_never_mix(instrument, demo_server):
    """Twelve `agent.run` tasks on one loop, and eight `run_sync` calls in a thread pool: each
    run holds its own three steps, its own tools under them, in its own trace."""
    traced = instrument()
    tickets = [HEALTHY if i % 2 == 0 else EMPTY for i in range(12)]

    async def main() -> list[str]:
        agent = make_agent(demo_server.base_url)
        results = await asyncio.gather(*(agent.run(t) for t in tickets))
        return [r.output for r in results]

    outputs = asyncio.run(main())
    assert outputs[0].startswith("Your refund") and outputs[1].startswith("I could not find")
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda t: make_agent(demo_server.base_url).run_sync(t), tickets[:8]))
    runs = traced.runs()
    assert len(runs) == 20 and len({r.context.trace_id for r in runs}) == 20
    for run in runs:
        steps = traced.children(run)
        assert [s.name for s in steps] == ["agent_step 0", "agent_step 1", "agent_step 2"]
        tools = [c for s in steps for c in traced.children(s) if c.name.startswith("execute_tool")]
        ids = {attrs(t)["gen_ai.tool.call.id"] for t in tools}
        assert ids == {"call_0_0", "call_1_0"} and all(t.context.trace_id == run.context.trace_id for t in tools)
        outcome = attrs(tools[0])["agent_trace.tool.outcome"]
        assert outcome in ("ok", "empty_result")
    empties = sum(attrs(t)["agent_trace.tool.outcome"] == "empty_result" for t in traced.named("execute_tool lookup"))
    assert empties == 6 + 4


def test_run_stream_is_one_run_with_streamed_chats(instrument, demo_server):
    traced = instrument()

    async def main() -> str:
        async with make_agent(demo_server.base_url).run_stream(HEALTHY) as result:
            return await result.get_output()

    assert asyncio.run(main()).startswith("Your refund for order A1001")
    [run] = traced.runs()
    steps = traced.children(run)
    assert [[c.name for c in traced.children(s)] for s in steps] == REFUND_TREE
    assert [attrs(t)["gen_ai.tool.call.id"] for t in traced.named("execute_tool")] == ["call_0_0", "call_1_0"]


def test_parallel_tool_calls_of_one_response_each_have_their_span_and_id(instrument):
    scripts = {"two orders": [
        {"tool_calls": [_call("lookup_order", order_id="A1001"), _call("lookup_order", order_id="A1003")]},
        {"content": "both found"},
    ]}
    with ScriptedOpenAIServer(scripts) as server:
        traced = instrument()
        assert make_agent(server.base_url).run_sync("two orders A1001 and A1003").output == "both found"
    step0 = traced.named("agent_step 0")[0]
    lookups = traced.named("execute_tool lookup_order")
    assert all(t.parent.span_id == step0.context.span_id for t in lookups)
    by_id = {attrs(t)["gen_ai.tool.call.id"]: json.loads(attrs(t)["gen_ai.tool.call.arguments"]) for t in lookups}
    assert by_id == {"call_0_0": {"order_id": "A1001"}, "call_0_1": {"order_id": "A1003"}}
    assert set(attrs(traced.named("agent_step 1")[0])["agent_trace.depends_on"]) == {hexid(t) for t in lookups}


def test_a_sub_agent_called_from_a_tool_is_a_run_nested_under_the_tool(instrument):
    scripts = {**support_agent.SCRIPTS,
               "desk ticket": [{"tool_calls": [_call("delegate", order_id="A1001")]}, {"content": "Done: $25.00"}]}
    with ScriptedOpenAIServer(scripts) as server:
        traced = instrument()
        inner = make_agent(server.base_url, name="refunds")

        async def delegate(order_id: str) -> str:
            """Ask the refund desk."""
            return (await inner.run(HEALTHY)).output

        assert make_agent(server.base_url, name="desk", delegate=delegate).run_sync("desk ticket A1001").output
    desk, refunds = traced.runs()
    assert attrs(desk)["gen_ai.agent.name"] == "desk" and attrs(refunds)["gen_ai.agent.name"] == "refunds"
    [tool] = traced.named("execute_tool delegate")
    assert refunds.parent.span_id == tool.context.span_id
    assert [s.name for s in traced.children(refunds)] == ["agent_step 0", "agent_step 1", "agent_step 2"]
    assert [s.name for s in traced.children(desk)] == ["agent_step 0", "agent_step 1"]


def test_an_entry_point_around_the_agent_is_its_run(instrument, demo_server, monkeypatch):
    """`agent_run` (or an entry point) around `agent.run_sync` plus the host's own check: one run,
    named after the agent, that the host's exception fails."""
    from otel_agent_trace import agent_run

    traced = instrument()
    with pytest.raises(support_agent.MissingRefundAmount):
        with agent_run():
            support_agent.check_reply(EMPTY, make_agent(demo_server.base_url).run_sync(EMPTY).output)
    [run] = traced.runs()
    assert attrs(run)["gen_ai.agent.name"] == "support"
    assert attrs(run)["agent_trace.lifecycle.phase"] == "critical"
    assert len(traced.children(run)) == 3


# --- zero code: `opentelemetry-instrument python agent.py`, the analyzer CLI --------------------
AGENT = """
import sys
from typing import Any
import openai
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer
import support_agent
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

server = ScriptedOpenAIServer(support_agent.SCRIPTS).start()
client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client)),
              name="support", system_prompt=support_agent.SYSTEM)
agent.instrument = OWN_INSTRUMENTATION
agent.tool_plain(support_agent.lookup_order)
agent.tool_plain(support_agent.calculate_refund)

def handle_ticket(ticket: str) -> str:
    return support_agent.check_reply(ticket, agent.run_sync(ticket).output)

handle_ticket(support_agent.TICKETS[1])   # lookup_order returns []: the host raises MissingRefundAmount
"""


@pytest.mark.parametrize("own", [False, True], ids=["ours", "with-pydantic-ai-instrumentation"])
def test_zero_code_the_analyzer_names_the_empty_lookup_as_origin(tmp_path, own):
    """With pydantic-ai's own instrumentation on (`agent.instrument = True`: its `invoke_agent`,
    `chat` and `execute_tool` spans, nested in ours) and openai-v2's beside it: one run, each model
    call and each tool counted once, tokens once, the planted origin found."""
    proc, traces = run_instrumented(AGENT.replace("OWN_INSTRUMENTATION", str(own)), tmp_path,
                                    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="span_only")
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-3000:]
    spans = spans_of(traces)
    mine = [s for scope, s in spans if scope == "otel_agent_trace"]
    theirs = [(scope, s) for scope, s in spans if scope == "pydantic-ai"]
    my_chats = {s["spanId"] for s in mine if s["name"].startswith("chat")}
    assert len(my_chats) == 3
    official = [s for scope, s in spans if scope.startswith("opentelemetry.") and s["name"].startswith("chat")]
    assert len(official) == 3 and all(s["parentSpanId"] in my_chats for s in official)  # openai-v2, nested
    if own:  # theirs really are there: a run, three chats, two tools
        assert sorted(s["name"].split()[0] for _, s in theirs) == ["chat"] * 3 + ["execute_tool"] * 2 + ["invoke_agent"]
    else:
        assert theirs == []
    report = analyze(traces)
    [run] = report["runs"]
    assert run["agent"] == "support"
    assert run["origin"]["tool"] == "lookup_order" and run["origin"]["error_type"] == "tool_empty_result"
    assert run["bug_class"] == "tool"
    metrics = report["summary"]["metrics"]
    assert metrics["tool_calls"] == 2 and metrics["steps_per_run"]["mean"] == 3
    tokens = sum(int(attributes(s)["gen_ai.usage.input_tokens"]) for s in mine if s["name"].startswith("chat"))
    assert metrics["tokens_per_run"]["input"] == tokens


def test_zero_code_entry_point_run_fails_with_the_host_exception(tmp_path):
    """`OTEL_AGENT_TRACE_ENTRYPOINTS` around the agent and the host's check: the agent runs in the
    entry point's run (which keeps its name and lists the agent), and the host's exception fails it;
    pydantic-ai's own run span inside it is not a second run."""
    module = AGENT.replace("OWN_INSTRUMENTATION", "True").replace("handle_ticket(support_agent.TICKETS[1])   #", "#")
    (tmp_path / "pyd_support.py").write_text(module)
    proc, traces = run_instrumented("import pyd_support\npyd_support.handle_ticket(pyd_support.support_agent.TICKETS[1])\n",
                                    tmp_path, OTEL_AGENT_TRACE_ENTRYPOINTS="pyd_support:handle_ticket")
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-3000:]
    [run] = analyze(traces)["runs"]
    assert run["status"] == "failed" and run["agent"] == "handle_ticket"
    assert "MissingRefundAmount" in run["critical"]["description"]
    assert run["origin"]["tool"] == "lookup_order"
    [root] = [s for scope, s in spans_of(traces) if scope == "otel_agent_trace" and s["name"].startswith("invoke_agent")]
    assert attributes(root)["agent_trace.run.agents"] == {"values": [{"stringValue": "support"}]}


def test_uninstrument_leaves_pydantic_ai_as_it_was(instrument, demo_server):
    from pydantic_ai.agent import Agent as AgentClass
    from pydantic_ai.tool_manager import ToolManager

    from otel_agent_trace.instrumentor import AgentTraceInstrumentor

    traced = instrument()
    assert hasattr(vars(ToolManager)["execute_tool_call"], "__wrapped__")
    AgentTraceInstrumentor().uninstrument()
    assert not hasattr(vars(ToolManager)["execute_tool_call"], "__wrapped__")
    assert not hasattr(vars(AgentClass)["iter"], "_self_wrapper")
    assert make_agent(demo_server.base_url).run_sync(HEALTHY).output.startswith("Your refund")
    assert traced.spans == []
