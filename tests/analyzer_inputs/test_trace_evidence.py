"""Failure evidence a trace proves, read from small hand-written OpenInference (smolagents-like)
OTLP JSON traces through the real reader: error banners in tool results, code-parsing and
code-execution exceptions on "Step N" spans, tools called with arguments they do not take, the
interpreter's operation limit, and the harness's trailing LLM call that is no run. Plus the
TRAIL GAIA corpus figures (skipped when the shared corpus is absent)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from inputs_support import line, span

from otel_agent_trace.analyzer.analysis import analyze
from otel_agent_trace.analyzer.normalize import normalize_trace
from otel_agent_trace.analyzer.normalize.evidence import exception_kind, listed_tools, mentioned, result_error
from otel_agent_trace.analyzer.readers.otlp_json import read_file
from otel_agent_trace.analyzer.spans import InputReport

ROOT = Path(__file__).resolve().parents[2]
TRAIL_DIR = ROOT / "../shared/benchmarks/trail-gaia"
T = "cd" * 16
OI = "openinference.span.kind"


def _exc(kind: str, message: str) -> dict:
    return {"name": "exception", "timeUnixNano": "1700000000000000000",
            "attributes": [{"key": "exception.type", "value": {"stringValue": kind}},
                           {"key": "exception.message", "value": {"stringValue": message}}]}


def _llm(sid: str, parent: str, start: int, calls: list[tuple[str, str]] = (), content: str | None = None) -> dict:
    attrs = {OI: "LLM", "llm.input_messages.0.message.role": "user",
             "llm.input_messages.0.message.content": "find the paper", "llm.output_messages.0.message.role": "assistant"}
    if content:
        attrs["llm.output_messages.0.message.content"] = content
    for i, (name, args) in enumerate(calls):
        attrs[f"llm.output_messages.0.message.tool_calls.{i}.tool_call.function.name"] = name
        attrs[f"llm.output_messages.0.message.tool_calls.{i}.tool_call.function.arguments"] = args
    return span(T, sid, parent, "LiteLLMModel.__call__", start, attrs)


def _agent(extra: list[dict], harness: bool = False) -> list[dict]:
    spans = [
        span(T, "00000000000000a0", None, "answer_single_question", 0),
        span(T, "00000000000000a1", "00000000000000a0", "ToolCallingAgent.run", 1, {OI: "AGENT"}),
        *extra,
    ]
    if harness:
        spans.append(_llm("00000000000000ff", "00000000000000a0", 900, content="FINAL ANSWER: 42"))
    return spans


def _analyze(tmp_path: Path, spans: list[dict]):
    path = tmp_path / "t.jsonl"
    path.write_text(line(spans))
    analysis = analyze([str(path)])
    assert analysis.bad_lines == 0
    return analysis


def _errors(finding) -> dict[str, tuple[str, str]]:
    life = finding.lifecycle
    return {s.span_id: (life.error_type(s.span_id), life.states[s.span_id].reason) for s in finding.errors}


def test_http_403_page_in_tool_result_is_an_error_with_evidence(tmp_path):
    spans = _agent([
        span(T, "00000000000000b1", "00000000000000a1", "Step 1", 10, {OI: "CHAIN"}),
        _llm("00000000000000b2", "00000000000000b1", 11, [("visit_page", '{"url": "https://x.org/p"}')]),
        span(T, "00000000000000b3", "00000000000000b1", "VisitTool", 12, {
            OI: "TOOL", "tool.name": "visit_page", "input.value": '{"url": "https://x.org/p"}',
            "output.value": "Address: https://x.org/p\nTitle: Error 403\nViewport position: Showing page 1 of 1.\n"
                            "=======================\n## Error 403\n\nEnable JavaScript and cookies to continue"}),
        # a healthy page mentioning an error deep inside its content is not an error
        span(T, "00000000000000b4", "00000000000000a1", "Step 2", 20, {OI: "CHAIN"}),
        _llm("00000000000000b5", "00000000000000b4", 21, [("visit_page", '{"url": "https://y.org"}')]),
        span(T, "00000000000000b6", "00000000000000b4", "VisitTool", 22, {
            OI: "TOOL", "tool.name": "visit_page", "input.value": '{"url": "https://y.org"}',
            "output.value": "Address: https://y.org\nTitle: HTTP status codes\n" + "text " * 200 +
                            "\n## Error 403\nFileNotFoundError: No such file or directory"}),
    ])
    (finding,) = _analyze(tmp_path, spans).findings
    tools = {t.span_id: t for t in finding.run.tools}
    assert tools["00000000000000b3"].attr("agent_trace.tool.outcome") == "error_result"
    assert tools["00000000000000b3"].attr("agent_trace.error.evidence") == "http: Title: Error 403"
    assert tools["00000000000000b6"].attr("agent_trace.tool.outcome") == "ok"
    life = finding.lifecycle
    assert life.error_type("00000000000000b3") == "tool_error_result"
    assert life.states["00000000000000b3"].reason == "tool result: http: Title: Error 403"
    # the next visit_page succeeded: a derived retry recovered the 403
    assert "00000000000000b3" in life.recovered
    # the decision that read the 403 page: the next step's LLM call
    assert finding.readers["00000000000000b3"].span_id == "00000000000000b5"


def test_code_parsing_error_on_step_span_is_a_format_error(tmp_path):
    spans = _agent([
        span(T, "00000000000000c1", "00000000000000a1", "Step 1", 10, {OI: "CHAIN"}, status=2, events=[_exc(
            "smolagents.utils.AgentParsingError",
            "Error in code parsing: Your code snippet is invalid, because the regex pattern ```(?:py|python)?\\n(.*?)\\n``` "
            "was not found in it.")]),
        _llm("00000000000000c2", "00000000000000c1", 11, content="Thought: I know the answer is 42."),
    ])
    (finding,) = _analyze(tmp_path, spans).findings
    errors = _errors(finding)
    etype, reason = errors["00000000000000c1"]
    assert etype == "invalid_arguments" and "could not be parsed" in reason and "regex pattern" in reason


def test_tool_called_with_unexpected_argument_is_the_models_error(tmp_path):
    spans = _agent([
        span(T, "00000000000000d1", "00000000000000a1", "Step 1", 10, {OI: "CHAIN"}, status=2, events=[_exc(
            "smolagents.utils.AgentExecutionError",
            "Error when executing tool page_down with arguments {'': ''}: TypeError: PageDownTool.forward() got an "
            "unexpected keyword argument ''")]),
        _llm("00000000000000d2", "00000000000000d1", 11, [("page_down", '{"": ""}')]),
        span(T, "00000000000000d3", "00000000000000d1", "PageDownTool", 12, {
            OI: "TOOL", "tool.name": "page_down", "input.value": '{"args": [], "kwargs": {"": ""}}'}, status=2,
            events=[_exc("TypeError", "PageDownTool.forward() got an unexpected keyword argument ''")]),
    ])
    (finding,) = _analyze(tmp_path, spans).findings
    errors = _errors(finding)
    # one error, on the tool; the step's exception restates it
    assert list(errors) == ["00000000000000d3"]
    assert errors["00000000000000d3"][0] == "invalid_arguments"
    assert "signature does not accept" in errors["00000000000000d3"][1]
    assert finding.lifecycle.states["00000000000000d1"].reason == "restates the exception of a tool it ran"


def test_failed_model_call_is_one_error_read_by_the_next_step(tmp_path):
    spans = _agent([
        span(T, "00000000000000d1", "00000000000000a1", "Step 1", 10, {OI: "CHAIN"}, status=2, events=[_exc(
            "smolagents.utils.AgentGenerationError",
            "Error in generating model output:\nlitellm.BadRequestError: OpenAIException - Error code: 400")]),
        span(T, "00000000000000d2", "00000000000000d1", "LiteLLMModel.__call__", 11, {
            OI: "LLM", "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "find it"},
            status=2, events=[_exc("litellm.exceptions.BadRequestError", "Error code: 400 - invalid prompt")]),
        span(T, "00000000000000d4", "00000000000000a1", "Step 2", 20, {OI: "CHAIN"}),
        _llm("00000000000000d5", "00000000000000d4", 21, [("final_answer", '{"answer": "42"}')]),
    ])
    (finding,) = _analyze(tmp_path, spans).findings
    errors = _errors(finding)
    # one error, on the model call; the step's AgentGenerationError restates it
    assert list(errors) == ["00000000000000d2"] and errors["00000000000000d2"][0] == "llm_error"
    assert finding.lifecycle.states["00000000000000d1"].reason == "restates the exception of a model call it ran"
    # the failed call decided nothing: the next step's model call is the decision that read the failure
    assert finding.readers["00000000000000d2"].span_id == "00000000000000d5"


def test_report_locates_errors_at_decisions_in_nested_steps(tmp_path):
    """The CLI's JSON: a tool failure is located at the step that ran it and the step that read
    it; a model-made error at its step only; a framework's `Step N` span is the decision unit
    that holds a model call and the tools it ran (docs/analyzer.md, Placement)."""
    spans = _agent([
        span(T, "00000000000000b1", "00000000000000a1", "Step 1", 10, {OI: "CHAIN"}),
        _llm("00000000000000b2", "00000000000000b1", 11, [("inspect_file", '{"path": "a.pdf"}')]),
        span(T, "00000000000000b3", "00000000000000b1", "TextInspectorTool", 12,
             {OI: "TOOL", "tool.name": "inspect_file", "input.value": '{"path": "a.pdf"}'}, status=2,
             events=[_exc("UnboundLocalError", "cannot access local variable 'res'")]),
        span(T, "00000000000000b4", "00000000000000a1", "Step 2", 20, {OI: "CHAIN"}),
        _llm("00000000000000b5", "00000000000000b4", 21, [("page_down", '{"": ""}')]),
        span(T, "00000000000000b6", "00000000000000b4", "PageDownTool", 22,
             {OI: "TOOL", "tool.name": "page_down", "input.value": '{"": ""}'}, status=2,
             events=[_exc("TypeError", "PageDownTool.forward() got an unexpected keyword argument ''")]),
        span(T, "00000000000000b7", "00000000000000a1", "Step 3", 30, {OI: "CHAIN"}),
        _llm("00000000000000b8", "00000000000000b7", 31, [("final_answer", '{"answer": "42"}')]),
    ])
    path = tmp_path / "t.jsonl"
    path.write_text(line(spans))
    out = tmp_path / "r.json"
    subprocess.run([sys.executable, "-m", "otel_agent_trace.cli", "analyze", str(path), "--format", "json",
                    "-o", str(out)], check=True, capture_output=True)
    (run,) = json.loads(out.read_text())["runs"]
    by_type = {e["error_type"]: e for e in run["errors"]}
    tool, made = by_type["tool_exception"], by_type["invalid_arguments"]
    assert tool["bug_class"] == "tool" and tool["decision_span_id"] == "00000000000000b1"
    assert tool["read_by_span_id"] == "00000000000000b5"  # the model call that read it ...
    assert tool["located_at"] == ["00000000000000b1", "00000000000000b4"]  # ... as its step
    assert made["bug_class"] == "model_decision" and made["located_at"] == ["00000000000000b4"]
    assert [e["error_type"] for e in run["errors"]] == ["tool_exception", "invalid_arguments"]  # earliest first


def _report_run(tmp_path: Path, spans: list[dict]) -> dict:
    path = tmp_path / "t.jsonl"
    path.write_text(line(spans))
    out = tmp_path / "r.json"
    subprocess.run([sys.executable, "-m", "otel_agent_trace.cli", "analyze", str(path), "--format", "json",
                    "-o", str(out)], check=True, capture_output=True)
    (run,) = json.loads(out.read_text())["runs"]
    return run


def test_a_failure_outside_the_call_is_located_where_it_was_read(tmp_path):
    """A timeout or an HTTP error of a well-formed call: placed at the step that read it only; a
    failure of the tool's own code, a file it could not convert and a page that does not exist
    (the call chose the address) keep both places."""
    def failing(kind: str, message: str) -> list[dict]:
        return _agent([
            span(T, "00000000000000b1", "00000000000000a1", "Step 1", 10, {OI: "CHAIN"}),
            _llm("00000000000000b2", "00000000000000b1", 11, [("visit_page", '{"url": "https://x.org/p"}')]),
            span(T, "00000000000000b3", "00000000000000b1", "VisitTool", 12,
                 {OI: "TOOL", "tool.name": "visit_page", "input.value": '{"url": "https://x.org/p"}'}, status=2,
                 events=[_exc(kind, message)]),
            span(T, "00000000000000b4", "00000000000000a1", "Step 2", 20, {OI: "CHAIN"}),
            _llm("00000000000000b5", "00000000000000b4", 21, [("final_answer", '{"answer": "42"}')]),
        ])

    for kind, message in [("requests.exceptions.HTTPError", "503 Server Error: Service Unavailable for url"),
                          ("TimeoutError", "the page took too long")]:
        [entry] = _report_run(tmp_path, failing(kind, message))["errors"]
        assert entry["decision_span_id"] == "00000000000000b1" and entry["read_by_span_id"] == "00000000000000b5"
        assert entry["located_at"] == ["00000000000000b4"], (kind, entry)
    for kind, message in [("UnboundLocalError", "cannot access local variable 'res'"),
                          ("FileConversionException", "Could not convert 'a.mp3' to Markdown."),
                          ("requests.exceptions.HTTPError", "404 Client Error: Not Found for url")]:
        [entry] = _report_run(tmp_path, failing(kind, message))["errors"]
        assert entry["located_at"] == ["00000000000000b1", "00000000000000b4"], (kind, entry)


def test_a_refused_file_format_is_located_where_it_was_read(tmp_path):
    """A format the tool refuses (`UnsupportedFormatException`: the file is there, the tool cannot
    convert that kind) is placed at the step that read the refusal only; a file that is not there
    keeps both places (the call chose the path)."""
    def failing(kind: str, message: str) -> list[dict]:
        return _agent([
            span(T, "00000000000000b1", "00000000000000a1", "Step 1", 10, {OI: "CHAIN"}),
            _llm("00000000000000b2", "00000000000000b1", 11, [("inspect_file_as_text", '{"file_path": "a.jsonld"}')]),
            span(T, "00000000000000b3", "00000000000000b1", "TextInspectorTool", 12,
                 {OI: "TOOL", "tool.name": "inspect_file_as_text", "input.value": '{"file_path": "a.jsonld"}'},
                 status=2, events=[_exc(kind, message)]),
            span(T, "00000000000000b4", "00000000000000a1", "Step 2", 20, {OI: "CHAIN"}),
            _llm("00000000000000b5", "00000000000000b4", 21, [("final_answer", '{"answer": "42"}')]),
        ])

    [entry] = _report_run(tmp_path, failing(
        "markitdown._exceptions.UnsupportedFormatException",
        "Could not convert 'a.jsonld' to Markdown. The formats ['.jsonld'] are not supported."))["errors"]
    assert entry["exception_type"] == "UnsupportedFormatException"
    assert entry["decision_span_id"] == "00000000000000b1" and entry["located_at"] == ["00000000000000b4"]
    [entry] = _report_run(tmp_path, failing(
        "markitdown._exceptions.FileConversionException",
        "Could not convert 'a.jsonld' to Markdown. FileNotFoundError: [Errno 2] No such file or directory"))["errors"]
    assert entry["located_at"] == ["00000000000000b1", "00000000000000b4"]


def test_model_code_the_framework_could_not_parse_is_located_at_it_and_its_reader(tmp_path):
    """Code the framework could not parse or run as written is reported back to the model, as a
    tool failure is: placed at the step that wrote it and at the next one, which read the error
    and had to write it again. A tool called with arguments it does not take stays at the call."""
    spans = _agent([
        span(T, "00000000000000c1", "00000000000000a1", "Step 1", 10, {OI: "CHAIN"}, status=2, events=[_exc(
            "smolagents.utils.AgentParsingError",
            "Error in code parsing: Your code snippet is invalid, because the regex pattern ```(?:py|python)?\\n(.*?)"
            "\\n``` was not found in it.")]),
        _llm("00000000000000c2", "00000000000000c1", 11, content="Thought: I know the answer is 42."),
        span(T, "00000000000000c3", "00000000000000a1", "Step 2", 20, {OI: "CHAIN"}),
        _llm("00000000000000c4", "00000000000000c3", 21, [("final_answer", '{"answer": "42"}')]),
    ])
    [entry] = _report_run(tmp_path, spans)["errors"]
    assert entry["error_type"] == "invalid_arguments" and entry["exception_type"] == "AgentParsingError"
    assert entry["read_by_span_id"] == "00000000000000c4"
    assert entry["located_at"] == ["00000000000000c1", "00000000000000c3"]
    spans = _agent([
        span(T, "00000000000000d1", "00000000000000a1", "Step 1", 10, {OI: "CHAIN"}),
        _llm("00000000000000d2", "00000000000000d1", 11, [("page_down", '{"": ""}')]),
        span(T, "00000000000000d3", "00000000000000d1", "PageDownTool", 12, {
            OI: "TOOL", "tool.name": "page_down", "input.value": '{"args": [], "kwargs": {"": ""}}'}, status=2,
            events=[_exc("TypeError", "PageDownTool.forward() got an unexpected keyword argument ''")]),
        span(T, "00000000000000d4", "00000000000000a1", "Step 2", 20, {OI: "CHAIN"}),
        _llm("00000000000000d5", "00000000000000d4", 21, [("final_answer", '{"answer": "42"}')]),
    ])
    [entry] = _report_run(tmp_path, spans)["errors"]
    assert entry["error_type"] == "invalid_arguments" and entry["located_at"] == ["00000000000000d1"]


def test_an_answer_without_tools_is_suspected_at_the_first_step_that_went_without(tmp_path):
    """No tool in the whole run, the plan naming none: the suspicion is the first step of the
    steps (the planning call beside them is not one of them), where going without tools began."""
    spans = _code_agent([
        _llm("0000000000000021", "0000000000000012", 10, content="Thought: I recall the answer.\nCode:\n```py\n"
                                                            "print(33149)\n```"),
        span(T, "0000000000000022", "0000000000000010", "Step 2", 20, {OI: "CHAIN"}),
    ])
    for sp in spans:  # the final answer moves to step 2
        if sp["spanId"] in ("0000000000000013", "0000000000000014"):
            sp["parentSpanId"] = "0000000000000022"
            sp["startTimeUnixNano"] = str(int(sp["startTimeUnixNano"]) + 10 * 10**6)
            sp["endTimeUnixNano"] = str(int(sp["endTimeUnixNano"]) + 10 * 10**6)
    [entry] = _report_run(tmp_path, spans)["errors"]
    assert entry["error_type"] == "unsupported_answer" and entry["suspicion"] is True
    assert entry["span_id"] == "0000000000000021" and entry["located_at"] == ["0000000000000012"]  # Step 1
    assert "the first step" in entry["reason"]


def test_tool_retry_exceeded_on_bad_arguments_is_model_decision(tmp_path):
    extra = []
    for k in range(3):
        step, llm, tool = (f"0000000000000{k}e{c}" for c in "123")
        extra += [
            span(T, step, "00000000000000a1", f"Step {k + 1}", 10 + 10 * k, {OI: "CHAIN"}),
            _llm(llm, step, 11 + 10 * k, [("page_down", '{"page": 2}')]),
            span(T, tool, step, "PageDownTool", 12 + 10 * k, {OI: "TOOL", "tool.name": "page_down",
                                                             "input.value": '{"page": 2}'}, status=2,
                 events=[_exc("TypeError", "PageDownTool.forward() got an unexpected keyword argument 'page'")]),
        ]
    (finding,) = _analyze(tmp_path, _agent(extra)).findings
    assert finding.failed and finding.fired[0].rule.rule_id == "TOOL_RETRY_EXCEEDED"
    assert finding.origin is not None and finding.origin.span_id == "00000000000000e3"
    assert finding.origin_error_type == "invalid_arguments" and finding.bug_class == "model_decision"
    # the streak is named once in the evidence; each repeat stays an error of its own (TRAIL labels them)
    assert any("same error (same tool, same error text) repeated 2 more time(s)" in e for e in finding.evidence)
    assert len(finding.errors) == 3


def test_operation_limit_and_missing_file_in_code_execution(tmp_path):
    spans = _agent([
        span(T, "00000000000000f1", "00000000000000a1", "Step 1", 10, {OI: "CHAIN"}, status=2, events=[_exc(
            "smolagents.utils.AgentExecutionError",
            "Code execution failed at line 'for _ in range(N): simulate()' due to: InterpreterError: Reached the max "
            "number of operations of 10000000. Maybe there is an infinite loop somewhere in the code")]),
        _llm("00000000000000f2", "00000000000000f1", 11, content="Code:\n```py\nfor _ in range(N): simulate()\n```"),
        span(T, "00000000000000f3", "00000000000000a1", "Step 2", 20, {OI: "CHAIN"}, status=2, events=[_exc(
            "smolagents.utils.AgentExecutionError",
            "Code execution failed at line 'open(\"data.csv\")' due to: FileNotFoundError: [Errno 2] No such file or "
            "directory: 'data.csv'")]),
        _llm("00000000000000f4", "00000000000000f3", 21, content="Code:\n```py\nopen('data.csv')\n```"),
    ])
    (finding,) = _analyze(tmp_path, spans).findings
    errors = _errors(finding)
    assert errors["00000000000000f1"][0] == "tool_timeout" and "operation limit" in errors["00000000000000f1"][1]
    assert errors["00000000000000f3"][0] == "tool_exception" and "not found" in errors["00000000000000f3"][1]


def test_trailing_harness_llm_call_is_not_a_run(tmp_path):
    spans = _agent([
        span(T, "00000000000000e1", "00000000000000a1", "Step 1", 10, {OI: "CHAIN"}),
        _llm("00000000000000e2", "00000000000000e1", 11, content="final_answer(42)"),
    ], harness=True)
    analysis = _analyze(tmp_path, spans)
    (finding,) = analysis.findings  # before: a second, one-step run rooted at answer_single_question
    assert finding.run.root.name == "ToolCallingAgent.run"
    report = InputReport(str(tmp_path / "t.jsonl"))
    read = list(read_file(str(tmp_path / "t.jsonl"), report))
    normalize_trace(read)
    (harness,) = [s for s in read if s.span_id == "00000000000000ff"]
    assert harness.attr("agent_trace.harness_call") is True and "agent_trace.step.index" not in harness.attributes
    # an LLM call outside the agent *before* it ended, or one that calls tools, is still a run
    spans = _agent([_llm("00000000000000e2", "00000000000000a1", 11, content="x")]) + [
        _llm("00000000000000ee", "00000000000000a0", 950, [("web_search", '{"q": "x"}')])]
    assert len(_analyze(tmp_path, spans).findings) == 2


def _code_agent(extra: list[dict], nested: bool = False) -> list[dict]:
    spans = [
        span(T, "0000000000000010", None, "CodeAgent.run", 0, {OI: "AGENT"}),
        # the plan asks for a lookup (a paper) and names no tool: answering without one is suspected
        _llm("0000000000000011", "0000000000000010", 1, content="1. Facts given in the task ...\n2. Find the paper."),
        span(T, "0000000000000012", "0000000000000010", "Step 1", 10, {OI: "CHAIN"}),
        *extra,
        _llm("0000000000000013", "0000000000000012", 11, content="Code:\n```py\nfinal_answer('33149')\n```"),
        span(T, "0000000000000014", "0000000000000012", "FinalAnswerTool", 12, {
            OI: "TOOL", "tool.name": "final_answer", "input.value": '{"args": ["33149"]}'}),
    ]
    if nested:
        spans += [span(T, "0000000000000015", "0000000000000012", "ToolCallingAgent.run", 5, {OI: "AGENT"}),
                  _llm("0000000000000016", "0000000000000015", 6, content="the report")]
    return spans


def test_final_answer_without_any_tool_result_is_unsupported(tmp_path):
    (finding,) = _analyze(tmp_path, _code_agent([])).findings
    errors = _errors(finding)
    assert list(errors) == ["0000000000000013"]  # the decision that answered
    etype, reason = errors["0000000000000013"]
    assert etype == "unsupported_answer" and "rests on no tool result" in reason
    assert finding.failed is False  # a suspicion, not a critical failure: no rule fires on it


def test_answer_after_a_tool_or_a_sub_agent_is_not_unsupported(tmp_path):
    searched = _code_agent([span(T, "0000000000000017", "0000000000000012", "SearchInformationTool", 10, {
        OI: "TOOL", "tool.name": "web_search", "input.value": '{"query": "x"}', "output.value": "results..."})])
    assert _errors(_analyze(tmp_path, searched).findings[0]) == {}
    findings = _analyze(tmp_path, _code_agent([], nested=True)).findings
    manager = next(f for f in findings if f.run.root.name == "CodeAgent.run")
    assert manager.run.root.attr("agent_trace.run.subagent_runs") == 1 and _errors(manager) == {}


def _planned_agent(plan: str, prompt: str) -> list[dict]:
    spans = _code_agent([])
    for sp in spans:
        if sp["spanId"] == "0000000000000011":  # the planning call: its prompt lists the tools
            sp["attributes"] += [
                {"key": "llm.input_messages.0.message.content", "value": {"stringValue": prompt}},
                {"key": "llm.output_messages.0.message.content", "value": {"stringValue": plan}}]
    return spans


TOOLS_PROMPT = ("You can use these tools:\n- search_agent: A team member that will search the internet.\n"
                "- final_answer: Provides a final answer.\n    Takes inputs: {'answer': ...}\n"
                "Facts:\n  - Reasoning: an indented bullet is no tool\n")


def test_unsupported_answer_whose_plan_named_a_tool_is_proven(tmp_path):
    spans = _planned_agent("1. Ask search_agent for the 2016 paper.\n2. Read the Reasoning.", TOOLS_PROMPT)
    (finding,) = _analyze(tmp_path, spans).findings
    life = finding.lifecycle
    (sid,) = [s.span_id for s in finding.errors]
    assert life.error_type(sid) == "unsupported_answer"
    assert life.states[sid].flags == {"plan_named_tool"}
    assert "its own plan named search_agent, which it never called" in life.states[sid].reason


def test_unsupported_answer_whose_plan_named_no_tool_is_a_suspicion(tmp_path):
    # the plan asks for a lookup but names no tool; "Reasoning" is listed only as an indented bullet
    spans = _planned_agent("1. Look up the 2016 paper.\n2. Reasoning: read its table.", TOOLS_PROMPT)
    (finding,) = _analyze(tmp_path, spans).findings
    life = finding.lifecycle
    (sid,) = [s.span_id for s in finding.errors]
    assert life.states[sid].flags == {"suspicion"} and "low confidence" in life.states[sid].reason
    assert finding.failed is False
    from otel_agent_trace.analyzer.report.json_report import _error

    assert _error(finding, finding.errors[0])["suspicion"] is True  # a field of the JSON report


def test_an_answer_without_tools_is_no_suspicion_when_the_plan_asks_for_no_lookup(tmp_path):
    """A plan that works only on what the task gives (it solves the cipher in place: no search,
    source, page or paper) shows the task needs no tool: answering from the model alone is what
    the plan meant, and no step is suspected. The same run whose plan asks for a lookup is."""
    cipher = _planned_agent("1. Reverse the text.\n2. Reasoning: the opposite of left is right.", TOOLS_PROMPT)
    (finding,) = _analyze(tmp_path, cipher).findings
    assert finding.errors == [] and not finding.failed
    run = _report_run(tmp_path, cipher)
    assert run["status"] == "ok" and run["errors"] == []
    lookup = _planned_agent("1. Reverse the text.\n2. Check the answer on the web.", TOOLS_PROMPT)
    (finding,) = _analyze(tmp_path, lookup).findings
    [entry] = _report_run(tmp_path, lookup)["errors"]
    assert entry["suspicion"] is True and "its plan asked for a lookup ('web') that no step made" in entry["reason"]


def test_an_agent_given_no_tool_but_the_final_answer_is_not_suspected(tmp_path):
    """A code agent whose prompt lists only `final_answer` (TRAIL's SWE-bench agent: all its work
    is Python run inside its steps) had nothing else to call: no `unsupported_answer`. The same
    run given a search tool is suspected, and so is one whose tool list is not known at all."""
    only_final = ("You only have access to these tools:\n- final_answer: Provides a final answer.\n"
                  "    Takes inputs: {'answer': ...}\n")
    spans = _planned_agent("1. Look up the 2016 paper.\n2. Read its table.", only_final)
    (finding,) = _analyze(tmp_path, spans).findings
    assert finding.errors == [] and not finding.failed
    assert _report_run(tmp_path, spans)["errors"] == []
    spans = _planned_agent("1. Look up the 2016 paper.\n2. Read its table.", TOOLS_PROMPT)
    (finding,) = _analyze(tmp_path, spans).findings
    assert [finding.lifecycle.error_type(s.span_id) for s in finding.errors] == ["unsupported_answer"]
    (finding,) = _analyze(tmp_path, _code_agent([])).findings  # no tool list in any prompt
    assert [finding.lifecycle.error_type(s.span_id) for s in finding.errors] == ["unsupported_answer"]


def test_a_proven_error_is_no_suspicion_in_the_json_report(tmp_path):
    from otel_agent_trace.analyzer.report.json_report import _error

    spans = _planned_agent("1. Ask search_agent for the 2016 paper.\n2. Read the Reasoning.", TOOLS_PROMPT)
    (finding,) = _analyze(tmp_path, spans).findings
    assert _error(finding, finding.errors[0])["suspicion"] is False


def test_a_planning_call_is_not_the_decision_that_read_a_tool_failure(tmp_path):
    spans = _agent([
        span(T, "00000000000000b1", "00000000000000a1", "Step 1", 10, {OI: "CHAIN"}),
        _llm("00000000000000b2", "00000000000000b1", 11, [("inspect_file", '{"path": "a.mp3"}')]),
        span(T, "00000000000000b3", "00000000000000b1", "TextInspectorTool", 12, {
            OI: "TOOL", "tool.name": "inspect_file", "input.value": '{"path": "a.mp3"}'}, status=2,
            events=[_exc("FileConversionException", "Could not convert 'a.mp3' to Markdown.")]),
        # a plan update directly under the run (smolagents' planning call) restates the history
        _llm("00000000000000b4", "00000000000000a1", 20, content="Updated plan: 1. try another tool"),
        span(T, "00000000000000b5", "00000000000000a1", "Step 2", 30, {OI: "CHAIN"}),
        _llm("00000000000000b6", "00000000000000b5", 31, [("web_search", '{"q": "x"}')]),
    ])
    (finding,) = _analyze(tmp_path, spans).findings
    assert [s.span_id for s in finding.errors] == ["00000000000000b3"]
    assert finding.readers["00000000000000b3"].span_id == "00000000000000b6"


def test_listed_tools_and_mentions():
    assert listed_tools(TOOLS_PROMPT) == {"search_agent", "final_answer"}
    assert mentioned("I will call search_agent now", {"search_agent", "visualizer"}) == {"search_agent"}
    assert mentioned("my_search_agent2 is another name", {"search_agent"}) == set()


def test_evidence_patterns_are_conservative():
    assert result_error("Address: u\nTitle: Error 404\n") == ("http", "Title: Error 404")
    assert result_error("403 Client Error: Forbidden for url: https://x")[0] == "http"
    assert result_error("Error: ('Connection aborted.', RemoteDisconnected('Remote end closed'))")[0] == "connection"
    assert result_error("A Google search for 'rate limit 429' found 10 results") is None
    assert result_error("x" * 500 + "Title: Error 403") is None  # deep in content: just text
    assert exception_kind("smolagents.utils.AgentMaxStepsError", "Reached max steps.") == "max_steps"
    assert exception_kind("AgentExecutionError", "Code execution failed due to: InterpreterError: "
                                                 "It is not permitted to evaluate other functions") == "format"
    assert exception_kind("Exception", "No results found for query: 'x'") == "exception"


@pytest.mark.skipif(not (TRAIL_DIR / "traces.jsonl.gz").exists(), reason="the TRAIL GAIA corpus is not beside the repository")
def test_trail_gaia_figures(tmp_path):
    """The bench scores the CLI's JSON only (bench/bench_trail.py imports no analyzer module)."""
    assert "otel_agent_trace" not in (ROOT / "bench/bench_trail.py").read_text().replace(
        '"otel_agent_trace.cli"', "")
    out = tmp_path / "trail.json"
    subprocess.run([sys.executable, str(ROOT / "bench/bench_trail.py"), "--json", str(out)], check=True,
                   capture_output=True)
    r = json.loads(out.read_text())
    assert r["runs"] == 162  # the harness's trailing LLM call is no run (was 275)
    base = r["baseline: error-status/exception spans"]
    assert (base["hit@1"], base["system_execution_found"]) == (18, 8)  # the README's baseline, same scorer
    where = r["errors[] where they appeared"]
    # the report's own list: one entry per distinct error of a run (repeats folded), proven first
    located = r["errors[] as the report gives them (one entry per error)"]
    assert located["hit@1"] >= 57 and located["system_execution_found"] >= 16
    assert (located["entries_matched"], located["entries"]) == (98, 104)  # per entry: 0.94
    assert (located["matched"], located["predicted"]) == (167, 212)  # per span: 0.79, as before folding
    assert located["entry_precision"] >= 0.8 and located["precision"] > where["precision"] + 0.3
    assert r["  + recovered[]"]["system_execution_found"] >= 21  # the README counts recovered[] in this recall
    unfolded = r["before folding: one entry per occurrence"]  # the same spans, one entry per occurrence
    assert (unfolded["entries_matched"], unfolded["entries"]) == (153, 181)
    assert (unfolded["hit@1"], unfolded["matched"], unfolded["predicted"]) == (57, 167, 212)
    proven = r["proven errors[] only (suspicions apart)"]
    assert (proven["hit@1"], proven["matched"], proven["predicted"]) == (40, 150, 195)
    assert (proven["entries_matched"], proven["entries"]) == (81, 87)
    before = r["one place per occurrence (before located_at)"]  # tool failures at their reader only
    assert (before["hit@1"], before["matched"], before["predicted"]) == (53, 146, 181)
    assert r["origin + chain"]["hit@1"] >= 20  # failed and suspect runs
    types = r["precision by error type (errors[] as located)"]
    assert types["unsupported_answer"] == "26/27"  # the plan named a tool it never called
    # placed at the first step that went without a tool, none when the plan asked for no lookup
    assert types["unsupported_answer (suspicion)"] == "17/17"
    assert types["tool_exception"] == "21/38" and types["tool_exception @reader"] == "26/34"
    assert types["invalid_arguments"] == "72/95"  # at the call
    assert types["invalid_arguments @reader"] == "8/10"  # code the framework could not parse: also where it was read
    assert types["tool_timeout"] == "2/2" and types["llm_error"] == "1/1"  # failures outside the call: at the reader only


