"""Localising a failure that raised nothing (issue 27 §2): runs known to have failed
(`analyze --all-failed`) with no proven error get ranked suspicions in `errors[]`, the first the
run's origin, each naming its agent. Runs recorded through the real openai client and our
exporter, and a multi-agent group chat in the GenAI conventions (as AG2 logs are converted); the
report read as a user's script reads it."""

from __future__ import annotations

import json

import pytest
from scenario_agent import analyze_json, call, record_run

from otel_agent_trace import detectors
from otel_agent_trace.analyzer import silent
from otel_agent_trace.analyzer.silent import answer, conversation, failures, values, work
from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer


@pytest.fixture(scope="module")
def server():
    with ScriptedOpenAIServer({}) as s:
        yield s


def test_answer_provenance_from_a_tool_result_blames_the_answer_that_states_it(server, tmp_path):
    """A tool's result, read by the agent that called it: the call chose the tool and the tool the
    value; the decision that stated it as the answer is the one a person checks (the reason says
    where the value came from)."""
    path = record_run(server, tmp_path / "t.jsonl", "what does SKU-10 cost?", [
        call("get_customer", name="Ada"), call("get_price", sku="SKU-10"), {"content": "SKU-10 costs $42.50."}],
        {"get_customer": lambda name: {"id": "C-77"}, "get_price": lambda sku: {"sku": sku, "price": 42.5}})
    [quiet] = analyze_json(path)["runs"]
    assert quiet["status"] == "ok" and quiet["errors"] == []  # without the verdict: nothing to suspect
    [run] = analyze_json(path, "--all-failed")["runs"]
    assert run["status"] == "failed"
    origin = run["origin"]
    assert origin["error_type"] == "answer_provenance" and origin["step_index"] == 2  # the answer's step
    [entry] = [e for e in run["errors"] if e["span_id"] == origin["span_id"]]
    assert entry["suspicion"] is True and "42.5" in entry["reason"] and "get_price (called at agent_step 1)" in \
        entry["reason"] and entry["reason"].endswith("agent_step 2 states it as the answer")
    assert entry["located_at"] == [origin["span_id"]]
    assert entry["agent"] == "agent" and origin["agent"] == "agent"


def test_an_assumption_is_suspected_first(server, tmp_path):
    path = record_run(server, tmp_path / "t.jsonl", "what discount does C-77 get?", [
        call("get_customer", name="Ada"),
        {"content": "The discount service is not available here, so let's assume the usual discount of 15%: "
                    "C-77 gets 15%."}],
        {"get_customer": lambda name: {"id": "C-77", "tier": "gold"}})
    [run] = analyze_json(path, "--all-failed")["runs"]
    assert run["origin"]["error_type"] == "assumed_fact" and run["origin"]["step_index"] == 1
    assert run["bug_class"] == "model_decision"
    assert any("assume" in e["reason"] for e in run["errors"] if e["suspicion"])


def test_a_proven_error_stays_the_origin(server, tmp_path):
    def get_price(sku):
        raise TimeoutError("price service timed out")

    path = record_run(server, tmp_path / "t.jsonl", "what does SKU-10 cost?", [
        call("get_price", sku="SKU-10"), {"content": "SKU-10 costs $42.50."}], {"get_price": get_price})
    [run] = analyze_json(path, "--all-failed")["runs"]
    assert run["origin"]["error_type"] in ("tool_timeout", "tool_error_result")  # (the loop returns the error text)
    assert run["origin"]["tool"] == "get_price"
    assert not any(e["suspicion"] for e in run["errors"])


def _attr(key, value):
    kind = "intValue" if isinstance(value, int) else "stringValue"
    return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}


def _group_chat(path, task, turns):
    """A group chat as OTLP JSON: a root `invoke_agent`, one `chat {agent}` span per message."""
    spans = [{"traceId": "ab" * 16, "spanId": "f" * 16, "name": "invoke_agent Team", "kind": 1,
              "startTimeUnixNano": "1000000000", "endTimeUnixNano": str((len(turns) + 2) * 10**9),
              "attributes": [_attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", "Team"),
                             _attr("input.value", task)]}]
    for i, (agent, text) in enumerate(turns):
        output = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])
        spans.append({"traceId": "ab" * 16, "spanId": f"{i + 1:016x}", "parentSpanId": "f" * 16,
                      "name": f"chat {agent}", "kind": 3, "startTimeUnixNano": str((i + 1) * 10**9 + 1),
                      "endTimeUnixNano": str((i + 2) * 10**9),
                      "attributes": [_attr("gen_ai.operation.name", "chat"), _attr("gen_ai.agent.name", agent),
                                     _attr("gen_ai.output.messages", output)]})
    doc = {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "team")]},
                              "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}]}]}
    path.write_text(json.dumps(doc) + "\n")
    return path


