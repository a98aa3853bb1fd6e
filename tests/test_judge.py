"""`analyze --judge` against the scripted judge server (otel_agent_trace.scripted_servers.scripted_judge):
the real `openai` client over real HTTP, traces recorded by the real recorder and SDK.

The runs: an agent asked for the price of 3 widgets looks up the unit price (step 0), converts the
*unit* price instead of the total (step 1: the decisive mistake, which no structure proves), and
answers with a number it made up (step 2); the final answer fails validation. The analyzer names
no proven origin, only a suspicion where the made-up value appears (step 2); the judge, which
knows the mistake, must put step 1 first in the report, by each strategy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from scenario_agent import call, run_loop

import otel_agent_trace
from otel_agent_trace import cli
from otel_agent_trace.analyzer.judge import questions
from otel_agent_trace.analyzer.judge.dossier import Dossier, StepText
from otel_agent_trace.exporter import AgentTraceFileExporter
from otel_agent_trace.scripted_servers.scripted_judge import ScriptedJudge, ScriptedJudgeServer, refusal
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

SRC = Path(otel_agent_trace.__file__).resolve().parents[1]
MISTAKE = 1  # the step that converted the unit price

TASKS = {
    "What is the total price of 3 widgets in EUR?": (
        [call("lookup_price", item="widget"), call("convert", amount=4, currency="EUR"),
         {"content": "The total is 15 EUR."}], "expected 11.1 EUR"),
    "What is the total price of 2 gadgets in EUR?": (
        [call("lookup_price", item="gadget"), call("convert", amount=5, currency="EUR"),
         {"content": "The total is 12 EUR."}], "expected 9.25 EUR"),
}
TOOLS = {"lookup_price": lambda item: {"item": item, "price_usd": 4.0 if item == "widget" else 5.0},
         "convert": lambda amount, currency: {"amount": round(amount * 0.925, 2), "currency": currency}}


def _record(path: Path, tasks: dict[str, tuple[list, str]]) -> Path:
    """Each task as one failed run (its final answer fails validation), recorded to `path`."""
    with ScriptedOpenAIServer({user: turns for user, (turns, _) in tasks.items()}) as server:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(str(path))))
        instrumentor = otel_agent_trace.AgentTraceInstrumentor()
        instrumentor.instrument(tracer_provider=provider, capture_content=True)
        try:
            client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)
            for user, (_, why) in tasks.items():
                with otel_agent_trace.agent_run("shop", validate=lambda answer, why=why: why):
                    run_loop(client, user, TOOLS)
        finally:
            instrumentor.uninstrument()
            provider.shutdown()
    return path


@pytest.fixture(scope="module")
def one_run(tmp_path_factory) -> Path:
    first = next(iter(TASKS))
    return _record(tmp_path_factory.mktemp("judge") / "traces.jsonl", {first: TASKS[first]})


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> Path:
    return _record(tmp_path_factory.mktemp("judge2") / "traces.jsonl", TASKS)


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "OTEL_AGENT_TRACE_JUDGE_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


def _analyze(path: Path, tmp_path: Path, *extra: str, fmt: str = "json") -> tuple[int, Any]:
    out = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.{fmt}"
    code = cli.main(["analyze", str(path), "--format", fmt, "-o", str(out), *extra])
    text = out.read_text() if out.exists() else ""
    return code, (json.loads(text) if fmt == "json" and text else text)


def _judge_args(server: ScriptedJudgeServer, tmp_path: Path, *extra: str) -> list[str]:
    return ["--judge", "--judge-model", "judge-model", "--judge-base-url", server.base_url,
            "--judge-cache", str(tmp_path / "cache"), *extra]


def test_the_structure_alone_names_only_a_suspicion(one_run, tmp_path):
    """The premise: a failed run whose only named place is a suspicion at the answer (step 2),
    not the decisive step (what the judge is for)."""
    code, report = _analyze(one_run, tmp_path)
    [run] = report["runs"]
    assert code == 0 and run["status"] == "failed"
    assert [(e["step_index"], e["suspicion"]) for e in run["errors"]] == [(2, True)]
    assert run["origin"]["step_index"] == 2
    assert "judge" not in report and "judge" not in run


@pytest.mark.parametrize("strategy,asked", [
    ("all-at-once", [("verdict", [0, 1, 2])]),
    ("step-by-step", [("step", 0), ("step", 1)]),
    ("binary-search", [("half", ([0], [1, 2])), ("half", ([1], [2])), ("step", 1)]),
])
def test_each_strategy_puts_the_judged_step_first(one_run, tmp_path, strategy, asked):
    judge = ScriptedJudge(MISTAKE, agent="shop")
    with ScriptedJudgeServer(judge) as server:
        code, report = _analyze(one_run, tmp_path, *_judge_args(server, tmp_path, "--judge-strategy", strategy))
        sent = list(server.requests)
    assert code == 0
    assert judge.asked == asked
    [run] = report["runs"]
    steps = {e["step_index"] for e in [run["origin"], run["errors"][0]]}
    assert steps == {MISTAKE}
    assert run["origin"]["judged"] is True and run["origin"]["agent"] == "shop"
    first = run["errors"][0]
    assert first["error_type"] == "judged_mistake" and first["suspicion"] is True
    assert first["judge"]["category"] == "Tool Output Misinterpretation"
    assert first["judge"]["strategy"] == strategy.replace("-", "_")
    assert run["evidence"][0].startswith("judge judge-model (") and "step 1" in run["evidence"][0]
    assert run["bug_class"] == "model_decision"
    summary = report["judge"]
    assert summary["requests"] == len(asked) == len(sent) and summary["verdicts"] == 1
    assert summary["prompt_tokens"] > 0 and summary["completion_tokens"] > 0
    # every question is structured: the kind's JSON schema, strict
    formats = {r["response_format"]["json_schema"]["name"] for r in sent}
    assert formats <= {"judge_verdict", "judge_step", "judge_half"} and all(
        r["response_format"]["json_schema"]["strict"] for r in sent)
    # the question shows the step, its context delta (new input) and its tool results
    question = sent[-1]["messages"][-1]["content"]
    assert "## Step 1 (shop" in question
    assert 'New input: tool: {"item": "widget", "price_usd": 4.0}' in question
    assert 'Tool: convert({"amount": 4, "currency": "EUR"}) -> {"amount": 3.7, "currency": "EUR"}' in question


def test_a_verdict_on_a_named_place_moves_its_entry_first(one_run, tmp_path):
    """`--judge-top 1`: only the report's first place is asked about; the judge confirms it, and
    the report's own entry (its error type, its reason) carries the verdict."""
    judge = ScriptedJudge(MISTAKE)
    with ScriptedJudgeServer(judge) as server:
        _, report = _analyze(one_run, tmp_path, *_judge_args(server, tmp_path, "--judge-top", "1"))
    assert judge.asked == [("verdict", [2])]
    [run] = report["runs"]
    [entry] = run["errors"]
    assert entry["step_index"] == 2 and entry["error_type"] != "judged_mistake"
    assert entry["judge"]["step_index"] == 2 and run["origin"]["step_index"] == 2