def _cli(path: Path, fmt: str, out: Path) -> str:
    subprocess.run([sys.executable, "-m", "otel_agent_trace.cli", "analyze", str(path), "--format", fmt, "-o", str(out)],
                   check=True, capture_output=True)
    return out.read_text()


def _assert_folded(run: dict) -> None:
    """Each entry: its occurrences earliest first, the first one's keys, and as `located_at` every
    occurrence's places; no error span in two entries."""
    for e in run["errors"]:
        occ = e["occurrences"]
        assert e["count"] == len(occ) and occ[0]["span_id"] == e["span_id"]
        assert [o["start_time_unix_nano"] for o in occ] == sorted(o["start_time_unix_nano"] for o in occ)
        assert e["located_at"] == list(dict.fromkeys(x for o in occ for x in o["located_at"]))
    spans = [o["span_id"] for e in run["errors"] for o in e["occurrences"]]
    assert len(spans) == len(set(spans))


def test_repeats_of_one_error_fold_into_one_entry_by_exception_class(tmp_path):
    """smolagents' shape: the same bad `page_down` call twice is one entry with two places; two
    failures of one tool with different exception classes stay two entries."""
    extra = []
    for k, (tool, kind, message) in enumerate([
            ("PageDownTool", "TypeError", "PageDownTool.forward() got an unexpected keyword argument ''"),
            ("TextInspectorTool", "UnboundLocalError", "cannot access local variable 'res'"),
            ("PageDownTool", "TypeError", "PageDownTool.forward() got an unexpected keyword argument 'page'"),
            ("TextInspectorTool", "FileConversionException", "Could not convert 'a.xlsx' to Markdown")]):
        step, llm, sid = (f"0000000000000{k}f{c}" for c in "123")
        name = "page_down" if tool == "PageDownTool" else "inspect_file_as_text"
        extra += [span(T, step, "00000000000000a1", f"Step {k + 1}", 10 + 10 * k, {OI: "CHAIN"}),
                  _llm(llm, step, 11 + 10 * k, [(name, '{"x": 1}')]),
                  span(T, sid, step, tool, 12 + 10 * k, {OI: "TOOL", "tool.name": name, "input.value": '{"x": 1}'},
                       status=2, events=[_exc(kind, message)])]
    extra += [span(T, "00000000000009f1", "00000000000000a1", "Step 5", 60, {OI: "CHAIN"}),
              _llm("00000000000009f2", "00000000000009f1", 61, [("final_answer", '{"answer": "42"}')])]
    path = tmp_path / "t.jsonl"
    path.write_text(line(_agent(extra)))
    (run,) = json.loads(_cli(path, "json", tmp_path / "r.json"))["runs"]
    _assert_folded(run)
    got = [(e["span_name"], e["exception_type"], e["count"]) for e in run["errors"]]
    assert got == [("PageDownTool", "TypeError", 2), ("TextInspectorTool", "UnboundLocalError", 1),
                   ("TextInspectorTool", "FileConversionException", 1)]
    page = run["errors"][0]
    assert [o["span_id"] for o in page["occurrences"]] == ["00000000000000f3", "00000000000002f3"]
    assert page["located_at"] == ["00000000000000f1", "00000000000002f1"]  # the two steps that made the call