def test_a_code_error_stated_only_in_text_is_charged_to_the_turn_that_wrote_the_code(tmp_path):
    path = _group_chat(tmp_path / "chat.jsonl", "How many rows does sales.csv have?", [
        ("Planner", "Plan: the analyst loads sales.csv and counts the rows."),
        ("Analyst", "```python\nimport pandas as pd\nprint(len(pd.read_csv('sale.csv')))\n```"),
        ("Computer_terminal", "exitcode: 1 (execution failed)\nCode output: FileNotFoundError: sale.csv"),
        ("Checker", "The file could not be read, so the count is unknown. TERMINATE"),
    ])
    [run] = analyze_json(path, "--all-failed")["runs"]
    assert run["status"] == "failed"
    assert run["origin"]["span_name"] == "chat Analyst" and run["origin"]["agent"] == "Analyst"
    assert run["origin"]["error_type"] == "error_in_text"
    [entry] = [e for e in run["errors"] if e["span_id"] == run["origin"]["span_id"]]
    assert "exit code 1" in entry["reason"] and entry["agent"] == "Analyst"
    assert all(e["agent"] for e in run["errors"])


def test_a_value_from_an_execution_is_charged_to_the_turn_that_ran_it(tmp_path):
    path = _group_chat(tmp_path / "chat.jsonl", "What is the mean order value?", [
        ("Planner", "Plan: the analyst computes the mean from orders.csv."),
        ("Analyst", "```python\nimport pandas as pd\nprint(pd.read_csv('orders.csv')['value'].mean())\n```"),
        ("Computer_terminal", "exitcode: 0 (execution succeeded)\nCode output: 73.25"),
        ("Checker", "The mean order value is **73.25**. TERMINATE"),
    ])
    [run] = analyze_json(path, "--all-failed")["runs"]
    assert run["origin"]["error_type"] == "answer_provenance" and run["origin"]["agent"] == "Analyst"
    [quiet] = analyze_json(path)["runs"]
    assert quiet["status"] == "ok" and quiet["origin"] is None


def test_an_exponent_without_a_mantissa_is_an_id():
    assert detectors.value_key("E0000") == "s:E0000"
    assert detectors.distinctive_values("code E0000 at 1e5") == {"s:E0000", "n:100000"}


def test_the_agent_several_signals_agree_on_leads(tmp_path):
    # the checker's assumption alone would lead; two other signals name the analyst's turns
    turns = [
        ("Planner", "Plan: the analyst reads orders.csv and computes the mean order value."),
        ("Analyst", "```python\nimport pandas as pd\nprint(pd.read_csv('order.csv')['value'].mean())\n```"),
        ("Computer_terminal", "exitcode: 1 (execution failed)\nCode output: FileNotFoundError: order.csv"),
        ("Analyst", "```python\nimport pandas as pd\nprint(pd.read_csv('orders.csv')['value'].mean())\n```"),
        ("Computer_terminal", "exitcode: 0 (execution succeeded)\nCode output: 73.25"),
        ("Checker", "I cannot open the file myself, so let's assume the output is right: the mean order value "
                    "is **73.25**. TERMINATE"),
    ]
    [run] = analyze_json(_group_chat(tmp_path / "chat.jsonl", "What is the mean order value?", turns),
                         "--all-failed")["runs"]
    suspected = {e["span_name"] + "/" + e["span_id"][-1]: e for e in run["errors"] if e["suspicion"]}
    assert {e["agent"] for e in suspected.values()} == {"Analyst", "Checker"}
    assert sum(e["agent"] == "Analyst" for e in suspected.values()) == 2
    assert run["origin"]["agent"] == "Analyst" and run["origin"]["error_type"] == "error_in_text"
    [entry] = [e for e in run["errors"] if e["span_id"] == run["origin"]["span_id"]]
    assert "2 of the 3 places name Analyst" in entry["reason"]
    # one agent alone keeps the signals' order
    alone = [(agent if agent in ("Computer_terminal",) else "Analyst", text) for agent, text in turns]
    [run] = analyze_json(_group_chat(tmp_path / "alone.jsonl", "What is the mean order value?", alone),
                         "--all-failed")["runs"]
    assert run["origin"]["error_type"] == "assumed_fact" and run["origin"]["step_index"] == 5


