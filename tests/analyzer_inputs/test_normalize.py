"""Foreign conventions normalized into our runs, steps, tools and dependencies, so the analysis
finds the origin on them: OpenInference (the TRAIL GAIA corpus of real smolagents traces, and a
hand-made LangChain-like trace), OpenLLMetry and the official GenAI semantic conventions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from inputs_support import line, span

from otel_agent_trace.analyzer.analysis import analyze
from otel_agent_trace.analyzer.normalize import normalize_trace
from otel_agent_trace.analyzer.readers.otlp_json import read_file
from otel_agent_trace.analyzer.runs import group_runs
from otel_agent_trace.analyzer.spans import InputReport

TRAIL = Path(__file__).resolve().parents[2] / "../shared/benchmarks/trail-gaia/traces.jsonl.gz"
T = "ab" * 16


def test_trail_gaia_corpus(tmp_path):
    if not TRAIL.exists():
        pytest.skip("shared/benchmarks/trail-gaia is not beside the repository")
    analysis = analyze([str(TRAIL)])
    assert analysis.bad_lines == 0 and analysis.inputs[0].spans == 2944
    assert analysis.normalized == {"openinference": 113}
    runs = [f.run for f in analysis.findings]
    assert len({r.trace_id for r in runs}) == 113
    agents = [r for r in runs if r.root.attr("openinference.span.kind") == "AGENT"]
    assert len(agents) == 162 and Counter(r.agent for r in agents) == {"CodeAgent.run": 113, "ToolCallingAgent.run": 49}
    steps = [s for r in runs for s in r.steps]
    # 1230 LLM spans, of which 113 are the GAIA harness's trailing FINAL ANSWER call: no run, no step
    assert len(steps) == 1117 and all(s.attr("openinference.span.kind") == "LLM" for s in steps)
    assert len(runs) == 162
    tools = [t for r in runs for t in r.tools]
    assert len(tools) == 471
    outcomes = Counter(t.attr("agent_trace.tool.outcome") for t in tools)
    failed_status = sum(1 for t in tools if t.status_code == 2)
    assert failed_status == 135 and outcomes["exception"] + outcomes["timeout"] == 135
    assert all(t.attr("agent_trace.depends_on.relations", [None])[0] == "decided_by" for t in tools)
    consumed = {d for r in runs for s in r.steps for d, rel in zip(s.attr("agent_trace.depends_on", []),
                                                                   s.attr("agent_trace.depends_on.relations", []))
                if rel == "consumes"}
    assert len(consumed) > 300  # tool results found again in later contexts (ids or text)
    page_down = [f for f in analysis.findings if f.origin is not None and f.origin.attr("gen_ai.tool.name") == "page_down"]
    assert page_down and page_down[0].origin.attr("agent_trace.tool.outcome") == "exception"


def _run(tmp_path, spans):
    path = tmp_path / "t.jsonl"
    path.write_text(line(spans))
    analysis = analyze([str(path)])
    assert analysis.bad_lines == 0
    return analysis


def test_openllmetry_tool_call_ids_and_message_flow(tmp_path):
    spans = [
        span(T, "0000000000000001", None, "support.workflow", 0, {"traceloop.span.kind": "workflow",
                                                                  "traceloop.entity.name": "support"}),
        span(T, "0000000000000002", "0000000000000001", "refund_agent.agent", 1,
             {"traceloop.span.kind": "agent", "traceloop.entity.name": "refund_agent"}, status=2),
        span(T, "0000000000000003", "0000000000000002", "openai.chat", 2, {
            "llm.request.type": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "refund order A-1", "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.tool_calls.0.id": "call_1", "gen_ai.completion.0.tool_calls.0.name": "lookup_order",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"order_id": "A 1"}'}),
        span(T, "0000000000000004", "0000000000000002", "lookup_order.tool", 3, {
            "traceloop.span.kind": "tool", "traceloop.entity.name": "lookup_order",
            "traceloop.entity.input": '{"inputs": {"order_id": "A 1"}}', "traceloop.entity.output": '{"outputs": []}'}),
        span(T, "0000000000000005", "0000000000000002", "openai.chat", 4, {
            "llm.request.type": "chat", "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "refund order A-1",
            "gen_ai.prompt.1.role": "tool", "gen_ai.prompt.1.tool_call_id": "call_1", "gen_ai.prompt.1.content": "[]",
            "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "No such order."}),
    ]
    analysis = _run(tmp_path, spans)
    assert analysis.normalized == {"openllmetry": 1}
    (finding,) = analysis.findings
    assert finding.run.agent == "refund_agent" and len(finding.run.steps) == 2
    assert finding.origin.span_id == "0000000000000004"
    assert finding.origin.attr("agent_trace.tool.outcome") == "empty_result"
    assert finding.origin.attr("gen_ai.tool.call.id") == "call_1"
    assert [(h.span.span_id, h.relation) for h in finding.chain] == [
        ("0000000000000004", "consumes"), ("0000000000000005", "result_of"), ("0000000000000002", None)]


def test_genai_semconv_messages(tmp_path):
    out1 = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "id": "c9", "name": "get_weather",
                                                        "arguments": {"city": "Paris"}}]}])
    in2 = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "weather?"}]},
                      {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c9",
                                                  "response": '{"error": "quota exceeded"}'}]}])
    spans = [
        span(T, "00000000000000a1", None, "invoke_agent weather", 0, {"gen_ai.operation.name": "invoke_agent",
                                                                       "gen_ai.agent.name": "weather"}, status=2),
        span(T, "00000000000000a2", "00000000000000a1", "chat gpt-4o", 1, {"gen_ai.operation.name": "chat",
                                                                            "gen_ai.output.messages": out1}),
        span(T, "00000000000000a3", "00000000000000a1", "execute_tool get_weather", 2, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "c9",
            "gen_ai.tool.call.result": '{"error": "quota exceeded"}'}),
        span(T, "00000000000000a4", "00000000000000a1", "chat gpt-4o", 3, {"gen_ai.operation.name": "chat",
                                                                            "gen_ai.input.messages": in2}),
    ]
    analysis = _run(tmp_path, spans)
    assert analysis.normalized == {"genai": 1}
    (finding,) = analysis.findings
    assert [s.span_id for s in finding.run.steps] == ["00000000000000a2", "00000000000000a4"]
    assert finding.origin.span_id == "00000000000000a3" and finding.origin_error_type == "tool_error_result"
    tool = finding.run.spans["00000000000000a3"]
    assert tool.attr("agent_trace.depends_on") == ["00000000000000a2"]


def test_openinference_without_agent_span_exception_event(tmp_path):
    exception = [{"name": "exception", "timeUnixNano": "1", "attributes": [
        {"key": "exception.type", "value": {"stringValue": "ReadTimeout"}},
        {"key": "exception.message", "value": {"stringValue": "timed out"}}]}]
    spans = [
        span(T, "00000000000000b1", None, "RunnableSequence", 0, {"openinference.span.kind": "CHAIN"}, status=2),
        span(T, "00000000000000b2", "00000000000000b1", "ChatOpenAI", 1, {
            "openinference.span.kind": "LLM", "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "t1",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "search"}),
        span(T, "00000000000000b3", "00000000000000b1", "search", 2, {"openinference.span.kind": "TOOL",
                                                                       "tool.name": "search"},
             status=2, events=exception),
        span(T, "00000000000000b4", "00000000000000b1", "ChatOpenAI", 3, {
            "openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "tool",
            "llm.input_messages.0.message.tool_call_id": "t1", "llm.input_messages.0.message.content": "timeout"}),
    ]
    analysis = _run(tmp_path, spans)
    (finding,) = analysis.findings
    assert finding.run.root.span_id == "00000000000000b1"  # the top-level span became the run
    assert finding.origin.span_id == "00000000000000b3" and finding.origin_error_type == "tool_timeout"
    assert finding.run.spans["00000000000000b4"].attr("agent_trace.depends_on") == ["00000000000000b3"]


def test_our_own_spans_pass_through_untouched(tmp_path):
    from inputs_support import failing_run

    path = tmp_path / "ours.jsonl"
    path.write_text(line(failing_run(0)))
    spans = list(read_file(str(path), InputReport(str(path))))
    before = [dict(s.attributes) for s in spans]
    assert normalize_trace(spans) is None
    assert [s.attributes for s in spans] == before
    assert len(group_runs(spans)[0].steps) == 2


def test_fleet_metrics_of_foreign_traces_count_tokens_and_capture(tmp_path):
    """Token usage of foreign conventions (strings too) reaches tokens per run, and tools decided by
    a normalized LLM step (its sibling, under a framework step span) count as captured."""
    from otel_agent_trace.analyzer.metrics import compute

    oi = [
        span(T, "00000000000000b1", None, "CodeAgent.run", 0, {"openinference.span.kind": "AGENT"}),
        span(T, "00000000000000b2", "00000000000000b1", "Step 1", 1, {"openinference.span.kind": "CHAIN"}),
        span(T, "00000000000000b3", "00000000000000b2", "LiteLLMModel.__call__", 2, {
            "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "llm.token_count.prompt": "1200",
            "llm.token_count.completion": 80, "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_7",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "web_search",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"query": "x"}'}),
        span(T, "00000000000000b4", "00000000000000b2", "SearchTool", 3, {
            "openinference.span.kind": "TOOL", "tool.name": "web_search", "input.value": '{"query": "x"}',
            "output.value": "result page"}),
        span(T, "00000000000000b5", "00000000000000b1", "LiteLLMModel.__call__", 4, {
            "openinference.span.kind": "LLM", "llm.token_count.prompt": "1500", "llm.token_count.completion": "20",
            "llm.token_count.total": "not a number", "output.value": "done"}),
    ]
    t2 = "cd" * 16
    ollm = [
        span(t2, "00000000000000c1", None, "agent.agent", 0, {"traceloop.span.kind": "agent",
                                                             "traceloop.entity.name": "agent"}),
        span(t2, "00000000000000c2", "00000000000000c1", "openai.chat", 1, {
            "llm.request.type": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.prompt_tokens": 300,
            "gen_ai.usage.completion_tokens": 7, "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "hi"}),
    ]
    path = tmp_path / "t.jsonl"
    path.write_text(line(oi) + line(ollm))
    analysis = analyze([str(path)])
    assert analysis.normalized == {"openinference": 1, "openllmetry": 1}
    metrics = compute(analysis.findings)
    assert metrics["trace_capture_rate"] == 1.0
    assert metrics["tokens_per_run"] == {"input": (1200 + 1500 + 300) / 2, "output": (80 + 20 + 7) / 2}


def test_replay_of_a_foreign_run_shows_context_decision_and_tools(tmp_path):
    """`show` on OpenInference spans: the model call is the step, its context delta is read from
    `llm.input_messages` (hashed as the recorder would), its decision from `llm.output_messages`,
    and its tools are its siblings linked by `decided_by`; a tool that raised shows what it said."""
    from otel_agent_trace.analyzer.show import render, steps_of

    def llm(sid, start, inputs, call):
        attrs = {"openinference.span.kind": "LLM", "llm.token_count.prompt": "900", "llm.token_count.completion": 12,
                 "output.value": json.dumps({"role": "assistant", "tool_calls": [call]}),
                 "llm.output_messages.0.message.role": "assistant",
                 "llm.output_messages.0.message.tool_calls.0.tool_call.id": call["id"],
                 "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": call["name"],
                 "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": call["arguments"]}
        for n, (role, content) in enumerate(inputs):
            attrs[f"llm.input_messages.{n}.message.role"] = role
            attrs[f"llm.input_messages.{n}.message.content"] = content
        return span(T, sid, f"{int(sid, 16) - 1:016x}", "LiteLLMModel.__call__", start, attrs)

    ask = [("system", "You can call page_down."), ("user", "Read the page.")]
    spans = [
        span(T, "00000000000000a0", None, "ToolCallingAgent.run", 0, {"openinference.span.kind": "AGENT"}),
        span(T, "00000000000000a1", "00000000000000a0", "Step 1", 1, {"openinference.span.kind": "CHAIN"}),
        llm("00000000000000a2", 2, ask, {"id": "call_1", "name": "page_down", "arguments": '{"x": 1}'}),
        span(T, "00000000000000a3", "00000000000000a1", "PageDownTool", 3, {
            "openinference.span.kind": "TOOL", "tool.name": "page_down", "input.value": '{"x": 1}'}, status=2,
            events=[{"name": "exception", "timeUnixNano": "1", "attributes": [
                {"key": "exception.type", "value": {"stringValue": "TypeError"}},
                {"key": "exception.message", "value": {"stringValue": "unexpected keyword argument 'x'"}}]}]),
        span(T, "00000000000000a4", "00000000000000a0", "Step 2", 4, {"openinference.span.kind": "CHAIN"}),
        llm("00000000000000a5", 5, ask + [("tool-response", "Call id: call_1\nTypeError")],
            {"id": "call_2", "name": "page_down", "arguments": "{}"}),
    ]
    (finding,) = _run(tmp_path, spans).findings
    first, second = steps_of(finding)
    assert first.context_recorded and len(first.added) == 2 and not first.dropped
    assert [m["role"] for m in first.new_messages] == ["system", "user"]
    assert first.decision == [{"role": "assistant", "tool_calls": [{"id": "call_1", "name": "page_down",
                                                                  "arguments": {"x": 1}}]}]  # not output.value restated
    assert first.tokens == (900, 12)
    assert [t.name for t in first.tools] == ["page_down"]
    assert first.tools[0].result == "(raised) TypeError: unexpected keyword argument 'x'"
    assert [m["role"] for m in second.new_messages] == ["tool-response"] and len(second.added) == 1
    text = render(finding)
    assert "context : +2 message(s)" in text and "-> page_down(" in text and "(raised) TypeError" in text
    # the HTML graph puts the tool under the model call that decided it, not in a column of its own
    import re

    from otel_agent_trace.analyzer.report import html
    page = html.render(_run(tmp_path, spans))
    x = dict(re.findall(r"data-span='(\w+)'><rect x='([\d.]+)'", page))
    assert x["00000000000000a3"] == x["00000000000000a2"] != x["00000000000000a5"]


def test_replay_of_foreign_steps_never_raises_on_odd_values(tmp_path_factory):
    """Whatever types a foreign convention's message attributes hold, `show` renders the run."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from otel_agent_trace.analyzer.show import render

    value = st.one_of(st.text(max_size=20), st.integers(), st.booleans(), st.floats(allow_nan=True),
                      st.lists(st.text(max_size=5), max_size=3))
    keys = st.sampled_from(["llm.input_messages.0.message.role", "llm.input_messages.0.message.content",
                            "llm.input_messages.1.message.contents.0.message_content.text",
                            "llm.output_messages.0.message.content", "llm.output_messages.0.message.role",
                            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
                            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
                            "llm.output_messages.0.message.tool_calls.0.tool_call.id", "output.value",
                            "llm.token_count.prompt", "llm.token_count.completion"])

    @settings(max_examples=60, deadline=None)
    @given(st.dictionaries(keys, value, max_size=8))
    def check(attrs):
        spans = [span(T, "00000000000000a0", None, "agent", 0, {"openinference.span.kind": "AGENT"}),
                 span(T, "00000000000000a1", "00000000000000a0", "llm", 1, {"openinference.span.kind": "LLM", **attrs}),
                 span(T, "00000000000000a2", "00000000000000a0", "tool", 2, {"openinference.span.kind": "TOOL",
                                                                             "tool.name": "t"}, status=2)]
        path = tmp_path_factory.mktemp("odd") / "t.jsonl"
        path.write_text(line(spans))
        for finding in analyze([str(path)]).findings:
            assert render(finding).startswith("run ")

    check()