@pytest.mark.skipif(not (TRAIL_DIR / "traces.jsonl.gz").exists(), reason="the TRAIL GAIA corpus is not beside the repository")
def test_folding_on_a_real_trail_trace(tmp_path):
    """One real smolagents trace of TRAIL GAIA (a `page_down` streak, a text inspector failing in two
    ways), through the CLI: one entry per distinct error, every occurrence kept, and the text
    report says which errors repeated."""
    import gzip

    wanted = "396b6aa1ab86eb2e20d27582eb5eebd9"
    with gzip.open(TRAIL_DIR / "traces.jsonl.gz", "rt") as handle:
        path = tmp_path / "one.jsonl"
        path.write_text(next(x for x in handle if wanted in x))
    runs = json.loads(_cli(path, "json", tmp_path / "r.json"))["runs"]
    (run,) = [r for r in runs if r["errors"]]
    _assert_folded(run)
    got = [(e["span_name"], e["error_type"], e["exception_type"], e["count"]) for e in run["errors"]]
    assert got == [("PageDownTool", "invalid_arguments", "TypeError", 4),
                   ("TextInspectorTool", "tool_exception", "UnboundLocalError", 3),
                   ("TextInspectorTool", "tool_exception", "UnsupportedFormatException", 1)]
    assert [o["step_index"] for o in run["errors"][0]["occurrences"]] == [11, 15, 16, 17]
    text = _cli(path, "text", tmp_path / "r.txt")
    assert "repeated : invalid_arguments at PageDownTool (TypeError), 4 times (steps 11, 15, 16, 17)" in text
    assert "repeated : tool_exception at TextInspectorTool (UnboundLocalError), 3 times (steps 21, 23, 26)" in text
    assert "UnsupportedFormatException), 1 times" not in text