def test_a_pronouns_contraction_is_no_answer_value():
    values = silent.answer_values("I'm sure: I'll say We've found Paris Orly.", "Which airport?")
    assert "s:paris orly" in values
    assert not any(key.startswith(("s:i'", "s:we'")) for key in values)


def test_magentic_ones_terminal_output_is_an_execution_result(tmp_path):
    # Magentic-One's ComputerTerminal writes `The script ran, then exited with Unix exit code: N`
    path = _group_chat(tmp_path / "chat.jsonl", "How many penguins are in penguins.csv?", [
        ("Orchestrator", "Plan: the coder writes a script that counts the rows of penguins.csv."),
        ("Coder", "```python\nimport pandas as pd\nprint(len(pd.read_csv('penguin.csv')))\n```"),
        ("ComputerTerminal", "The script ran, then exited with Unix exit code: 1\nIts output was:\n"
                             "FileNotFoundError: [Errno 2] penguin.csv"),
        ("Orchestrator", "The count could not be obtained."),
    ])
    [run] = analyze_json(path, "--all-failed")["runs"]
    assert run["origin"]["error_type"] == "error_in_text" and run["origin"]["agent"] == "Coder"
    [entry] = [e for e in run["errors"] if e["span_id"] == run["origin"]["span_id"]]
    assert "exit code 1" in entry["reason"]
    assert conversation.NO_CODE.match("No code block detected in the messages. Please provide a markdown-encoded code block")


def test_a_script_that_exited_0_printed_data_not_an_error(tmp_path):
    # error words below the first line of a successful script's output are what it printed (an
    # issue's title and body); on the first line, an error the script caught and reported
    def terminal(output):
        return silent.Turn(None, "ComputerTerminal", "The script ran, then exited with Unix exit code: 0\n"
                           "Its output was:\n" + output, observation=True)
    data = terminal("Oldest Issue Title: BUG: deep copying polybase broken\nBody: AttributeError: 'X' has no 'copy'")
    assert failures.failed_observation(data) is None and failures.succeeded(data)
    caught = terminal("Error: FileNotFoundError: penguins.csv\n")
    assert failures.failed_observation(caught) == "its output reports an error" and not failures.succeeded(caught)
    ag2 = silent.Turn(None, "Computer_terminal", "exitcode: 0 (execution succeeded)\nCode output: Traceback (most "
                      "recent call last):\n  File x\nKeyError: 'a'", observation=True)
    assert failures.failed_observation(ag2) == "its output reports an error"


def test_what_a_turn_states_leaves_out_addresses_harness_output_and_page_dumps():
    # real text from Magentic-One logs (Who&When Hand-Crafted)
    surfer = ("I typed 'Ted Danson TV series list' into the browser search bar.\n\nHere is a screenshot of "
              "[Ted Danson TV series list - Search](https://www.bing.com/search?q=Ted+Danson+TV+series+list&form=QBLH"
              "&sp=-1&lq=0&pq=&sc=0-0&qs=n&sk=&cvid=C55ED53AB69F42F1BEE03E4B3CB740E2&ghsh=0&ghacc=0&ghpl=). The viewport "
              "shows 26% of the webpage.\nAutomatic OCR of the page screenshot has detected the following text:\n\n"
              "Hypothetical Growth of $10,000: 1979, 1982\n<Image>\nError processing publish message\n"
              "Traceback (most recent call last):\n  File \"/usr/local/lib/python3.11/site-packages/autogen_core/x.py\", "
              "line 410, in _process_publish\n    await asyncio.gather(*responses)\n"
              "openai.BadRequestError: Error code: 400 - {'code': 'content_filter'}\n"
              "/workspace/scenario.py:116: UserWarning: Resolved model mismatch: gpt-4o-2024-08-06 != gpt-4o-2024-05-13. "
              "Model mapping may be incorrect.\n  response = await client.create(messages)\n"
              "FINAL ANSWER: CSI Cyber\nSCENARIO.PY COMPLETE !#!#\nRUN.SH COMPLETE !#!#")
    stated = silent.stated_text(surfer)
    assert "I typed 'Ted Danson TV series list'" in stated and "FINAL ANSWER: CSI Cyber" in stated
    for gone in ("bing.com", "ghacc", "Hypothetical", "1979", "Traceback", "BadRequestError", "gpt-4o", "client.create",
                 "!#!#"):
        assert gone not in stated, gone
    assert detectors.fabricated_values(stated, set()) == []
    assert silent.stated_text('{"reason": "Adjani\\u2019s film, 42mm:\\n"}') == '{"reason": "Adjani\u2019s film, 42mm: "}'
    values = silent.answer_values(stated, "Which series?")
    assert "s:csi cyber" in values and "s:final answer" not in values


