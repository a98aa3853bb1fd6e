"""OpenAI Agents SDK (openai-agents 0.24) with no code change: `opentelemetry-instrument python
agent.py`, the real `Runner` against the scripted loopback model (the Responses API, the SDK's
default, and Chat Completions), the CLI's `analyze --format json` over the file.

Each agent is the demo's refund desk: `lookup_order` silently returns `[]` for the malformed
order id (the planted origin) and the host rejects the answer (MissingRefundAmount)."""

from __future__ import annotations

import json

import pytest

from stacks.zero_code import analyze, attributes, run_instrumented, spans_of

pytest.importorskip("agents")

PRELUDE = """
import asyncio, json, sys
from typing import Any
import openai
from agents import (Agent, GuardrailFunctionOutput, InputGuardrailTripwireTriggered, OpenAIChatCompletionsModel,
                    OpenAIResponsesModel,
                    Runner, function_tool, input_guardrail, set_default_openai_client)
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer
import support_agent
from support_agent import _call

TICKET = support_agent.TICKETS[1]   # the malformed order id: lookup_order returns []
SCRIPTS = dict(support_agent.SCRIPTS)
SCRIPTS["triage " + TICKET] = [{"tool_calls": [_call("transfer_to_refunds")]}] + SCRIPTS["refund for order A10O2"]
SCRIPTS["broken lookup"] = [{"tool_calls": [_call("lookup_order", order_id="A1001")]}, {"content": "The lookup failed."}]
server = ScriptedOpenAIServer(SCRIPTS).start()
client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
set_default_openai_client(client, use_for_tracing=False)

@function_tool(strict_mode=False)
def lookup_order(order_id: str) -> str:
    \"\"\"Look an order up.\"\"\"
    if order_id == "A1001" and BROKEN:
        raise ConnectionError("order service unreachable")
    return json.dumps(support_agent.lookup_order(order_id))

@function_tool(strict_mode=False)
def calculate_refund(order_id: str, items: list[dict[str, Any]]) -> str:
    \"\"\"Compute a refund.\"\"\"
    return support_agent.run_tool("calculate_refund", {"order_id": order_id, "items": items})

BROKEN = False
support = Agent(name="support", instructions=support_agent.SYSTEM, tools=[lookup_order, calculate_refund],
                model="gpt-4o-mini")
"""


def _ours(traces):
    return [s for scope, s in spans_of(traces) if scope == "otel_agent_trace"]


def _named(spans, prefix):
    return sorted((s for s in spans if s["name"].startswith(prefix)), key=lambda s: int(s["startTimeUnixNano"]))


def _assert_origin_lookup(run: dict) -> None:
    assert run["origin"]["tool"] == "lookup_order", run
    assert run["origin"]["error_type"] == "tool_empty_result"
    assert run["bug_class"] == "tool"


def test_two_step_run_span_tree_and_origin(tmp_path):
    """Runner.run_sync, Responses API: run -> agent_step N -> chat + execute_tool, the agent's
    name, its tools' schemas, tools recorded where they ran with the call ids the chats asked for."""
    proc, traces = run_instrumented(PRELUDE + """
result = Runner.run_sync(support, TICKET)
support_agent.check_reply(TICKET, result.final_output)
""", tmp_path)
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-2000:]
    ours = _ours(traces)
    by_id = {s["spanId"]: s for s in ours}
    [run] = _named(ours, "invoke_agent")
    assert run["name"] == "invoke_agent support" and attributes(run)["gen_ai.agent.name"] == "support"
    assert "agent_trace.run.implicit" not in attributes(run)
    steps = _named(ours, "agent_step")
    assert [attributes(s)["agent_trace.step.kind"] for s in steps] == ["tool_call", "tool_call", "final"]
    assert all(s["parentSpanId"] == run["spanId"] for s in steps)
    chats = _named(ours, "chat ")
    assert len(chats) == 3 and [by_id[c["parentSpanId"]] for c in chats] == steps
    definitions = attributes(chats[0])["gen_ai.tool.definitions"]
    assert "lookup_order" in definitions and "calculate_refund" in definitions and "order_id" in definitions
    tools = _named(ours, "execute_tool")
    assert [t["name"] for t in tools] == ["execute_tool lookup_order", "execute_tool calculate_refund"]
    for tool, step, call_id in zip(tools, steps, ["call_0_0", "call_1_0"]):
        a = attributes(tool)
        assert tool["parentSpanId"] == step["spanId"]
        assert a["gen_ai.tool.call.id"] == call_id and a["agent_trace.tool.source"] == "explicit"
    assert attributes(tools[0])["agent_trace.tool.outcome"] == "empty_result"
    # the tool span lies inside its step, after the chat that asked for it
    assert int(tools[0]["startTimeUnixNano"]) >= int(chats[0]["endTimeUnixNano"])
    assert int(tools[0]["endTimeUnixNano"]) <= int(steps[1]["startTimeUnixNano"])
    report = analyze(traces)
    [found] = report["runs"]
    assert found["status"] == "failed" and found["agent"] == "support"
    assert "MissingRefundAmount" in found["critical"]["description"]
    _assert_origin_lookup(found)


