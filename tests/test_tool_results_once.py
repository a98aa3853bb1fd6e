"""A tool result is written once (issue 31, trace volume): on its `execute_tool` span.

The step whose context shows the result first names that span in `agent_trace.context.new_messages`
(`content_from`) instead of writing the text again. Every reader sees the content where it was:
the analyzer puts it back when it groups a run, so a trace of the new shape reads exactly as the
same trace written the old way (each result inline), byte for byte in `new_messages`, and the
analyzer's report, `replay`'s recording and `minimize`'s trajectory are the same.

Through the real `openai` client against the scripted server, the real SDK and our file exporter
(`opentelemetry-instrument`, zero code change: inferred tool spans), and in-process with `@tool`
(explicit tool spans, whose recorded result may differ from the text the agent sends).
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import support_agent
from client_helpers import instrumented_run, spans_of
from span_helpers import attrs, hexid

from otel_agent_trace import tool
from otel_agent_trace.minimizer.trajectory import select_run
from otel_agent_trace.semconv import CONTEXT_NEW_MESSAGES, GEN_AI_TOOL_CALL_RESULT, NEW_MESSAGE_CONTENT_FROM
from otel_agent_trace.replay.recording import load

BIN = Path(sys.executable).parent


def _items(span: dict[str, Any]) -> list[dict[str, Any]]:
    return json.loads(span["attrs"].get(CONTEXT_NEW_MESSAGES) or "[]")


def _old_shape(path: Path, to: Path) -> None:
    """The same file as the recorder wrote it before: every named result inline in its step."""
    results = {s["spanId"]: s["attrs"][GEN_AI_TOOL_CALL_RESULT] for s in spans_of(path)
               if GEN_AI_TOOL_CALL_RESULT in s["attrs"]}
    lines = []
    for line in path.read_text().splitlines():
        batch = json.loads(line)
        for resource in batch["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    for attribute in span.get("attributes", ()):
                        if attribute["key"] != CONTEXT_NEW_MESSAGES:
                            continue
                        items = json.loads(attribute["value"]["stringValue"])
                        for item in items:
                            source = item.pop(NEW_MESSAGE_CONTENT_FROM, None)
                            if source is not None:
                                message = item["message"]
                                item["message"] = {"role": message.pop("role"), "content": results[source], **message}
                        attribute["value"]["stringValue"] = orjson.dumps(items).decode()
        lines.append(json.dumps(batch))
    to.write_text("\n".join(lines) + "\n")


def _analyze(path: Path) -> dict[str, Any]:
    done = subprocess.run([str(BIN / "otel-agent-trace"), "analyze", "--format", "json", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.replace(str(path), "FILE"))


def test_inferred_results_are_written_once_and_read_back_everywhere(tmp_path):
    path, report = instrumented_run(tmp_path, "support_agent")
    spans = spans_of(path)
    tools = {s["spanId"]: s for s in spans if s["name"].startswith("execute_tool")}
    named = [(s, item) for s in spans if s["name"].startswith("agent_step") for item in _items(s)
             if item["message"]["role"] == "tool"]
    # 4 tickets, every result inferred from the request that carried it (the timed-out call's error
    # text too): each named by its span
    assert len(named) == len(tools) == 11
    for step, item in named:
        source = tools[item[NEW_MESSAGE_CONTENT_FROM]]
        assert "content" not in item["message"]
        assert item["message"]["tool_call_id"] == source["attrs"]["gen_ai.tool.call.id"]
        assert source["traceId"] == step["traceId"] and source["attrs"][GEN_AI_TOOL_CALL_RESULT]
    # the file holds each result once: as many times as tool spans returned that text (a loop's)
    raw = path.read_text()
    held = collections.Counter(s["attrs"][GEN_AI_TOOL_CALL_RESULT] for s in tools.values())
    long = [text for text in held if len(text) > 20]
    assert len(long) >= 5
    for text in long:
        assert raw.count(json.dumps(text)[1:-1]) == held[text], text

    old = tmp_path / "old-shape.jsonl"
    _old_shape(path, old)
    assert old.stat().st_size > path.stat().st_size
    # the analyzer reads both files alike: its report, and every step's new_messages byte for byte
    assert _analyze(path) == _analyze(old)
    assert report["runs"] and {r["status"] for r in report["runs"]} == {"ok", "failed"}
    old_steps = {s["spanId"]: s["attrs"].get(CONTEXT_NEW_MESSAGES) for s in spans_of(old)}
    for trace_id in sorted({s["traceId"] for s in spans}):
        run, _ = select_run(str(path), trace_id)
        assert run.steps and all(s.attributes.get(CONTEXT_NEW_MESSAGES) == old_steps[s.span_id] for s in run.steps)
        # replay's recording: every message of the context, the tool results with their text
        recording, before = load(str(path), trace_id), load(str(old), trace_id)
        assert recording.messages == before.messages
        assert [m.content for m in recording.messages.values() if m.role == "tool"]
        assert all(m.content for m in recording.messages.values() if m.role == "tool")


def _tool_loop(client: Any, lookup: Any) -> None:
    """The healthy refund ticket, its tool results sent as the JSON text `json.dumps` makes."""
    messages: list[Any] = [{"role": "system", "content": support_agent.SYSTEM},
                           {"role": "user", "content": support_agent.TICKETS[0]}]
    for _ in range(support_agent.MAX_TURNS):
        message = client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                                 tools=support_agent.TOOL_SCHEMAS).choices[0].message
        if not message.tool_calls:
            return
        messages.append(message)
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)
            result = lookup(call.function.name, arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)
                             if not isinstance(result, str) else result})


def test_an_explicit_tool_result_is_named_only_when_its_text_is_the_message(instrument, client):
    """`@tool` records the function's return value; the agent may send other text (here `json.dumps`
    with spaces where the span holds compact JSON): then the message keeps its own content."""

    def as_text(name: str) -> Any:
        return tool(name=name)(lambda **arguments: json.dumps(support_agent.TOOLS[name](**arguments)))

    def as_object(name: str) -> Any:
        return tool(name=name)(lambda **arguments: support_agent.TOOLS[name](**arguments))

    for wrap, same_text in ((as_text, True), (as_object, False)):
        traced = instrument()
        tools_ = {name: wrap(name) for name in support_agent.TOOLS}
        _tool_loop(client, lambda name, arguments: tools_[name](**arguments))
        tools = traced.named("execute_tool")
        assert len(tools) == 2 and all(attrs(t)["agent_trace.tool.source"] == "explicit" for t in tools)
        items = [i for s in traced.named("agent_step") for i in json.loads(attrs(s)[CONTEXT_NEW_MESSAGES])
                 if i["message"]["role"] == "tool"]
        assert len(items) == 2
        if same_text:
            assert [i[NEW_MESSAGE_CONTENT_FROM] for i in items] == [hexid(t) for t in tools]
            assert all("content" not in i["message"] for i in items)
        else:
            assert all(NEW_MESSAGE_CONTENT_FROM not in i for i in items)
            assert [json.loads(i["message"]["content"]) for i in items] == \
                   [json.loads(attrs(t)[GEN_AI_TOOL_CALL_RESULT]) for t in tools]


def test_a_clipped_result_stays_in_the_message(instrument, client):
    """A result cut to `max_attribute_bytes` on its span is not the message's text: nothing is named."""
    traced = instrument(max_attribute_bytes=80)
    _tool_loop(client, lambda name, arguments: json.dumps(support_agent.TOOLS[name](**arguments)) + " " * 100)
    tools = traced.named("execute_tool")
    assert tools and all(attrs(t)[GEN_AI_TOOL_CALL_RESULT].endswith("...[truncated]") for t in tools)
    assert not any(NEW_MESSAGE_CONTENT_FROM in attrs(s).get(CONTEXT_NEW_MESSAGES, "") for s in traced.named("agent_step"))