def test_a_page_element_an_action_names_and_a_text_browsers_page_are_not_stated():
    # Magentic-One's WebSurfer names the element it acted on by its label on the page; what it
    # typed is its own choice and stays
    typed = silent.stated_text("I typed 'Ben & Jerry's flavor graveyard 1985' into '0 characters out of 2000'.\n\n"
                               "Here is a screenshot of [x](https://x.test). <Image>")
    assert "1985" in typed and "2000" not in typed
    clicked = silent.stated_text("I clicked 'International Equity\nFund 2000'.\nThe fund lists 7 holdings.")
    assert "2000" not in clicked and "7 holdings" in clicked
    assert silent.stated_text("I clicked the control.") == "I clicked the control."
    # a text browser's page (Magentic-One's FileSurfer, AutoGen's SimpleTextBrowser) runs to the end
    page = ("Address: file:///workspace/76.pdf\nTitle: Error 404\nViewport position: Showing page 1 of 1.\n"
            "=======================\n## Error 404\n\nFile not found: /workspace/76.pdf\n| log.jsonl | 2025-01-02 09:22 |")
    stated = silent.stated_text("Here is the file.\n" + page)
    assert "Here is the file." in stated and "404" not in stated and "09:22" not in stated
    # without a page, `$` still ends nothing early: a screenshot's dump with no <Image> runs to the end
    assert "1979" not in silent.stated_text("I scrolled down.\n\nHere is a screenshot of [t](u).\nOCR: 1979\nmore 1982")


def test_a_search_boxs_label_is_no_made_up_value(tmp_path):
    path = _group_chat(tmp_path / "chat.jsonl", "Which dojo near the NYSE has classes at 7 pm?", [
        ("Orchestrator", "Please search for martial arts schools near the New York Stock Exchange."),
        ("WebSurfer", "I typed 'martial arts schools near the New York Stock Exchange' into '0 characters out of 2000'."
                      "\n\nHere is a screenshot of [search](https://www.bing.com/search?q=dojo). <Image>"),
        ("Orchestrator", "The answer is **Renzo Gracie Wall Street**."),
    ])
    [run] = analyze_json(path, "--all-failed")["runs"]
    assert run["errors"], "the failed run names a place"
    assert not any("2000" in e["reason"] for e in run["errors"])


def test_a_value_a_browsing_agent_states_is_a_weaker_place(tmp_path):
    # WebSurfer summarises a page it read whole; the trace shows only its viewport: the value may be
    # on the page, so that place ranks below a value made up by an agent whose inputs are all seen
    path = _group_chat(tmp_path / "chat.jsonl", "What was Apple's all-time high closing price?", [
        ("Orchestrator", "Please open Apple's stock price history."),
        ("WebSurfer", "I clicked 'Stock Price History'.\n\nHere is a screenshot of [AAPL](https://x.test). The "
                      "viewport shows 17% of the webpage.\n<Image>"),
        ("WebSurfer", "The page says the all-time high close was $259.02 on December 26, 2024."),
        ("Assistant", "Adjusted for the split, the high is 261.40."),
        ("Orchestrator", "The answer is **261.40**."),
    ])
    [run] = analyze_json(path, "--all-failed")["runs"]
    assert (run["origin"]["agent"], run["origin"]["step_index"]) == ("Assistant", 3)
    made_up = {e["agent"]: e["reason"] for e in run["errors"] if "no earlier input" in e["reason"]}
    assert "states 261.4" in made_up["Assistant"] and "it browses" not in made_up["Assistant"]
    assert "259.02" in made_up["WebSurfer"] and "it browses" in made_up["WebSurfer"]


def test_a_value_in_an_address_is_not_made_up(tmp_path):
    path = _group_chat(tmp_path / "chat.jsonl", "Which series has the lowest rating?", [
        ("Orchestrator", "Please search for the series' ratings."),
        ("WebSurfer", "I opened https://www.bing.com/search?q=ratings&sp=-1&lq=0&ghacc=0 and the page lists "
                      "the ratings."),
        ("Orchestrator", "The lowest rated is **Gulf War 17**."),
    ])
    [run] = analyze_json(path, "--all-failed")["runs"]
    assert not any("&lq" in e["reason"] or "ghacc" in e["reason"] for e in run["errors"])
    assert not any(e["agent"] == "WebSurfer" and "states" in e["reason"] for e in run["errors"])