def test_tool_exception_is_recorded_where_the_tool_ran(tmp_path):
    """The SDK turns a tool's exception into text for the model; the tool span still fails with
    the exception itself."""
    proc, traces = run_instrumented(PRELUDE + """
BROKEN = True
result = Runner.run_sync(support, "broken lookup for order A1001")
print(result.final_output)
""", tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [tool] = _named(_ours(traces), "execute_tool")
    a = attributes(tool)
    assert a["agent_trace.tool.outcome"] == "exception" and a["agent_trace.error.type"] == "tool_exception"
    assert tool["status"]["code"] == 2
    [event] = [e for e in tool["events"] if e["name"] == "exception"]
    event_attributes = {x["key"]: next(iter(x["value"].values())) for x in event["attributes"]}
    assert event_attributes["exception.type"] == "ConnectionError"
    assert "unreachable" in event_attributes["exception.message"]


def test_async_concurrent_runs_never_mix(tmp_path):
    """Runner.run in concurrent asyncio tasks and in a thread pool: each run holds its own steps
    and tools, each tool the call id of its own run's chat."""
    proc, traces = run_instrumented(PRELUDE + """
from concurrent.futures import ThreadPoolExecutor
TICKETS = [support_agent.TICKETS[0], support_agent.TICKETS[1]] * 3

async def main():
    return await asyncio.gather(*(Runner.run(support, t) for t in TICKETS), return_exceptions=True)
results = asyncio.run(main())
assert all(not isinstance(r, BaseException) for r in results), results

def in_thread(ticket):   # an async client belongs to one event loop: each thread's loop has its own
    own = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    agent = support.clone(model=OpenAIResponsesModel(model="gpt-4o-mini", openai_client=own))
    return Runner.run_sync(agent, ticket).final_output
with ThreadPoolExecutor(4) as pool:
    list(pool.map(in_thread, TICKETS))
""", tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ours = _ours(traces)
    runs = _named(ours, "invoke_agent")
    assert len(runs) == 12
    by_id = {s["spanId"]: s for s in ours}

    def run_of(span):
        while span["spanId"] not in {r["spanId"] for r in runs}:
            span = by_id[span["parentSpanId"]]
        return span["spanId"]

    steps = _named(ours, "agent_step")
    for run in runs:
        mine = [s for s in steps if s["parentSpanId"] == run["spanId"]]
        assert sorted(int(attributes(s)["agent_trace.step.index"]) for s in mine) == [0, 1, 2]
    tools = _named(ours, "execute_tool")
    assert len(tools) == 24
    for tool in tools:
        step = by_id[tool["parentSpanId"]]
        assert run_of(tool) == step["parentSpanId"]
        assert attributes(tool)["gen_ai.tool.call.id"] == f"call_{attributes(step)['agent_trace.step.index']}_0"
    report = analyze(traces)
    suspects = [r for r in report["runs"] if r["status"] == "suspect"]
    assert len(suspects) == 6 and all(r["origin"]["tool"] == "lookup_order" for r in suspects)


def test_chat_completions_model_with_openai_v2_beside_ours(tmp_path):
    """`OpenAIChatCompletionsModel`: one chat span of ours per model call; the official openai-v2
    instrumentation's span nests under it; tools are recorded once (no inferred duplicate)."""
    proc, traces = run_instrumented(PRELUDE + """
support.model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
result = Runner.run_sync(support, TICKET)
support_agent.check_reply(TICKET, result.final_output)
""", tmp_path, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="span_only")
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-2000:]
    spans = spans_of(traces)
    by_id = {s["spanId"]: (scope, s) for scope, s in spans}
    ours = [s for scope, s in spans if scope == "otel_agent_trace"]
    theirs = [s for scope, s in spans if scope != "otel_agent_trace" and s["name"].startswith("chat")]
    assert len(_named(ours, "chat ")) == 3
    assert len(theirs) == 3, "the official instrumentation must be active here"
    for span in theirs:
        scope, parent = by_id[span["parentSpanId"]]
        assert scope == "otel_agent_trace" and parent["name"].startswith("chat")
    tools = _named(ours, "execute_tool")
    assert [attributes(t)["agent_trace.tool.source"] for t in tools] == ["explicit", "explicit"]
    [found] = analyze(traces)["runs"]
    _assert_origin_lookup(found)


def test_handoff_is_a_sub_run_and_the_origin_is_found_in_the_sub_agent(tmp_path):
    """triage hands off to refunds, whose lookup_order silently returns []: the refunds run nests
    under triage's step with a `delegated_to` link; the analyzer's chain crosses the handoff."""
    proc, traces = run_instrumented(PRELUDE + """
refunds = Agent(name="refunds", instructions=support_agent.SYSTEM, tools=[lookup_order, calculate_refund],
                model="gpt-4o-mini")
triage = Agent(name="triage", instructions="Route the ticket.", handoffs=[refunds], model="gpt-4o-mini")
result = Runner.run_sync(triage, "triage " + TICKET)
support_agent.check_reply(TICKET, result.final_output)
""", tmp_path)
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-2000:]
    ours = _ours(traces)
    by_id = {s["spanId"]: s for s in ours}
    triage, refunds = _named(ours, "invoke_agent")
    assert (triage["name"], refunds["name"]) == ("invoke_agent triage", "invoke_agent refunds")
    handing_step = by_id[refunds["parentSpanId"]]
    assert handing_step["name"] == "agent_step 0" and handing_step["parentSpanId"] == triage["spanId"]
    [link] = refunds["links"]
    assert link["spanId"] == handing_step["spanId"]
    assert attributes(link)["agent_trace.link.relation"] == "delegated_to"
    transfer = [s for s in ours if s["name"] == "execute_tool transfer_to_refunds"]
    assert len(transfer) == 1 and transfer[0]["parentSpanId"] == handing_step["spanId"]
    assert attributes(triage)["agent_trace.lifecycle.phase"] == "critical"

    report = analyze(traces)
    failed = [r for r in report["runs"] if r["status"] == "failed"]
    assert [r["agent"] for r in failed] == ["triage"]
    _assert_origin_lookup(failed[0])
    lookup = [s for s in ours if s["name"] == "execute_tool lookup_order"][0]
    assert failed[0]["origin"]["span_id"] == lookup["spanId"]
    assert run_root(by_id, lookup) == refunds["spanId"]   # the origin is inside the sub-agent
    chain = [(h["span_name"], h["relation"]) for h in failed[0]["chain"]]
    # the chain crosses the handoff once: from the sub-agent's last hop to triage's handing step
    [crossing] = [i for i, (_, relation) in enumerate(chain) if relation == "delegated_to"]
    assert run_root(by_id, by_id[failed[0]["chain"][crossing]["span_id"]]) == refunds["spanId"]
    assert failed[0]["chain"][crossing + 1]["span_id"] == handing_step["spanId"]
    assert chain[0][0] == "execute_tool lookup_order" and chain[-1][0] == "invoke_agent triage"


