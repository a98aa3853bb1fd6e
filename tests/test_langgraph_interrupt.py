"""A LangGraph graph interrupted for human input (`interrupt`) and resumed on the same checkpointed
thread (`Command(resume=...)`, same `thread_id`) is one run while the interrupted run still
lingers (frameworks/langchain.py, recorder/delegation.py `continue_run`); once that run has ended,
the resume is a run of its own linked to it (relation `resumes`, `agent_trace.run.resumes`), and
the analyzer's report names the run it resumes. Real langgraph, real ChatOpenAI against the
scripted OpenAI server."""

from __future__ import annotations

import asyncio
import subprocess
import threading
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph")

from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.graph.message import add_messages  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402
from opentelemetry.trace import StatusCode, format_trace_id  # noqa: E402

from otel_agent_trace.semconv import LINK_RELATION, RUN_RESUMES
from otel_agent_trace.recorder.handler import installed_handler  # noqa: E402
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer  # noqa: E402
from stacks.zero_code import BIN, analyze, run_instrumented  # noqa: E402

SCRIPTS = {
    "Refund order A1": [{"content": "Draft: refund $5.00 for order A1"}, {"content": "Refund of $5.00 issued"}],
    "Refund order B2": [{"content": "Draft: refund $7.00 for order B2"}, {"content": "Refund of $7.00 issued"}],
}


class State(TypedDict):
    messages: Annotated[list, add_messages]


@pytest.fixture(scope="module")
def server():
    with ScriptedOpenAIServer(SCRIPTS) as s:
        yield s


def approval_graph(base_url: str) -> Any:
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="test", max_retries=0)

    def draft(state: State) -> dict:
        return {"messages": [llm.invoke(state["messages"])]}

    def approve(state: State) -> dict:
        decision = interrupt("approve the refund?")
        return {"messages": [("user", f"decision: {decision}")]}

    def finish(state: State) -> dict:
        return {"messages": [llm.invoke(state["messages"])]}

    graph = StateGraph(State)
    graph.add_node("draft", draft)
    graph.add_node("approve", approve)
    graph.add_node("finish", finish)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "approve")
    graph.add_edge("approve", "finish")
    graph.add_edge("finish", END)
    return graph.compile(checkpointer=InMemorySaver(), name="refund_flow")


def chats_per_step(traced: Any, run: Any) -> list[list[str]]:
    return [[c.name for c in traced.children(step)] for step in traced.children(run)]


def test_resumed_thread_continues_its_run(instrument, server, caplog):
    traced = instrument()
    graph = approval_graph(server.base_url)
    config = {"configurable": {"thread_id": "t-1"}}
    first = graph.invoke({"messages": [("user", "Refund order A1")]}, config)
    assert "__interrupt__" in first
    second = graph.invoke(Command(resume="approved"), config)
    assert second["messages"][-1].content == "Refund of $5.00 issued"
    [run] = traced.runs()
    assert run.name == "invoke_agent refund_flow"
    assert chats_per_step(traced, run) == [["chat gpt-4o-mini"], ["chat gpt-4o-mini"]]
    assert run.status.status_code is not StatusCode.ERROR
    # LangGraph's interrupt / resume lifecycle events reach our callback handler without a warning
    assert not [r for r in caplog.records if "AgentTraceCallbackHandler" in r.getMessage()]


def test_async_resume_continues_its_run_and_a_later_exception_fails_it(instrument, server):
    traced = instrument()
    graph = approval_graph(server.base_url)
    config = {"configurable": {"thread_id": "t-2"}}

    async def program() -> None:
        await graph.ainvoke({"messages": [("user", "Refund order B2")]}, config)
        await graph.ainvoke(Command(resume="approved"), config)

    asyncio.run(program())
    # the program then raises about the answer, uncaught: what `sys.excepthook` reports (exit_hooks.py)
    installed_handler().implicit.crashed(threading.main_thread().ident, ValueError("refund not in the ledger"))
    [run] = traced.runs()
    assert len(traced.children(run)) == 2
    assert run.status.status_code is StatusCode.ERROR


def test_other_threads_and_fresh_input_are_runs_of_their_own(instrument, server):
    """A resume continues only its own thread's lingering run; new input on the thread is a new run."""
    traced = instrument()
    graph = approval_graph(server.base_url)
    a, b = {"configurable": {"thread_id": "t-a"}}, {"configurable": {"thread_id": "t-b"}}
    graph.invoke({"messages": [("user", "Refund order A1")]}, a)
    graph.invoke({"messages": [("user", "Refund order B2")]}, b)  # this thread moved on: run a ended
    graph.invoke(Command(resume="approved"), b)
    runs = traced.runs()
    assert [len(traced.children(r)) for r in runs] == [1, 2]