def test_runs_with_a_proven_origin_are_not_judged(demo, tmp_path):
    """The demo's failed runs have proven origins (an empty lookup, a loop): nothing is asked."""
    with ScriptedJudgeServer(ScriptedJudge(0)) as server:
        code, report = _analyze(demo, tmp_path, *_judge_args(server, tmp_path))
        assert server.connections == 0
    assert code == 0 and sum(r["status"] == "failed" for r in report["runs"]) == 2
    assert all("judge" not in r for r in report["runs"])
    assert report["judge"]["runs_judged"] == 0 and report["judge"]["requests"] == 0


@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_server) -> Path:
    from demo_traces import record_demo_tickets

    return record_demo_tickets(tmp_path_factory.mktemp("demo") / "traces.jsonl", demo_server.base_url)


def test_a_rerun_is_answered_from_the_cache(one_run, tmp_path):
    judge = ScriptedJudge(MISTAKE)
    with ScriptedJudgeServer(judge) as server:
        args = _judge_args(server, tmp_path, "--judge-strategy", "binary-search")
        _, first = _analyze(one_run, tmp_path, *args)
        sent, connections = len(server.requests), server.connections
        _, second = _analyze(one_run, tmp_path, *args)
        assert len(server.requests) == sent == 3 and server.connections == connections  # nothing sent
    assert second["judge"]["requests"] == 0 and second["judge"]["cached"] == 3
    assert second["judge"]["prompt_tokens"] == 0 and second["judge"]["cost_usd"] == 0.0
    assert second["runs"][0]["errors"][0]["judge"]["cached"] is True
    assert first["runs"][0]["origin"] == second["runs"][0]["origin"]
    assert any((tmp_path / "cache").rglob("*.json"))