@pytest.mark.parametrize("arguments, made_up", [
    ('{"order_id": "A1020"}', ["A1020"]),  # an id the run never saw
    ('{"to": "ana@exmple.com", "body": "your receipt"}', ["ana@exmple.com"]),  # an address it is sent to
    ('{"order_id": "A1002"}', []),  # the task's own id
    ('{"code": "x = 4117\\nprint(x * 2)"}', []),  # code: what it computes is the model's, read elsewhere
    ('{"q": "ridership of line 4117 in May 2019"}', []),  # a query of many words is text it composed
    ('{"url": "https://example.test/p/4117"}', []),  # an address it visits names a page, no fact
    ('{"items": [{"sku": "SKU-9", "qty": 7}]}', ["SKU-9"]),  # nested values are values too (7: too short to tell)
])
def test_a_calls_made_up_argument(arguments, made_up):
    known = detectors.distinctive_values("what is the status of order A1002?")
    assert values._made_up_arguments(arguments, set(known), detectors.Received([])) == made_up


def test_a_call_with_a_value_never_seen_is_charged_to_the_step_that_made_it(server, tmp_path):
    path = record_run(server, tmp_path / "t.jsonl", "who leads my team? I am user U-1", [
        call("get_user", user_id="U-1"), call("get_team", team_id="T-40"), {"content": "Your team lead is Bo Chen."}],
        {"get_user": lambda user_id: {"id": user_id, "team": "T-4"},
         "get_team": lambda team_id: {"team": team_id, "lead": "Bo Chen"}})
    [run] = analyze_json(path, "--all-failed")["runs"]
    assert run["origin"]["step_index"] == 1 and run["origin"]["error_type"] == "fabricated_value"
    [entry] = [e for e in run["errors"] if e["span_id"] == run["origin"]["span_id"]]
    assert entry["reason"] == ("agent_step 1 called get_team with T-40, which no earlier input, instruction or result "
                               "contained") and run["bug_class"] == "model_decision"


@pytest.mark.parametrize("expected, text, held", [
    (108, '{"subtotal": 100.0, "total": 108.0}', True),
    ("$108.00", '{"total": 108.0}', True),
    ("2026-11-03", '{"ordered": "2026-11-01", "shipped": "2026-11-03"}', True),
    ("Ida Moe", '{"lead": "Ida Moe"}', True),
    ("Ida Moe", '{"lead": "Idamoe"}', False),
    (["Ida Moe", "I. Moe"], "lead: I. Moe", True),
    (108, '{"total": 1080}', False),
])
def test_a_text_holds_the_expected_answer(expected, text, held):
    from otel_agent_trace import answers

    assert answers.holds(expected, text) is held


def _dropped(expected, turns, task="What is the mean order value?"):
    from otel_agent_trace.analyzer.expected import Expectation
    from otel_agent_trace.analyzer.spans import Span

    sequence, last_code = [], None
    for i, (agent, text, observation) in enumerate(turns):
        span = Span("t", f"{i:016x}", None, f"chat {agent}", i, i + 1)
        turn = silent.Turn(span, agent, text, observation, last_code if observation else None, i)
        if not observation:
            last_code = turn
        sequence.append(turn)
    return answer.answer_dropped(sequence, task, Expectation(expected))


def test_an_expected_answer_a_result_held_and_the_answer_dropped():
    run = [("Analyst", "```python\nprint(orders['value'].mean())\n```", False),
           ("Computer_terminal", "exitcode: 0 (execution succeeded)\nCode output: 73.25", True),
           ("Analyst", "The mean order value is **72.5**. TERMINATE", False)]
    [found] = _dropped(73.25, run)
    assert found.agent == "Analyst" and found.span.name == "chat Analyst" and found.span.start_ns == 2
    assert found.reason == ('the expected answer 73.25 came back in the result of chat Computer_terminal; '
                            'chat Analyst, which read it, answers otherwise') and found.bug_class == "model_decision"
    # not when the answer is too short to tell from chance, or the task names it (a choice)
    assert _dropped(3, [*run[:1], (run[1][0], "Code output: 3 rows, 73.25", True), run[2]]) == []
    assert _dropped(73.25, run, task="Is the mean 73.25 or 72.5?") == []
    # not when another agent stated it in the chat (a claim the others may doubt), nor when a
    # decision goes on after the result (it may use the value later)
    assert _dropped(73.25, [("Planner", "I think it is 73.25.", False), run[2]]) == []
    assert _dropped(73.25, [*run[:2], ("Analyst", "Let me check the outliers first.", False), run[2]]) == []