def test_resume_after_the_run_ended_links_the_interrupted_run(instrument, server):
    """The program moved on before the human answered (another graph run on its thread ended the
    interrupted one): the resume is a run of its own, in a trace of its own, linked to it."""
    traced = instrument()
    graph = approval_graph(server.base_url)
    a, b = {"configurable": {"thread_id": "t-r"}}, {"configurable": {"thread_id": "t-s"}}
    graph.invoke({"messages": [("user", "Refund order A1")]}, a)
    graph.invoke({"messages": [("user", "Refund order B2")]}, b)  # ends run a (this thread's next run)
    graph.invoke(Command(resume="approved"), a)
    graph.invoke({"messages": [("user", "Refund order A1")]}, {"configurable": {"thread_id": "t-new"}})
    interrupted, other, resumed, fresh = traced.runs()
    assert [len(traced.children(r)) for r in (interrupted, resumed)] == [1, 1]
    assert resumed.context.trace_id != interrupted.context.trace_id
    [link] = resumed.links
    assert link.context.span_id == interrupted.context.span_id and link.context.trace_id == interrupted.context.trace_id
    assert link.attributes[LINK_RELATION] == "resumes"
    assert resumed.attributes[RUN_RESUMES] == format_trace_id(interrupted.context.trace_id)
    for run in (interrupted, other, fresh):  # fresh input, or another thread: no link
        assert not run.links and RUN_RESUMES not in run.attributes


def test_resume_in_another_program_run_links_the_earlier_one(instrument, server):
    """Interrupted inside one `agent_run`, resumed inside another: the second program run links
    the first; both invocations inside one program run stay that one run, unlinked."""
    from otel_agent_trace import agent_run

    traced = instrument()
    graph = approval_graph(server.base_url)
    config = {"configurable": {"thread_id": "t-p"}}
    with agent_run("draft_ticket"):
        graph.invoke({"messages": [("user", "Refund order A1")]}, config)
    with agent_run("approve_ticket"):
        graph.invoke(Command(resume="approved"), config)
    with agent_run("whole_ticket"):
        graph.invoke({"messages": [("user", "Refund order B2")]}, {"configurable": {"thread_id": "t-q"}})
        graph.invoke(Command(resume="approved"), {"configurable": {"thread_id": "t-q"}})
    drafted, approved, whole = traced.runs()
    assert [link.context.span_id for link in approved.links] == [drafted.context.span_id]
    assert not drafted.links and not whole.links and len(traced.children(whole)) == 2


def test_resume_under_another_checkpointer_is_not_linked(instrument, server):
    """The same thread id on another graph's checkpointer is another thread."""
    traced = instrument()
    first, second = approval_graph(server.base_url), approval_graph(server.base_url)
    config = {"configurable": {"thread_id": "t-same"}}
    first.invoke({"messages": [("user", "Refund order A1")]}, config)
    second.invoke({"messages": [("user", "Refund order B2")]}, config)  # ends the first run
    second.invoke(Command(resume="approved"), config)  # continues the second's lingering run
    first.invoke(Command(resume="approved"), config)  # resumes the first's: linked to its run
    runs = traced.runs()
    assert len(runs) == 3
    [linked] = [r for r in runs if r.links]
    assert linked.links[0].context.span_id == runs[0].context.span_id


RESUME_PROGRAM = """
from langgraph.types import Command
from test_langgraph_interrupt import SCRIPTS, approval_graph
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

server = ScriptedOpenAIServer(SCRIPTS).start()
graph = approval_graph(server.base_url)
a, b = {"configurable": {"thread_id": "t-1"}}, {"configurable": {"thread_id": "t-2"}}
graph.invoke({"messages": [("user", "Refund order A1")]}, a)   # interrupted, awaiting approval
graph.invoke({"messages": [("user", "Refund order B2")]}, b)   # the program moved on: run 1 ended
graph.invoke(Command(resume="approved"), a)                     # the human approved: resumed
"""


def test_the_report_names_the_run_a_resume_resumes(tmp_path):
    """Zero code, `otel-agent-trace analyze`: the resumed run's entry names the interrupted run."""
    proc, traces = run_instrumented(RESUME_PROGRAM, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = analyze(traces)["runs"]
    assert len(runs) == 3
    [resumed] = [r for r in runs if r["resumes"]]  # the other two resume nothing
    [interrupted] = [r for r in runs if r["run_span_id"] == resumed["resumes"]["run_span_id"]]
    assert interrupted["trace_id"] == resumed["resumes"]["trace_id"] != resumed["trace_id"]
    assert interrupted["agent"] == "refund_flow" and interrupted["steps"] == 1
    text = subprocess.run([str(BIN / "otel-agent-trace"), "analyze", str(traces)], capture_output=True, text=True,
                          timeout=120).stdout
    assert (f"  resumes  : refund_flow (ok, 1 steps), trace {interrupted['trace_id']} "
            f"span {interrupted['run_span_id']}") in text
