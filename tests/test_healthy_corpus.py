"""Quiet on healthy runs (issue 27 §4): a corpus of healthy runs, each recorded through the real
openai client and the real anthropic client against the scripted server with our exporter, analysed by the CLI as a user runs
it. Retries, fallbacks to another tool, pagination that ends on an empty page, optional lookups
that find nothing, clarifying questions, values restated (a price rounded, a timestamp in words):
none is `failed` or `suspect`. And failures shaped like them (`NOT_HEALTHY`) still are."""

from __future__ import annotations

import pytest
from scenario_agent import analyze_json, call, record_run

from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer


def _flaky(result, failures=1, exc=TimeoutError("timed out")):
    """A tool that raises `failures` times, then returns `result`."""
    calls = []

    def tool(**kwargs):
        calls.append(kwargs)
        if len(calls) <= failures:
            raise exc
        return result

    return tool


def _pages(pages):
    return lambda page=1, **kw: pages[page - 1] if page <= len(pages) else []


def _timeout(**kwargs):
    raise TimeoutError("price service timed out")


def _corpus():
    return {
        "retry after a timeout": (
            "what does SKU-10 cost?",
            [call("get_price", sku="SKU-10"), call("get_price", sku="SKU-10"), {"content": "SKU-10 costs $42.50."}],
            lambda: {"get_price": _flaky({"sku": "SKU-10", "price": 42.5})}),
        "two retries after resets": (
            "how many SKU-11 are in stock?",
            [call("check_inventory", sku="SKU-11")] * 3 + [{"content": "There are 17 of SKU-11 in stock."}],
            lambda: {"check_inventory": _flaky({"sku": "SKU-11", "stock": 17}, 2, ConnectionError("reset"))}),
        "price lookup times out, price read from the catalogue": (
            "what does SKU-12 cost?",
            [call("get_price", sku="SKU-12"), call("read_catalogue", sku="SKU-12"),
             {"content": "SKU-12 costs $19.99 according to the catalogue."}],
            lambda: {"get_price": _timeout, "read_catalogue": lambda sku: {"sku": sku, "price": 19.99}}),
        "search errors, the archive answers": (
            "when was order A1001 shipped?",
            [call("search_orders", q="A1001"), call("search_archive", q="A1001"),
             {"content": "Order A1001 was shipped on 2026-11-02."}],
            lambda: {"search_orders": lambda q: "Error: rate limited",
                     "search_archive": lambda q: {"order": "A1001", "shipped": "2026-11-02"}}),
        "profile service 503, the v2 endpoint works": (
            "what tier is customer C-77?",
            [call("fetch_profile", customer_id="C-77"), call("fetch_profile_v2", customer_id="C-77"),
             {"content": "Customer C-77 is on the gold tier."}],
            lambda: {"fetch_profile": lambda customer_id: {"status": 503, "error": "unavailable"},
                     "fetch_profile_v2": lambda customer_id: {"id": customer_id, "tier": "gold"}}),
        "weather times out, the cached copy answers": (
            "what is the temperature in Lyon?",
            [call("get_weather", city="Lyon"), call("get_cached_weather", city="Lyon"),
             {"content": "It is 14 degrees in Lyon (cached 10 minutes ago)."}],
            lambda: {"get_weather": lambda city: (_ for _ in ()).throw(TimeoutError("weather timed out")),
                     "get_cached_weather": lambda city: {"city": city, "celsius": 14, "age_minutes": 10}}),
        "pagination ends on an empty page": (
            "list every open ticket",
            [call("list_items", page=1), call("list_items", page=2),
             {"content": "Open tickets: T-101 and T-102."}],
            lambda: {"list_items": _pages([[{"id": "T-101"}, {"id": "T-102"}]])}),
        "three pages then an empty one": (
            "list every invoice",
            [call("list_items", page=1), call("list_items", page=2), call("list_items", page=3),
             call("list_items", page=4), {"content": "Invoices: INV-201, INV-202, INV-203."}],
            lambda: {"list_items": _pages([[{"id": "INV-201"}], [{"id": "INV-202"}], [{"id": "INV-203"}]])}),
        "search with results on the first page only": (
            "find products named lamp",
            [call("search_products", q="lamp", page=1), call("search_products", q="lamp", page=2),
             {"content": "Two lamps: P-311 and P-312."}],
            lambda: {"search_products": lambda q, page: [{"id": "P-311"}, {"id": "P-312"}] if page == 1 else []}),
        "offset pagination ends empty": (
            "list the users",
            [call("list_users", offset=0), call("list_users", offset=50), {"content": "Users: U-1001 and U-1002."}],
            lambda: {"list_users": lambda offset: {"users": ["U-1001", "U-1002"]} if offset == 0 else {"users": []}}),
        "optional coupon lookup finds nothing": (
            "what is the total of order A1003?",
            [call("get_order", order_id="A1003"), call("get_coupons", order_id="A1003"),
             {"content": "Order A1003 totals $25.00 (no coupon applies)."}],
            lambda: {"get_order": lambda order_id: {"id": order_id, "total": 25.0},
                     "get_coupons": lambda order_id: []}),
        "optional discount is null": (
            "how much is the annual plan?",
            [call("get_plan", name="annual"), call("get_discount", name="annual"),
             {"content": "The annual plan costs $120.00."}],
            lambda: {"get_plan": lambda name: {"name": name, "price": 120.0}, "get_discount": lambda name: None}),
        "first warehouse empty, second has stock": (
            "is SKU-30 available?",
            [call("check_warehouse", sku="SKU-30", warehouse="north"),
             call("check_warehouse", sku="SKU-30", warehouse="south"),
             {"content": "Yes: 12 of SKU-30 in the south warehouse."}],
            lambda: {"check_warehouse": lambda sku, warehouse: [] if warehouse == "north" else
                     [{"sku": sku, "stock": 12, "warehouse": warehouse}]}),
        "clarifying question, no tools": (
            "refund my order",
            [{"content": "Which order would you like refunded? Please give me its number."}],
            lambda: {"lookup_order": lambda order_id: {"id": order_id}}),
        "clarifying question after a lookup": (
            "refund my latest order",
            [call("list_orders", customer="me"),
             {"content": "You have orders A1001 and A1003. Which one should I refund?"}],
            lambda: {"list_orders": lambda customer: {"orders": ["A1001", "A1003"]}}),
        "greeting": ("hello", [{"content": "Hello! How can I help you today?"}], lambda: {}),
        "two lookups then an answer": (
            "refund Ada's latest order",
            [call("get_customer", name="Ada"), call("get_latest_order", customer_id="C-77"),
             {"content": "Ada's latest order O-5521 totals $25.00."}],
            lambda: {"get_customer": lambda name: {"id": "C-77", "name": name},
                     "get_latest_order": lambda customer_id: {"id": "O-5521", "total": 25.0}}),
        "one lookup per item": (
            "prices of SKU-1 and SKU-2?",
            [call("get_price", sku="SKU-1"), call("get_price", sku="SKU-2"),
             {"content": "SKU-1 costs $11.00 and SKU-2 costs $12.00."}],
            lambda: {"get_price": lambda sku: {"sku": sku, "price": 11.0 if sku == "SKU-1" else 12.0}}),
        "a wrong id corrected": (
            "status of order A1001?",
            [call("lookup_order", order_id="1001"), call("lookup_order", order_id="A1001"),
             {"content": "Order A1001 is shipped."}],
            lambda: {"lookup_order": lambda order_id: {"id": order_id, "state": "shipped"} if order_id == "A1001"
                     else {"error": "order not found"}}),
        "calculator used twice": (
            "what is 17 times 23, plus 100?",
            [call("multiply", a=17, b=23), call("add", a=391, b=100), {"content": "17 x 23 + 100 = 491."}],
            lambda: {"multiply": lambda a, b: {"result": a * b}, "add": lambda a, b: {"result": a + b}}),
        "retry with a longer timeout after a timeout": (
            "fetch report R-9",
            [call("fetch_report", report_id="R-9", timeout=5), call("fetch_report", report_id="R-9", timeout=30),
             {"content": "Report R-9 has 250 rows."}],
            lambda: {"fetch_report": lambda report_id, timeout: {"id": report_id, "rows": 250} if timeout > 5
                     else (_ for _ in ()).throw(TimeoutError("report timed out"))}),
        "a price rounded in the answer": (
            "what does SKU-14 cost, roughly?",
            [call("get_price", sku="SKU-14"), {"content": "SKU-14 costs $19.99, so about $20."}],
            lambda: {"get_price": lambda sku: {"sku": sku, "price": 19.987}}),
        "a timestamp restated in words": (
            "when did order A1001 ship?",
            [call("lookup_order", order_id="A1001"),
             {"content": "Order A1001 shipped on November 2, 2026 at 14:30."}],
            lambda: {"lookup_order": lambda order_id: {"id": order_id, "shipped_at": "2026-11-02T14:30:00Z"}}),
        "an amount converted at the rate a tool returned": (
            "what is 100 USD in EUR?",
            [call("get_rate", base="USD", quote="EUR"), {"content": "100 USD is 92.00 EUR."}],
            lambda: {"get_rate": lambda base, quote: {"base": base, "quote": quote, "rate": 0.92}}),
        "a total with the tax rate a tool returned": (
            "what will order A1001 cost with tax?",
            [call("lookup_order", order_id="A1001"), call("get_tax_rate", region="CA"),
             {"content": "Order A1001 comes to $270.00 with tax."}],
            lambda: {"lookup_order": lambda order_id: {"id": order_id, "subtotal": 250.0, "region": "CA"},
                     "get_tax_rate": lambda region: {"region": region, "rate": "8%"}}),
        "a price after the coupon's discount": (
            "what does SKU-15 cost with coupon SAVE15?",
            [call("get_price", sku="SKU-15"), call("check_coupon", code="SAVE15"),
             {"content": "With SAVE15, SKU-15 costs $68.00."}],
            lambda: {"get_price": lambda sku: {"sku": sku, "price": 80.0},
                     "check_coupon": lambda code: {"code": code, "valid": True, "discount": 0.15}}),
        "a price over a thousand, its digits grouped": (
            "what does SKU-16 cost?",
            [call("get_price", sku="SKU-16"), {"content": "SKU-16 costs $1,299.00."}],
            lambda: {"get_price": lambda sku: {"sku": sku, "price": 1299.0}}),
        "a cart's total, quantities times prices": (
            "what does cart K-3 come to?",
            [call("get_cart", cart_id="K-3"), {"content": "Cart K-3 comes to $43.25."}],
            lambda: {"get_cart": lambda cart_id: {"id": cart_id, "items": [{"sku": "SKU-1", "qty": 2, "price": 12.5},
                                                                             {"sku": "SKU-2", "qty": 1, "price": 18.25}]}}),
        "the mean of the scores a tool returned": (
            "what is the average review score of SKU-17?",
            [call("get_reviews", sku="SKU-17"), {"content": "SKU-17's reviews average 82.67."}],
            lambda: {"get_reviews": lambda sku: {"sku": sku, "scores": [72, 85, 91]}}),
        "a week's pay from the hourly rate and the hours": (
            "what does contractor C-9 earn this week?",
            [call("get_timesheet", contractor_id="C-9"), {"content": "C-9 earns $1,687.50 this week."}],
            lambda: {"get_timesheet": lambda contractor_id: {"id": contractor_id, "hourly": 45.0, "hours": 37.5}}),
        "the last day of the return window": (
            "until when can I return order A1001?",
            [call("lookup_order", order_id="A1001"), {"content": "You can return order A1001 until 2026-12-17."}],
            lambda: {"lookup_order": lambda order_id: {"id": order_id, "delivered": "2026-11-02",
                                                        "return_window_days": 45}}),
        "a subscription's renewal a year on": (
            "when does my plan P-8 renew?",
            [call("get_plan", plan_id="P-8"), {"content": "Plan P-8 renews on 2027-01-15."}],
            lambda: {"get_plan": lambda plan_id: {"id": plan_id, "started": "2026-01-15", "billing": "yearly"}}),
        "a shipping date from the API's epoch timestamp": (
            "when did order A1002 ship?",
            [call("lookup_order", order_id="A1002"), {"content": "Order A1002 shipped on 2026-12-06."}],
            lambda: {"lookup_order": lambda order_id: {"id": order_id, "shipped_at": 1796558400}}),
        "a charge's day from a timestamp in milliseconds": (
            "when was charge ch_31 made?",
            [call("get_charge", charge_id="ch_31"), {"content": "Charge ch_31 was made on 2026-11-30."}],
            lambda: {"get_charge": lambda charge_id: {"id": charge_id, "created_ms": 1796040000000}}),
        "a temperature given in both scales": (
            "how warm is it in Austin?",
            [call("get_weather", city="Austin"), {"content": "It is 72°F (22.2°C) in Austin."}],
            lambda: {"get_weather": lambda city: {"city": city, "temp_f": 72}}),
        "a distance converted to miles": (
            "how far is the run route R-5?",
            [call("get_route", route_id="R-5"), {"content": "Route R-5 is 42.2 km (26.2 miles) long."}],
            lambda: {"get_route": lambda route_id: {"id": route_id, "distance_km": 42.2}}),
        "the second of the results named by its position": (
            "which hotel is second cheapest?",
            [call("search_hotels", city="Oslo"), {"content": "The 2nd cheapest is Hotel Bristol at 1,450 NOK."}],
            lambda: {"search_hotels": lambda city: [{"name": "Hotel Thon", "price": 1190},
                                                      {"name": "Hotel Bristol", "price": 1450}]}),
        "a count rounded to thousands": (
            "how popular is repo acme/widgets?",
            [call("get_repo", name="acme/widgets"), {"content": "acme/widgets has about 12.4k stars and 1.2k forks."}],
            lambda: {"get_repo": lambda name: {"name": name, "stargazers_count": 12391, "forks_count": 1187}}),
        "revenue in millions, in words": (
            "what was ACME's revenue last quarter?",
            [call("get_financials", ticker="ACME"), {"content": "ACME's revenue was $48.7 million last quarter."}],
            lambda: {"get_financials": lambda ticker: {"ticker": ticker, "revenue": 48713000}}),
        "a meeting time on a 12-hour clock": (
            "when is my next meeting?",
            [call("next_event"), {"content": "Your next meeting, Design review, starts at 2:30 PM on 2026-12-07."}],
            lambda: {"next_event": lambda: {"title": "Design review", "start": "2026-12-07T14:30:00"}}),
        "a ticket named by its number": (
            "what is the status of ticket GH-4521?",
            [call("get_ticket", key="GH-4521"), {"content": "Ticket 4521 is closed."}],
            lambda: {"get_ticket": lambda key: {"key": key, "status": "closed"}}),
        "a greeting answered directly": (
            "hi there!", [{"content": "Hello! How can I help you with your orders today?"}],
            lambda: {"lookup_order": lambda order_id: {}}),
        "general knowledge answered directly": (
            "what is the capital of France?", [{"content": "The capital of France is Paris."}],
            lambda: {"lookup_order": lambda order_id: {}}),
        "parallel calls, one times out, the other answers": (
            "what does SKU-20 cost?",
            [{"tool_calls": [{"name": "get_price", "arguments": {"sku": "SKU-20"}},
                             {"name": "get_price_v2", "arguments": {"sku": "SKU-20"}}]},
             {"content": "SKU-20 costs $11.50."}],
            lambda: {"get_price": _timeout, "get_price_v2": lambda sku: {"sku": sku, "price": 11.5}}),
        "a duration in minutes from seconds": (
            "how long is the drive to HQ?",
            [call("get_route", dest="HQ"), {"content": "The drive to HQ takes about 135 minutes."}],
            lambda: {"get_route": lambda dest: {"dest": dest, "duration_s": 8100}}),
        "an order the user named is not found, and the answer says so": (
            "where is order A9999?",
            [call("lookup_order", order_id="A9999"),
             {"content": "I could not find an order A9999. Could you check the number?"}],
            lambda: {"lookup_order": lambda order_id: {"error": "not found", "status": 404}}),
        "an empty list is the answer": (
            "do I have overdue invoices?",
            [call("list_overdue"), {"content": "You have no overdue invoices."}],
            lambda: {"list_overdue": lambda: []}),
        "an action that returns nothing": (
            "archive note N-12",
            [call("archive_note", note_id="N-12"), {"content": "Note N-12 is archived."}],
            lambda: {"archive_note": lambda note_id: None}),
        "a bill split evenly": (
            "we are 4: how much does each of us pay for table T-12?",
            [call("get_bill", table="T-12"), {"content": "The bill for T-12 is $120.00, so $30.00 each."}],
            lambda: {"get_bill": lambda table: {"table": table, "total": 120.0}}),
    }