def run_root(by_id, span):
    while not span["name"].startswith("invoke_agent"):
        span = by_id[span["parentSpanId"]]
    return span["spanId"]


def test_input_guardrail_trip_fails_the_run(tmp_path):
    """A tripped input guardrail: the run fails, phase critical, with the SDK's tripwire exception,
    and names the guardrail."""
    proc, traces = run_instrumented(PRELUDE + """
@input_guardrail
def no_contact_details(ctx, agent, text):
    return GuardrailFunctionOutput(output_info="contact details", tripwire_triggered="@" in str(text))

support.input_guardrails = [no_contact_details]
try:
    Runner.run_sync(support, TICKET)
except InputGuardrailTripwireTriggered:
    print("tripped")
""", tmp_path)
    assert proc.returncode == 0 and "tripped" in proc.stdout, proc.stderr[-2000:]
    [run] = _named(_ours(traces), "invoke_agent")
    a = attributes(run)
    assert a["agent_trace.lifecycle.phase"] == "critical" and run["status"]["code"] == 2
    assert a["error.type"] == "InputGuardrailTripwireTriggered"
    [event] = [e for e in run["events"] if e["name"] == "guardrail_tripped"]
    assert attributes(event)["agent_trace.guardrail.name"] == "no_contact_details"
    [found] = analyze(traces)["runs"]
    assert found["status"] == "failed" and "InputGuardrailTripwireTriggered" in found["critical"]["description"]