@pytest.mark.parametrize("tool, forms", [
    ("send_email", ["sent", "emailed"]), ("book_slot", ["booked"]), ("cancelOrder", ["cancelled", "canceled"]),
    ("pay_invoice", ["paid"]), ("notify_customer", ["notified"]), ("archive_note", ["archived"]),
    ("create_ticket", ["created"]),
])
def test_how_an_answer_says_a_tools_action_is_done(tool, forms):
    assert work._done_forms(tool) == forms


@pytest.mark.parametrize("answer, claimed", [
    ("Order A1 is refunded and the customer has been emailed.", True),
    ("Done: I sent the receipt to the customer. Anything else?", True),
    ("Order A1 is refunded; the customer has not been emailed yet.", False),
    ("Order A1 is refunded. I was unable to reach the mail service, so nothing was sent.", False),
    ("Order A1 is refunded; the customer will be emailed once the refund clears.", False),
    ("Order A1 is refunded, and I'll make sure the customer is emailed today.", False),
    ("Order A1 is refunded.", False),
])
def test_an_action_the_answer_claims_that_no_tool_did(server, tmp_path, answer, claimed):
    path = record_run(server, tmp_path / "t.jsonl", "refund order A1 and email the customer", [
        call("refund_order", order_id="A1"), {"content": answer}],
        {"refund_order": lambda order_id: {"order": order_id, "refunded": 25.0},
         "send_email": lambda to, body: {"sent": True}})
    [run] = analyze_json(path, "--all-failed")["runs"]
    found = [e for e in run["errors"] if "the tool that does it, was never called" in e["reason"]]
    assert bool(found) is claimed, run["errors"]
    if claimed:
        assert "but send_email, the tool that does it, was never called" in found[0]["reason"]
        assert found[0]["step_index"] == 1 and found[0]["bug_class"] == "model_decision"
    [quiet] = analyze_json(path)["runs"]
    assert quiet["status"] == "ok"  # a suspicion only where the run is known to have failed


@pytest.mark.parametrize("result, more", [
    ('{"tickets": ["T1"], "next_page": 2}', "next_page: 2"),
    ('{"members": ["Ann"], "has_more": true, "next_cursor": "c2"}', 'has_more: true'),
    ('{"data": {"items": [1], "nextPageToken": "x9"}}', 'nextPageToken: "x9"'),
    ('{"tickets": ["T4"], "next_page": null}', None),  # the last page
    ('{"has_more": false, "items": []}', None),
    ('{"text": "read the next chapter"}', None),  # a word in the data, no field
    ("next page: 2", None),  # not JSON
])
def test_a_result_that_announces_more(result, more):
    assert work._more_announced(result) == more


def test_a_page_announced_and_never_fetched(server, tmp_path):
    pages = {1: {"tickets": ["T1", "T2", "T3"], "next_page": 2}, 2: {"tickets": ["T4"], "next_page": None}}
    tools = {"list_tickets": lambda status, page=1: pages[page]}
    stopped = record_run(server, tmp_path / "stopped.jsonl", "how many open tickets are there?", [
        call("list_tickets", status="open", page=1), {"content": "There are 3 open tickets."}], tools)
    [run] = analyze_json(stopped, "--all-failed")["runs"]
    assert run["origin"]["step_index"] == 1 and run["origin"]["error_type"] == "unread_page"
    assert run["bug_class"] == "model_decision"
    assert any(e["reason"].startswith("the result of execute_tool list_tickets announces more (next_page: 2), which "
                                      "no later call asked for; agent_step 1, which read it, went on without it")
               for e in run["errors"])
    # the same wrong count after both pages: the announcement was followed, another signal speaks
    both = record_run(server, tmp_path / "both.jsonl", "how many open tickets are there?", [
        call("list_tickets", status="open", page=1), call("list_tickets", status="open", page=2),
        {"content": "There are 3 open tickets."}], tools)
    [run] = analyze_json(both, "--all-failed")["runs"]
    assert not any("announces more" in e["reason"] for e in run["errors"])