CORPUS = _corpus()

# failures shaped like the healthy patterns above: what makes those healthy is missing
NOT_HEALTHY = {
    "a lookup finds nothing, the answer claims anyway": (
        "where is order A9999?",
        [call("lookup_order", order_id="A9999"), {"content": "Order A9999 shipped yesterday."}],
        lambda: {"lookup_order": lambda order_id: None}),
    "a lookup finds nothing, the answer makes up a date": (
        "where is order A9999?",
        [call("lookup_order", order_id="A9999"),
         {"content": "I could not find the tracking, but order A9999 shipped on 2026-11-28."}],
        lambda: {"lookup_order": lambda order_id: []}),
    "not found, the answer claims success": (
        "cancel order A9999",
        [call("cancel_order", order_id="A9999"), {"content": "Order A9999 is cancelled."}],
        lambda: {"cancel_order": lambda order_id: {"error": "order not found", "status": 404}}),
    "an action returns nothing, the answer makes up a number": (
        "archive note N-12",
        [call("archive_note", note_id="N-12"), {"content": "Note N-12 is archived as version 3181."}],
        lambda: {"archive_note": lambda note_id: None}),
}


@pytest.fixture(scope="module")
def server():
    with ScriptedOpenAIServer({}) as s:
        yield s


def test_the_corpus_has_twenty_variants():
    assert len(CORPUS) >= 20


@pytest.mark.parametrize("client", ["openai", "anthropic"])
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_a_healthy_run_is_neither_failed_nor_suspect(server, tmp_path, name, client):
    user, turns, tools = CORPUS[name]
    [run] = analyze_json(record_run(server, tmp_path / "t.jsonl", user, turns, tools(), client=client))["runs"]
    assert run["status"] == "ok", (run["status"], run["origin"], [(e["error_type"], e["reason"]) for e in run["errors"]])
    assert run["critical"] is None


@pytest.mark.parametrize("client", ["openai", "anthropic"])
@pytest.mark.parametrize("name", sorted(NOT_HEALTHY))
def test_a_failure_shaped_like_a_healthy_run_is_still_flagged(server, tmp_path, name, client):
    user, turns, tools = NOT_HEALTHY[name]
    [run] = analyze_json(record_run(server, tmp_path / "t.jsonl", user, turns, tools(), client=client))["runs"]
    assert run["status"] in ("suspect", "failed"), (run["status"], run["errors"])
    assert run["errors"]