def test_openai_own_trace_exporter_keeps_working(tmp_path):
    """Ours is added beside the SDK's processors, never replacing them: OpenAI's own exporter
    (pointed at a loopback ingest endpoint here) still receives the agent and function spans."""
    proc, traces = run_instrumented(PRELUDE + """
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from agents import set_tracing_export_api_key
from agents.tracing.processors import default_exporter, default_processor

received = []
class Ingest(BaseHTTPRequestHandler):
    def do_POST(self):
        received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200); self.end_headers()
    def log_message(self, *args):
        pass
ingest = ThreadingHTTPServer(("127.0.0.1", 0), Ingest)
threading.Thread(target=ingest.serve_forever, daemon=True).start()
set_tracing_export_api_key("test")
default_exporter().endpoint = f"http://127.0.0.1:{ingest.server_address[1]}/v1/traces/ingest"
result = Runner.run_sync(support, support_agent.TICKETS[0])
default_processor().force_flush()
kinds = sorted({item.get("span_data", {}).get("type", item.get("object")) for batch in received for item in batch["data"]})
print("EXPORTED", kinds)
""", tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    exported = next(line for line in proc.stdout.splitlines() if line.startswith("EXPORTED"))
    assert "'agent'" in exported and "'function'" in exported, exported
    ours = _ours(traces)
    assert len(_named(ours, "invoke_agent")) == 1 and len(_named(ours, "execute_tool")) == 2


def test_streamed_run(tmp_path):
    """Runner.run_streamed (the run loop in its own task): the same run, steps and tools."""
    proc, traces = run_instrumented(PRELUDE + """
async def main():
    result = Runner.run_streamed(support, TICKET)
    async for _ in result.stream_events():
        pass
    return result.final_output
support_agent.check_reply(TICKET, asyncio.run(main()))
""", tmp_path)
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-2000:]
    ours = _ours(traces)
    [run] = _named(ours, "invoke_agent")
    assert run["name"] == "invoke_agent support"
    assert len(_named(ours, "agent_step")) == 3 and len(_named(ours, "chat ")) == 3
    tools = _named(ours, "execute_tool")
    assert [attributes(t)["gen_ai.tool.call.id"] for t in tools] == ["call_0_0", "call_1_0"]
    [found] = analyze(traces)["runs"]
    assert found["status"] == "failed"
    _assert_origin_lookup(found)