@pytest.mark.parametrize("fault,counted", [
    ({"content": "The decisive mistake is step 1."}, "malformed"),  # not JSON
    ({"content": json.dumps({"step": "one", "agent": "a", "category": "Other", "reason": "r"})}, "malformed"),
    ({"content": json.dumps({"step": 7, "agent": "a", "category": "Other", "reason": "r"})}, None),  # not asked
    (refusal(), "refused"),
    ({"status": 500, "error": "overloaded"}, "failed"),
])
def test_unusable_answers_keep_the_structural_report(one_run, tmp_path, fault, counted):
    """A malformed, refused, failed or off-list answer is counted; the run's entry stays what the
    structure said (plus `judge.verdict: null` and why)."""
    _, plain = _analyze(one_run, tmp_path)
    judge = ScriptedJudge(MISTAKE, faults=[fault] * 2)  # (the client retries a 500 once)
    with ScriptedJudgeServer(judge) as server:
        code, report = _analyze(one_run, tmp_path, *_judge_args(server, tmp_path, "--judge-cache", "off"))
    assert code == 0
    [run] = report["runs"]
    assert run.pop("judge")["verdict"] is None
    assert run == plain["runs"][0]
    summary = report["judge"]
    assert summary["verdicts"] == 0 and summary["runs_judged"] == 1
    for name in ("malformed", "refused", "failed"):
        assert summary[name] == (1 if name == counted else 0), summary


def test_a_refusal_is_cached_like_any_answer(one_run, tmp_path):
    with ScriptedJudgeServer(ScriptedJudge(MISTAKE, faults=[refusal()])) as server:
        args = _judge_args(server, tmp_path)
        _, first = _analyze(one_run, tmp_path, *args)
        _, second = _analyze(one_run, tmp_path, *args)
        assert len(server.requests) == 1
    assert first["judge"]["refused"] == second["judge"]["refused"] == 1
    assert second["runs"][0]["judge"] == {"verdict": None, "why": "refused"}


def test_the_call_budget_stops_the_judge(two_runs, tmp_path):
    with ScriptedJudgeServer(ScriptedJudge(MISTAKE)) as server:
        _, report = _analyze(two_runs, tmp_path, *_judge_args(server, tmp_path, "--judge-max-calls", "1"))
        assert len(server.requests) == 1
    first, second = report["runs"]
    assert first["origin"]["judged"] is True
    assert "judged" not in second["origin"] and second["judge"] == {"verdict": None, "why": "budget spent"}
    assert report["judge"]["runs_judged"] == 1 and report["judge"]["runs_skipped"] == 1


def test_the_token_budget_stops_a_search_midway(one_run, tmp_path):
    """Binary search needs 3 answers; a budget for about one leaves the structural report."""
    with ScriptedJudgeServer(ScriptedJudge(MISTAKE)) as server:
        _, report = _analyze(one_run, tmp_path, *_judge_args(server, tmp_path, "--judge-strategy", "binary-search",
                                                                "--judge-max-tokens", "1400"))
        assert len(server.requests) == 1
    summary = report["judge"]
    assert summary["requests"] == 1 and summary["over_budget"] == 1 and summary["verdicts"] == 0
    assert summary["prompt_tokens"] + summary["completion_tokens"] <= 1400
    assert "judged" not in report["runs"][0]["origin"] and report["runs"][0]["judge"]["why"] == "budget spent"


