"""Failures that raise nothing, recorded by our own recorder (issue 27 §2): single-agent runs
whose answer is wrong while every call succeeded, each with the step a person would blame.

Each entry: the user's request, the scripted model turns, the tools (run in-process), the
expected answer (what `analyze --expected` compares the final answer with), the gold step (the
`step_index` of the model call that made the decisive mistake: 0 is the first call) and the bug
kind (seed 000). `tests/test_silent_corpus.py` records them through the real openai and
anthropic clients; `bench/bench_silent.py` scores the CLI's JSON on them.

The gold is what the run shows, not what the analyzer can find: the cases were written from
the kinds of mistake a tool-calling loop makes (`KINDS`), before the analyzer was run on them,
and some (the right value said of the wrong thing) leave nothing in the text that a rule can
check; the bench reports them, per kind, as they score."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Callable

from scenario_agent import call, record_run


@dataclass(frozen=True)
class Case:
    user: str
    turns: list
    tools: Callable[[], dict[str, Callable[..., Any]]]
    expected: str
    gold_step: int
    bug_class: str
    kind: str  # which of `KINDS` the mistake is
    held_out: bool = False  # written after the signals were, and run once: the check that they generalise


# the kinds of mistake, as the bench groups them
STATED = "states a value it never received"
CALLED = "calls a tool with a value it never saw"
STOPPED = "answers before it has all it asked for"
MISREAD = "had the right data, concluded wrong"
KINDS = (STATED, CALLED, STOPPED, MISREAD)


def _corpus() -> dict[str, Case]:
    md = "model_decision"
    return {
        # --- the answer states a value the run never received ---------------------------------
        "misread price": Case(
            "what does SKU-10 cost?",
            [call("get_price", sku="SKU-10"), {"content": "SKU-10 costs $45.20."}],
            lambda: {"get_price": lambda sku: {"sku": sku, "price": 42.5}}, "$42.50", 1, md, STATED),
        "stock made up after a skipped lookup": Case(
            "what are the price and the stock of SKU-3?",
            [call("get_price", sku="SKU-3"), {"content": "SKU-3 costs $9.99 and 14 are in stock."}],
            lambda: {"get_price": lambda sku: {"sku": sku, "price": 9.99},
                     "check_inventory": lambda sku: {"sku": sku, "stock": 3}},
            "SKU-3 costs $9.99 and 3 are in stock", 1, md, STATED),
        "a wrong sum": Case(
            "what is the total of cart K-1?",
            [call("get_cart", cart="K-1"), {"content": "The total of cart K-1 is $23.25."}],
            lambda: {"get_cart": lambda cart: {"items": [{"name": "mug", "price": 12.5}, {"name": "pen", "price": 7.25},
                                                         {"name": "pad", "price": 3.0}]}},
            "$22.75", 1, md, STATED),
        "balance answered without a lookup": Case(
            "what is the balance of account 77?",
            [{"content": "The balance of account 77 is $1,240.00."}],
            lambda: {"get_balance": lambda account: {"account": account, "balance": 310.0}}, "$310.00", 0, md, STATED),
        "a ship date one day off": Case(
            "when does order A41 ship?",
            [call("get_order", order_id="A41"), {"content": "Order A41 ships on 2026-11-08."}],
            lambda: {"get_order": lambda order_id: {"order": order_id, "ordered": "2026-11-02", "ships_in_days": 5}},
            "2026-11-07", 1, md, STATED),
        "three empty searches, then a figure": Case(
            "what is the capital reserve of Fund F-2?",
            [call("search_reports", q="F-2 capital reserve"), call("search_reports", q="Fund F-2 reserve"),
             call("search_reports", q="F-2 annual report"), {"content": "The capital reserve of Fund F-2 is $4.1M."}],
            lambda: {"search_reports": lambda q: []}, "unknown", 3, md, STATED),
        "a count over three pages, one page left out": Case(
            "how many devices are registered to site S-9?",
            [call("list_devices", site="S-9", page=1), call("list_devices", site="S-9", page=2),
             call("list_devices", site="S-9", page=3), {"content": "Site S-9 has 11 registered devices."}],
            lambda: {"list_devices": lambda site, page: {1: ["d1", "d2", "d3", "d4", "d5"],
                                                         2: ["d6", "d7", "d8", "d9", "d10"], 3: ["d11", "d12"]}[page]},
            "12", 3, md, STATED),
        # --- a call the model made with a value it never saw ----------------------------------
        "a typo in the order id": Case(
            "what is the status of order A1002?",
            [call("lookup_order", order_id="A1020"), {"content": "Order A1002 is cancelled."}],
            lambda: {"lookup_order": lambda order_id: {"order": order_id, "status": "cancelled"}}, "shipped", 0, md, CALLED),
        "an email address mistyped in the second call": Case(
            "email customer C-12 their receipt",
            [call("get_customer", customer_id="C-12"), call("send_email", to="ana@exmple.com", body="your receipt"),
             {"content": "I sent the receipt to ana@example.com."}],
            lambda: {"get_customer": lambda customer_id: {"id": customer_id, "email": "ana@example.com"},
                     "send_email": lambda to, body: {"sent": True}},
            "sent to ana@example.com", 1, md, CALLED),
        "a slot that was not offered": Case(
            "book the earliest slot with Dr. Lee",
            [call("get_slots", doctor="Lee"), call("book_slot", doctor="Lee", slot="2026-12-07 09:00"),
             {"content": "You are booked with Dr. Lee on 2026-12-07 at 09:00."}],
            lambda: {"get_slots": lambda doctor: ["2026-12-08 09:00", "2026-12-08 11:00"],
                     "book_slot": lambda doctor, slot: {"booked": True, "slot": slot}},
            "2026-12-08 09:00", 1, md, CALLED),
        "the wrong team looked up": Case(
            "who leads my team? I am user U-1",
            [call("get_user", user_id="U-1"), call("get_team", team_id="T-40"), {"content": "Your team lead is Bo Chen."}],
            lambda: {"get_user": lambda user_id: {"id": user_id, "team": "T-4"},
                     "get_team": lambda team_id: {"team": team_id, "lead": "Bo Chen" if team_id == "T-40" else "Ida Moe"}},
            "Ida Moe", 1, md, CALLED),
        "ten times the quantity ordered": Case(
            "order 3 units of SKU-5",
            [call("place_order", sku="SKU-5", quantity=30), {"content": "I ordered 3 units of SKU-5."}],
            lambda: {"place_order": lambda sku, quantity: {"ok": True, "order": "P-118"}}, "3 units", 0, md, CALLED),
        # --- the run stopped before it had what the answer needs ------------------------------
        "stopped after the first page": Case(
            "how many open tickets are there?",
            [call("list_tickets", status="open", page=1), {"content": "There are 3 open tickets."}],
            lambda: {"list_tickets": lambda status, page=1: {"tickets": ["T1", "T2", "T3"] if page == 1 else ["T4", "T5"],
                                                               "next_page": 2 if page == 1 else None}},
            "5", 1, md, STOPPED),
        "a cursor left unread": Case(
            "list every admin of workspace W-2",
            [call("list_members", workspace="W-2", role="admin"),
             {"content": "The admins of W-2 are Ann and Raj."}],
            lambda: {"list_members": lambda workspace, role, cursor=None: {
                "members": ["Ann", "Raj"], "has_more": True, "next_cursor": "c2"}},
            "Ann, Raj, Lia", 1, md, STOPPED),
        # --- the right data, the wrong conclusion --------------------------------------------
        "the wrong record of a list": Case(
            "has order A2 shipped?",
            [call("list_orders", customer="C-5"), {"content": "Yes, order A2 has shipped."}],
            lambda: {"list_orders": lambda customer: [{"order": "A1", "status": "shipped"},
                                                      {"order": "A2", "status": "pending"}]},
            "no", 1, md, MISREAD),
        "the subtotal given as the total": Case(
            "what is the total of invoice INV-3?",
            [call("get_invoice", invoice="INV-3"), {"content": "The total of invoice INV-3 is $100.00."}],
            lambda: {"get_invoice": lambda invoice: {"subtotal": 100.0, "tax": 8.0, "total": 108.0}},
            "$108.00", 1, md, MISREAD),
        "Celsius read as Fahrenheit": Case(
            "how warm is it in Oslo?",
            [call("get_weather", city="Oslo"), {"content": "It is 22°F in Oslo."}],
            lambda: {"get_weather": lambda city: {"city": city, "temp_c": 22}}, "22°C", 1, md, MISREAD),
        "a price before the discount": Case(
            "what will I pay for SKU-8 with my 10% coupon?",
            [call("get_price", sku="SKU-8"), call("apply_coupon", sku="SKU-8", percent=10),
             {"content": "You will pay $42.50 for SKU-8."}],
            lambda: {"get_price": lambda sku: {"sku": sku, "price": 42.5},
                     "apply_coupon": lambda sku, percent: {"sku": sku, "price": 38.25}},
            "$38.25", 2, md, MISREAD),
        "the order date given as the ship date": Case(
            "when did order A5 ship?",
            [call("get_order", order_id="A5"), {"content": "Order A5 shipped on 2026-11-01."}],
            lambda: {"get_order": lambda order_id: {"order": order_id, "ordered": "2026-11-01", "shipped": "2026-11-03"}},
            "2026-11-03", 1, md, MISREAD),
        "the dearer item called cheaper": Case(
            "which is cheaper, SKU-1 or SKU-2?",
            [call("get_price", sku="SKU-1"), call("get_price", sku="SKU-2"),
             {"content": "SKU-1 is cheaper, at $10.00."}],
            lambda: {"get_price": lambda sku: {"sku": sku, "price": 10.0 if sku == "SKU-1" else 8.0}},
            "SKU-2", 2, md, MISREAD),
        "a declined payment reported as paid": Case(
            "pay invoice INV-9",
            [call("pay_invoice", invoice="INV-9"), {"content": "Invoice INV-9 is paid."}],
            lambda: {"pay_invoice": lambda invoice: {"invoice": invoice, "status": "failed", "reason": "card declined"}},
            "the payment was declined", 1, md, MISREAD),
        "an email claimed but never sent": Case(
            "refund order A1 and email the customer that it is done",
            [call("refund_order", order_id="A1"), {"content": "Order A1 is refunded and the customer has been emailed."}],
            lambda: {"refund_order": lambda order_id: {"order": order_id, "refunded": 25.0},
                     "send_email": lambda to, body: {"sent": True}},
            "refunded and emailed", 1, md, STOPPED),
    }


def _held_out() -> dict[str, Case]:
    """Cases written after this corpus's signals were built (seventeenth session), and scored as
    they came: the check that the signals hold on cases they were not made for."""
    md = "model_decision"
    return {
        "a flight number mistyped": Case(
            "what is the status of flight LH 455 on 2026-12-09?",
            [call("flight_status", flight="LH545", date="2026-12-09"), {"content": "LH 455 is delayed."}],
            lambda: {"flight_status": lambda flight, date: {"flight": flight, "status": "delayed"}},
            "on time", 0, md, CALLED, True),
        "an average taken over two of three readings": Case(
            "what is the average reading of sensor S-4?",
            [call("get_readings", sensor="S-4"), {"content": "The average reading of S-4 is 21.5 °C."}],
            lambda: {"get_readings": lambda sensor: {"sensor": sensor, "readings": [20.5, 21.0, 22.5]}},
            "21.33", 1, md, STATED, True),
        "a display name respelled": Case(
            "set my display name to the name on my profile; I am U-9",
            [call("get_profile", user_id="U-9"), call("update_profile", user_id="U-9", display_name="John Smith"),
             {"content": "Your display name is now Jon Smyth."}],
            lambda: {"get_profile": lambda user_id: {"id": user_id, "name": "Jon Smyth"},
                     "update_profile": lambda user_id, display_name: {"ok": True}},
            "display name Jon Smyth", 1, md, CALLED, True),
        "a hotel booked for the next night": Case(
            "book Hotel Astra for the night of 2026-12-20",
            [call("book_hotel", hotel="Astra", night="2026-12-21"),
             {"content": "Booked Hotel Astra for 2026-12-20, confirmation HA-77."}],
            lambda: {"book_hotel": lambda hotel, night: {"confirmation": "HA-77", "night": night}},
            "booked for 2026-12-20", 0, md, CALLED, True),
        "a stock figure from before the refresh": Case(
            "how many SKU-7 are in stock right now?",
            [call("get_stock", sku="SKU-7"), call("refresh_stock", sku="SKU-7"), {"content": "SKU-7 has 12 in stock."}],
            lambda: {"get_stock": lambda sku: {"sku": sku, "stock": 12, "as_of": "2026-12-01"},
                     "refresh_stock": lambda sku: {"sku": sku, "stock": 4, "as_of": "2026-12-06"}},
            "4", 2, md, MISREAD, True),
        "a refund of ten times the total": Case(
            "refund order A7 in full",
            [call("get_order", order_id="A7"), call("refund", order_id="A7", amount=400.0),
             {"content": "Refunded $400.00 for order A7."}],
            lambda: {"get_order": lambda order_id: {"order": order_id, "total": 40.0},
                     "refund": lambda order_id, amount: {"refunded": amount}},
            "$40.00", 1, md, CALLED, True),
        "a port number changed in the answer": Case(
            "how do I set up the VPN?",
            [call("search_docs", q="vpn setup"), call("get_doc", doc_id="D-12"),
             {"content": "Use the Corp-VPN client on port 8443."}],
            lambda: {"search_docs": lambda q: [{"title": "VPN guide", "id": "D-12"}],
                     "get_doc": lambda doc_id: {"text": "Use the Corp-VPN client, port 443."}},
            "443", 2, md, STATED, True),
        "a cancellation claimed, never made": Case(
            "cancel my subscription SUB-3 and tell me the refund",
            [call("get_subscription", subscription_id="SUB-3"),
             {"content": "Your subscription SUB-3 is cancelled and $12.50 will be refunded."}],
            lambda: {"get_subscription": lambda subscription_id: {"plan": "pro", "refund_due": 12.5},
                     "cancel_subscription": lambda subscription_id: {"cancelled": True}},
            "cancelled", 1, md, STOPPED, True),
        "a total over the first page of invoices": Case(
            "how much do I owe in total?",
            [call("list_invoices", page=1), {"content": "You owe $150.00 in total."}],
            lambda: {"list_invoices": lambda page=1: {"invoices": [{"id": "I1", "amount": 100}, {"id": "I2", "amount": 50}],
                                                      "has_more": True} if page == 1 else
                     {"invoices": [{"id": "I3", "amount": 80}], "has_more": False}},
            "$230.00", 1, md, STOPPED, True),
        "a rate divided instead of multiplied": Case(
            "how many euros are 100 US dollars?",
            [call("get_rate", base="USD", quote="EUR"), {"content": "100 USD is 108.70 EUR."}],
            lambda: {"get_rate": lambda base, quote: {"base": base, "quote": quote, "rate": 0.92}},
            "92", 1, md, MISREAD, True),
        "the weather of the wrong Paris": Case(
            "what is the weather in Paris, Texas?",
            [call("get_weather", city="Paris", country="FR"), {"content": "It is 9 °C in Paris, Texas."}],
            lambda: {"get_weather": lambda city, country: {"city": city, "country": country, "temp_c": 9}},
            "17 °C", 0, md, CALLED, True),
        "the runner-up named the winner": Case(
            "who won race R-5?",
            [call("get_results", race="R-5"), {"content": "Ana won race R-5."}],
            lambda: {"get_results": lambda race: {"results": [{"driver": "Ana", "pos": 2}, {"driver": "Bea", "pos": 1}]}},
            "Bea", 1, md, MISREAD, True),
    }


CORPUS = {**_corpus(), **_held_out()}


def record_all(tmp: str, clients: list[str], cases: dict[str, Case] | None = None
               ) -> tuple[str, str, dict[str, tuple[str, str]]]:
    """Every case through every client, each run recorded by our exporter: one trace file, one
    `--expected` file (keyed by trace id), and trace id -> (case, client)."""
    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    traces, expected = os.path.join(tmp, "traces.jsonl"), os.path.join(tmp, "expected.jsonl")
    runs: dict[str, tuple[str, str]] = {}
    with ScriptedOpenAIServer({}) as server, open(traces, "w", encoding="utf-8") as out, \
            open(expected, "w", encoding="utf-8") as answers:
        for client in clients:
            for name, case in (CORPUS if cases is None else cases).items():
                one = os.path.join(tmp, f"{client}-{len(runs)}.jsonl")
                record_run(server, one, case.user, case.turns, case.tools(), client=client)
                with open(one, encoding="utf-8") as handle:
                    text = handle.read()
                [trace_id] = {s["traceId"] for line in text.splitlines() for rs in json.loads(line)["resourceSpans"]
                              for ss in rs["scopeSpans"] for s in ss["spans"]}
                runs[trace_id] = (name, client)
                out.write(text)
                answers.write(json.dumps({"trace_id": trace_id, "answer": case.expected}) + "\n")
    return traces, expected, runs