def test_agent_as_tool_is_a_sub_run_under_its_tool_span(tmp_path):
    """`Agent.as_tool`: the desk's run nests under the supervisor's tool span that ran it, linked
    `delegated_to`; the supervisor's run fails with the program's exception, the origin is found
    in the desk's run."""
    proc, traces = run_instrumented(PRELUDE.replace(
        'server = ScriptedOpenAIServer(SCRIPTS)',
        'SCRIPTS["desk " + TICKET] = [{"tool_calls": [_call("refund_desk", input=TICKET)]},'
        ' {"content": "The desk found nothing to refund."}]\nserver = ScriptedOpenAIServer(SCRIPTS)') + """
desk = support.as_tool(tool_name="refund_desk", tool_description="The refund desk")
supervisor = Agent(name="supervisor", instructions="Ask the desk.", tools=[desk], model="gpt-4o-mini")
result = Runner.run_sync(supervisor, "desk " + TICKET)
support_agent.check_reply(TICKET, result.final_output)
""", tmp_path)
    assert proc.returncode == 1 and "MissingRefundAmount" in proc.stderr, proc.stderr[-2000:]
    ours = _ours(traces)
    by_id = {s["spanId"]: s for s in ours}
    supervisor, sub = _named(ours, "invoke_agent")
    assert (supervisor["name"], sub["name"]) == ("invoke_agent supervisor", "invoke_agent support")
    tool = by_id[sub["parentSpanId"]]
    assert tool["name"] == "execute_tool refund_desk" and run_root(by_id, tool) == supervisor["spanId"]
    [link] = sub["links"]
    assert link["spanId"] == tool["spanId"] and attributes(link)["agent_trace.link.relation"] == "delegated_to"
    report = analyze(traces)
    failed = [r for r in report["runs"] if r["status"] == "failed"]
    assert [r["agent"] for r in failed] == ["supervisor"]
    lookup = [s for s in ours if s["name"] == "execute_tool lookup_order"][0]
    assert failed[0]["origin"]["span_id"] == lookup["spanId"]


def test_tool_input_guardrail_trips_are_events_on_the_run(tmp_path):
    """A function tool's input guardrail: rejecting the call (the model reads the rejection) is a
    `guardrail_tripped` event on the run naming the guardrail and the tool; raising stops the run,
    which fails with the SDK's `ToolInputGuardrailTripwireTriggered`."""
    proc, traces = run_instrumented(PRELUDE + """
from agents import ToolGuardrailFunctionOutput, ToolInputGuardrailTripwireTriggered, tool_input_guardrail

@tool_input_guardrail
def no_malformed_ids(data):
    if "O" in data.context.tool_arguments:
        return ToolGuardrailFunctionOutput.reject_content("malformed order id", output_info="O in id")
    return ToolGuardrailFunctionOutput.allow()

@tool_input_guardrail
def stop_malformed_ids(data):
    return ToolGuardrailFunctionOutput.raise_exception(output_info="O in id")

lookup_order.tool_input_guardrails = [no_malformed_ids]
print("REPLY", Runner.run_sync(support, TICKET).final_output)
lookup_order.tool_input_guardrails = [stop_malformed_ids]
try:
    Runner.run_sync(support, TICKET)
except ToolInputGuardrailTripwireTriggered:
    print("stopped")
""", tmp_path)
    assert proc.returncode == 0 and "stopped" in proc.stdout, proc.stderr[-2000:]
    rejected, stopped = _named(_ours(traces), "invoke_agent")
    for run, behavior in ((rejected, "reject_content"), (stopped, "raise_exception")):
        [event] = [e for e in run["events"] if e["name"] == "guardrail_tripped"]
        a = attributes(event)
        assert (a["agent_trace.guardrail.kind"], a["agent_trace.guardrail.behavior"], a["gen_ai.tool.name"]) == \
            ("tool_input", behavior, "lookup_order")
    assert attributes(stopped)["error.type"] == "ToolInputGuardrailTripwireTriggered"
    assert "agent_trace.lifecycle.phase" not in attributes(rejected) or \
        attributes(rejected)["agent_trace.lifecycle.phase"] != "critical"