def test_cost_from_the_rules_price_table_and_the_cost_line(one_run, tmp_path, capsys):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"criticalFailures": [], "prices": {"judge-model": {"input": 2.0, "output": 8.0}}}))
    with ScriptedJudgeServer(ScriptedJudge(MISTAKE)) as server:
        _, report = _analyze(one_run, tmp_path, "--rules", str(rules), *_judge_args(server, tmp_path))
        _, text = _analyze(one_run, tmp_path, "--rules", str(rules), *_judge_args(server, tmp_path), fmt="text")
    summary = report["judge"]
    expected = (summary["prompt_tokens"] * 2.0 + summary["completion_tokens"] * 8.0) / 1e6
    assert summary["cost_usd"] == pytest.approx(expected, abs=1e-6) and expected > 0
    err = capsys.readouterr().err
    assert f"judge judge-model (all at once): 1 run(s) judged, 1 verdict(s); 1 request(s), 0 cached" in err
    assert f"${expected:.4f}" in err
    last = text.rstrip().splitlines()[-1]  # the text report ends with the cost line (a cached re-run)
    assert last.startswith("judge judge-model (all at once)") and "0 request(s), 1 cached" in last
    assert "judge judge-model (all at once): the decisive mistake is at step 1" in text


def test_the_html_report_shows_the_verdict(one_run, tmp_path):
    with ScriptedJudgeServer(ScriptedJudge(MISTAKE)) as server:
        code, html = _analyze(one_run, tmp_path, *_judge_args(server, tmp_path), fmt="html")
    assert code == 0 and "the decisive mistake is at step 1" in html


def test_endpoint_model_and_strategy_from_the_environment(one_run, tmp_path, monkeypatch):
    """The openai client's own variables (OPENAI_BASE_URL, OPENAI_API_KEY) and ours."""
    judge = ScriptedJudge(MISTAKE)
    with ScriptedJudgeServer(judge) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OTEL_AGENT_TRACE_JUDGE_MODEL", "env-model")
        monkeypatch.setenv("OTEL_AGENT_TRACE_JUDGE_STRATEGY", "step-by-step")
        monkeypatch.setenv("OTEL_AGENT_TRACE_JUDGE_CACHE", "off")
        code, report = _analyze(one_run, tmp_path, "--judge")
        assert {r["model"] for r in server.requests} == {"env-model"}
    assert code == 0 and [k for k, _ in judge.asked] == ["step", "step"]
    assert report["judge"]["model"] == "env-model" and report["judge"]["strategy"] == "step_by_step"


def test_unusable_judge_settings_exit_2_before_reading(one_run, tmp_path, capsys, monkeypatch):
    code, _ = _analyze(one_run, tmp_path, "--judge")
    assert code == 2 and "the judge needs a model" in capsys.readouterr().err
    monkeypatch.delenv("OPENAI_API_KEY")
    code, _ = _analyze(one_run, tmp_path, "--judge", "--judge-model", "m")
    assert code == 2 and "OPENAI_API_KEY" in capsys.readouterr().err
    monkeypatch.setenv("OTEL_AGENT_TRACE_JUDGE_MAX_CALLS", "many")
    code, _ = _analyze(one_run, tmp_path, "--judge", "--judge-model", "m")
    assert code == 2 and "OTEL_AGENT_TRACE_JUDGE_MAX_CALLS: not a number" in capsys.readouterr().err