def test_tool_output_guardrail_trips_are_events_on_the_run(tmp_path):
    """A function tool's output guardrail: rejecting the empty lookup (the model reads the
    rejection, not the result) is a `guardrail_tripped` event on the run naming the guardrail and
    the tool, and the tool span still records what the tool returned; raising stops the run, which
    fails with the SDK's `ToolOutputGuardrailTripwireTriggered`, its origin the lookup it ended on."""
    proc, traces = run_instrumented(PRELUDE + """
from agents import ToolGuardrailFunctionOutput, ToolOutputGuardrailTripwireTriggered, tool_output_guardrail

@tool_output_guardrail
def no_empty_lookups(data):
    if json.loads(data.output) == []:
        return ToolGuardrailFunctionOutput.reject_content("no such order: ask the customer", output_info="[]")
    return ToolGuardrailFunctionOutput.allow()

@tool_output_guardrail
def stop_empty_lookups(data):
    if json.loads(data.output) == []:
        return ToolGuardrailFunctionOutput.raise_exception(output_info="[]")
    return ToolGuardrailFunctionOutput.allow()

lookup_order.tool_output_guardrails = [no_empty_lookups]
print("REPLY", Runner.run_sync(support, TICKET).final_output)
lookup_order.tool_output_guardrails = [stop_empty_lookups]
try:
    Runner.run_sync(support, TICKET)
except ToolOutputGuardrailTripwireTriggered:
    print("stopped")
""", tmp_path)
    assert proc.returncode == 0 and "stopped" in proc.stdout, proc.stderr[-2000:]
    ours = _ours(traces)
    rejected, stopped = _named(ours, "invoke_agent")
    for run, behavior, guardrail in ((rejected, "reject_content", "no_empty_lookups"),
                                     (stopped, "raise_exception", "stop_empty_lookups")):
        [event] = [e for e in run["events"] if e["name"] == "guardrail_tripped"]
        a = attributes(event)
        assert (a["agent_trace.guardrail.kind"], a["agent_trace.guardrail.behavior"], a["gen_ai.tool.name"],
                a["agent_trace.guardrail.name"]) == ("tool_output", behavior, "lookup_order", guardrail)
    lookups = [s for s in ours if s["name"] == "execute_tool lookup_order"]
    assert [s["traceId"] for s in lookups] == [rejected["traceId"], stopped["traceId"]]
    assert {attributes(s)["gen_ai.tool.call.result"] for s in lookups} == {"[]"}  # what the tool returned
    assert attributes(stopped)["error.type"] == "ToolOutputGuardrailTripwireTriggered"
    assert len(_named([s for s in ours if s["traceId"] == stopped["traceId"]], "agent_step")) == 1  # stopped there
    assert len(_named([s for s in ours if s["traceId"] == rejected["traceId"]], "agent_step")) == 3  # went on
    runs = {r["trace_id"]: r for r in analyze(traces)["runs"]}
    assert runs[stopped["traceId"]]["status"] == "failed"
    assert "ToolOutputGuardrailTripwireTriggered" in runs[stopped["traceId"]]["critical"]["description"]
    _assert_origin_lookup(runs[stopped["traceId"]])  # the run ended on the lookup's result: its origin
    assert [h["phase"] for h in runs[stopped["traceId"]]["chain"]] == ["origin", "critical"]
    _assert_origin_lookup(runs[rejected["traceId"]])  # the rejected run answered on the empty lookup


def test_hosted_tools_are_execute_tool_spans(tmp_path):
    """Hosted tools (the Responses API's web search and code interpreter, which OpenAI runs, not
    the SDK): each item the model's response reports is an `execute_tool` span in the step that
    asked for it, with its call id, arguments and outcome; a failed one fails its span."""
    proc, traces = run_instrumented(PRELUDE + """
from agents import CodeInterpreterTool, WebSearchTool
output = [
    {"type": "web_search_call", "id": "ws_1", "status": "completed",
     "action": {"type": "search", "query": "carrier delays DHL"}},
    {"type": "code_interpreter_call", "id": "ci_1", "status": "failed", "code": "print(12.5 * 2",
     "container_id": "cntr_1", "outputs": None},
    {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
     "content": [{"type": "output_text", "text": "DHL reports delays of two days.", "annotations": []}]},
]
body = {"id": "resp_hosted", "object": "response", "created_at": 0, "status": "completed", "model": "gpt-4o-mini",
        "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        "usage": {"input_tokens": 20, "output_tokens": 9, "total_tokens": 29,
                  "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}
hosted = ScriptedOpenAIServer({"*": [{"body": body}]}).start()
model = OpenAIResponsesModel(model="gpt-4o-mini",
                             openai_client=openai.AsyncOpenAI(base_url=hosted.base_url, api_key="test", max_retries=0))
researcher = Agent(name="researcher", instructions="Answer with sources.", model=model,
                   tools=[WebSearchTool(), CodeInterpreterTool(tool_config={"type": "code_interpreter",
                                                                           "container": {"type": "auto"}})])
print("REPLY", Runner.run_sync(researcher, "any carrier delays?").final_output)
""", tmp_path)
    assert proc.returncode == 0 and "REPLY DHL reports delays of two days." in proc.stdout, proc.stderr[-2000:]
    ours = _ours(traces)
    [run] = _named(ours, "invoke_agent")
    [step] = _named(ours, "agent_step")
    assert attributes(run)["gen_ai.agent.name"] == "researcher"
    tools = {s["name"]: s for s in ours if s["name"].startswith("execute_tool")}
    assert set(tools) == {"execute_tool web_search", "execute_tool code_interpreter"}
    assert all(t["parentSpanId"] == step["spanId"] for t in tools.values())
    search, code = attributes(tools["execute_tool web_search"]), attributes(tools["execute_tool code_interpreter"])
    assert (search["gen_ai.tool.call.id"], search["agent_trace.tool.outcome"]) == ("ws_1", "ok")
    assert json.loads(search["gen_ai.tool.call.arguments"])["action"]["query"] == "carrier delays DHL"
    assert (code["gen_ai.tool.call.id"], code["agent_trace.tool.outcome"]) == ("ci_1", "error_result")


def test_mcp_server_tools_are_one_span_each_with_the_origin(tmp_path):
    """An agent whose tools come from an MCP server (`MCPServerStdio` running examples/mcp_server.py):
    each call is one `execute_tool` span in the step that asked (the SDK's function-tool path and
    the MCP session's `call_tool` do not both record it), with the model's call id, and the empty
    lookup is the origin of the failed run."""
    proc, traces = run_instrumented(PRELUDE + """
import mcp_agent
from agents.mcp import MCPServerStdio

async def main():
    params = mcp_agent.server_parameters()
    async with MCPServerStdio({"command": params.command, "args": params.args, "env": params.env},
                              name="orders") as orders:
        desk = Agent(name="support", instructions=support_agent.SYSTEM, mcp_servers=[orders], model="gpt-4o-mini")
        result = await Runner.run(desk, TICKET)
        support_agent.check_reply(TICKET, result.final_output)

asyncio.run(main())
""", tmp_path)
    assert proc.returncode != 0 and "MissingRefundAmount" in proc.stderr, proc.stderr[-2000:]
    ours = _ours(traces)
    [run] = _named(ours, "invoke_agent")
    steps = _named(ours, "agent_step")
    tools = _named(ours, "execute_tool")
    assert [t["name"] for t in tools] == ["execute_tool lookup_order", "execute_tool calculate_refund"]
    assert all(t["parentSpanId"] in {s["spanId"] for s in steps} for t in tools)
    assert all(attributes(t).get("gen_ai.tool.call.id") for t in tools)
    [analysed] = analyze(traces)["runs"]
    assert analysed["status"] == "failed"
    _assert_origin_lookup(analysed)