def _python(code: str, env: dict[str, str], *args: str, prefix: list[str] | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    full.update({"PYTHONPATH": str(SRC), **env})
    return subprocess.run([*(prefix or []), sys.executable, "-c", code, *args], env=full, capture_output=True,
                          text=True, timeout=120)


def test_without_judge_nothing_is_imported_or_sent(one_run, tmp_path):
    """The endpoint is configured in the environment, yet `analyze` without --judge opens no
    connection and never imports the openai client."""
    code = ("import sys; from otel_agent_trace import cli; c = cli.main(['analyze', sys.argv[1], '--format', 'json',"
            " '-o', sys.argv[2]]); print(c, 'openai' in sys.modules, 'otel_agent_trace.analyzer.judge.client'"
            " in sys.modules)")
    with ScriptedJudgeServer(ScriptedJudge(MISTAKE)) as server:
        proc = _python(code, {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "k",
                              "OTEL_AGENT_TRACE_JUDGE_MODEL": "m"}, str(one_run), str(tmp_path / "r.json"))
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == ["0", "False", "False"]
        assert server.connections == 0 and server.requests == []
    assert "judge" not in json.loads((tmp_path / "r.json").read_text())


def test_without_the_openai_client_the_error_says_what_to_install(one_run, tmp_path):
    code = ("import sys; sys.modules['openai'] = None; from otel_agent_trace import cli; "
            "sys.exit(cli.main(['analyze', sys.argv[1], '--judge', '--judge-model', 'm']))")
    proc = _python(code, {"OPENAI_API_KEY": "k"}, str(one_run))
    assert proc.returncode == 2
    assert "--judge needs the openai client: pip install 'otel-agent-trace[judge]'" in proc.stderr


def test_the_judge_calls_are_not_recorded_by_our_instrumentation(one_run, tmp_path, instrument):
    """With our instrumentor active in the analysing process, the judge's calls make no span; a
    call of the same client outside the judge does (the instrumentation was on)."""
    traced = instrument()
    with ScriptedJudgeServer(ScriptedJudge(MISTAKE)) as server:
        code, report = _analyze(one_run, tmp_path, *_judge_args(server, tmp_path, "--judge-strategy",
                                                                "binary-search", "--judge-cache", "off"))
        assert code == 0 and report["judge"]["requests"] == 3 == len(server.requests)
        assert traced.spans == []
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Did step 1 make the "
                                                                                        "decisive mistake"}])
    assert [s.name for s in traced.spans if s.name.startswith("chat")] == ["chat m"]


UNDER_INSTRUMENT = """
import sys, openai
from opentelemetry import trace
from otel_agent_trace import cli
code = cli.main(['analyze', sys.argv[1], '--format', 'json', '-o', sys.argv[2], '--judge', '--judge-model', 'm',
                 '--judge-strategy', 'step-by-step', '--judge-cache', 'off'])
trace.get_tracer_provider().force_flush()
print('analyzed', code, flush=True)
if sys.argv[3] == 'control':  # the same client outside the judge: recorded
    openai.OpenAI(max_retries=0).chat.completions.create(model='m', messages=[{'role': 'user', 'content': 'hi'}])
trace.get_tracer_provider().force_flush()
"""


@pytest.mark.parametrize("control", ["judge-only", "control"])
def test_the_judge_calls_never_enter_traces_under_opentelemetry_instrument(one_run, tmp_path, control):
    """`opentelemetry-instrument` loads every installed instrumentor (ours, and the official
    openai-v2 one in this environment) and exports to a trace file: the judge's requests add no
    span to it; the control request shows the instrumentation was recording."""
    exported = tmp_path / "exported.jsonl"
    with ScriptedJudgeServer(ScriptedJudge(MISTAKE)) as server:
        proc = _python(UNDER_INSTRUMENT, {
            "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "k", "OTEL_SERVICE_NAME": "analyzer",
            "OTEL_TRACES_EXPORTER": "agent_trace_file", "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none", "OTEL_AGENT_TRACE_FILE": str(exported)},
            str(one_run), str(tmp_path / "r.json"), control,
            prefix=[str(Path(sys.executable).parent / "opentelemetry-instrument")])
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "analyzed 0" in proc.stdout
        assert len(server.requests) == 2 + (control == "control")
    names = [s["name"] for line in (exported.read_text().splitlines() if exported.exists() else [])
             for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    if control == "control":
        assert "chat m" in names, names
    else:
        assert names == []


def test_a_long_log_is_shortened_to_fit_but_the_asked_steps_stay_whole():
    big = "x" * 5000
    steps = [StepText(i, i, f"{i:016x}", f"chat agent{i % 3}", f"agent{i % 3}", big, big, i, [f"t() -> {big}"])
             for i in range(60)]
    dossier = Dossier("t" * 32, "r" * 16, "agent0", "the task", "the run failed", steps, [40], True, {})
    question = questions.verdict(dossier, [40])
    text = question.messages[-1]["content"]
    assert len(text) < questions.LOG_CHARS + 500
    assert f"Output: {big}" in text  # step 40 in full
    assert "## Step 0 (agent0, span chat agent0)" in text and "## Step 59" in text
    assert text.count(big) == 3  # only step 40's input, output and tool


def test_our_recorder_honours_opentelemetry_suppression(instrument):
    """`suppress_instrumentation()` (OpenTelemetry's key, which the judge sets too) silences our
    client wrappers; outside it the same call is recorded."""
    from opentelemetry.instrumentation.utils import suppress_instrumentation

    traced = instrument()
    with ScriptedOpenAIServer({"*": [{"content": "fine"}]}) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with suppress_instrumentation():
            assert client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}]) \
                .choices[0].message.content == "fine"
        assert traced.spans == []
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "b"}])
    assert [s.name for s in traced.spans if s.name.startswith("chat")] == ["chat m"]


def _group_chat(path: Path) -> Path:
    """A multi-agent group chat in the shape of Who&When's logs (OpenTelemetry GenAI chat spans,
    one per turn, each naming its agent; nothing raises): the verifier accepts a made-up count."""
    sys.path.insert(0, str(Path(__file__).parent / "analyzer_outputs"))
    from trace_builder import TraceBuilder, write

    turns = [("Planner", "Plan: 1) load the athletes table 2) find the smallest team 3) verify."),
             ("Coder", "```python\nimport pandas as pd\nprint(pd.read_csv('athletes.csv').groupby('team').size())\n```"),
             ("Computer_terminal", "exitcode: 1 (execution failed)\nFileNotFoundError: athletes.csv"),
             ("Verifier", "The table shows CUB had the fewest athletes (1). Verified."),
             ("Planner", "FINAL ANSWER: CUB")]
    b = TraceBuilder()
    root = b.span("invoke_agent CaptainAgent", gen_ai__operation__name="invoke_agent",
                  gen_ai__agent__name="CaptainAgent", input__value="Which country had the fewest athletes in 1928?")
    for agent, text in turns:
        b.span(f"chat {agent}", root, gen_ai__operation__name="chat", gen_ai__agent__name=agent,
               gen_ai__output__messages=json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}]))
    return write(path, b)


def test_a_multi_agent_log_is_judged_with_its_agents(tmp_path):
    """`--all-failed` on a group chat: the judged place names its own agent, and the question
    shows each turn's agent."""
    trace = _group_chat(tmp_path / "chat.jsonl")
    judge = ScriptedJudge(3, agent="Verifier", category="Language-only", reason="claims a count no output showed")
    with ScriptedJudgeServer(judge) as server:
        code, report = _analyze(trace, tmp_path, "--all-failed", *_judge_args(server, tmp_path, "--judge-top", "0"))
        question = server.requests[0]["messages"][-1]["content"]
    assert code == 0
    [run] = report["runs"]
    assert run["origin"]["judged"] is True and run["origin"]["agent"] == "Verifier"
    assert run["errors"][0]["judge"]["agent"] == "Verifier" and run["errors"][0]["judge"]["category"] == "Language-only"
    assert run["errors"][0]["span_name"] == "chat Verifier" and run["errors"][0]["agent"] == "Verifier"
    assert run["errors"][0]["occurrences"][0]["agent"] == "Verifier"
    assert judge.asked == [("verdict", [0, 1, 2, 3, 4])]
    for agent in ("Planner", "Coder", "Computer_terminal", "Verifier"):
        assert f"({agent}, span chat {agent})" in question
    assert "Which country had the fewest athletes in 1928?" in question


def test_json_mode_for_endpoints_without_structured_outputs(one_run, tmp_path):
    """`--judge-response-format json_object`; an answer in a fenced block is read too."""
    fenced = "```json\n" + json.dumps({"step": 1, "agent": "shop", "category": "Tool-related", "reason": "r"}) + "\n```"
    with ScriptedJudgeServer(ScriptedJudge(MISTAKE, faults=[{"content": fenced}])) as server:
        _, report = _analyze(one_run, tmp_path, *_judge_args(server, tmp_path, "--judge-response-format",
                                                                "json_object"))
        assert server.requests[0]["response_format"] == {"type": "json_object"}
    assert report["runs"][0]["origin"]["step_index"] == 1
    assert report["runs"][0]["errors"][0]["judge"]["category"] == "Tool-related"
