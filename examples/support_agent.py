"""A customer-support agent written as a plain tool loop with the real `openai` client.

It answers tickets about orders, shipping and refunds with four tools. It knows nothing about
tracing: run it under `opentelemetry-instrument` (see the README's `make demo`) and every ticket
becomes a trace. Its model is the scripted OpenAI-compatible server that ships with
otel-agent-trace (offline, deterministic); with OPENAI_BASE_URL / OPENAI_API_KEY set it talks to
that endpoint instead (and OPENAI_MODEL picks the model).

The four tickets of `main()` are the demo's scenarios:
  A1001  healthy refund: lookup -> calculate -> answer with the amount;
  A10O2  malformed order id (letter O): the lookup silently returns [] -> the model reads "no
         order" -> calculate_refund fails -> the answer lacks the amount -> the ticket fails;
  A1003  the carrier API times out once; the model retries and the run ends fine;
  A1004  the model asks for the same tracking again and again until the turn limit.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

MODEL = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
MAX_TURNS = 6
SYSTEM = (
    "You are a support agent for an online shop. Use the tools to look up orders, shipping and refunds. "
    "For a refund request, always state the refund amount in dollars."
)

ORDERS = {
    "A1001": {"order_id": "A1001", "customer": "Ada", "items": [{"sku": "MUG-1", "price": 12.5, "qty": 2}], "status": "delivered"},
    "A1003": {"order_id": "A1003", "customer": "Lin", "items": [{"sku": "LAMP-2", "price": 49.0, "qty": 1}], "status": "shipped"},
    "A1004": {"order_id": "A1004", "customer": "Sam", "items": [{"sku": "BOOK-3", "price": 18.0, "qty": 1}], "status": "processing"},
}
_carrier_calls: dict[str, int] = {}


# --- tools --------------------------------------------------------------------------------------
def lookup_order(order_id: str) -> Any:
    """The legacy order service: an unknown or malformed id yields an empty list, not an error."""
    order = ORDERS.get(order_id)
    return [order] if order else []


def track_shipment(order_id: str) -> Any:
    """The carrier API; order A1003's first call times out (a flaky upstream)."""
    _carrier_calls[order_id] = _carrier_calls.get(order_id, 0) + 1
    if order_id == "A1003" and _carrier_calls[order_id] == 1:
        raise TimeoutError("carrier API timed out after 5s")
    order = ORDERS.get(order_id)
    if not order:
        return {"success": False, "error_code": "UNKNOWN_ORDER", "retryable": False}
    return {"order_id": order_id, "status": order["status"], "carrier": "DHL", "eta_days": 2}


def lookup_refund(order_id: str) -> Any:
    return {"order_id": order_id, "refund": None, "eligible": order_id in ORDERS}


def calculate_refund(order_id: str, items: list[dict[str, Any]]) -> Any:
    if not items:
        return {"success": False, "error_code": "NO_ITEMS", "message": "nothing to refund", "retryable": False}
    return {"order_id": order_id, "amount": round(sum(i["price"] * i.get("qty", 1) for i in items), 2), "currency": "USD"}


TOOLS = {f.__name__: f for f in (lookup_order, track_shipment, lookup_refund, calculate_refund)}
TOOL_SCHEMAS = [
    {"type": "function", "function": {"name": "lookup_order", "description": "Find an order by id",
                                      "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                                     "required": ["order_id"]}}},
    {"type": "function", "function": {"name": "track_shipment", "description": "Shipping status of an order",
                                      "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                                     "required": ["order_id"]}}},
    {"type": "function", "function": {"name": "lookup_refund", "description": "Refund status of an order",
                                      "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                                     "required": ["order_id"]}}},
    {"type": "function", "function": {"name": "calculate_refund", "description": "Refund amount for order items",
                                      "parameters": {"type": "object",
                                                     "properties": {"order_id": {"type": "string"},
                                                                    "items": {"type": "array", "items": {"type": "object"}}},
                                                     "required": ["order_id", "items"]}}},
]


class StepLimitExceeded(RuntimeError):
    pass


class MissingRefundAmount(ValueError):
    pass


def run_tool(name: str, arguments: dict[str, Any]) -> str:
    """The loop's dispatcher: a tool exception becomes an error message the model can read."""
    try:
        result = TOOLS[name](**arguments)
    except Exception as exc:  # the agent reports tool failures to the model, like most loops do
        return f"Error: {type(exc).__name__}: {exc}"
    return json.dumps(result)


# --- the agent ------------------------------------------------------------------------------------
def handle_ticket(client: Any, ticket: str) -> str:
    """Answer one ticket; raises when the agent cannot produce an acceptable reply."""
    messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": ticket}]
    for _ in range(MAX_TURNS):
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOL_SCHEMAS)
        message = response.choices[0].message
        if not message.tool_calls:
            return check_reply(ticket, message.content or "")
        messages.append(message)
        for call in message.tool_calls:
            result = run_tool(call.function.name, json.loads(call.function.arguments or "{}"))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise StepLimitExceeded(f"no answer after {MAX_TURNS} turns")


def check_reply(ticket: str, reply: str) -> str:
    """The host's own acceptance check: a refund reply must state an amount."""
    if "refund" in ticket.lower() and not re.search(r"\$\s?\d", reply):
        raise MissingRefundAmount(f"refund reply without an amount: {reply!r}")
    return reply


# --- the scripted model (used when no OPENAI_BASE_URL is set) ------------------------------------
def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


SCRIPTS = {
    "refund for order A1001": [
        {"tool_calls": [_call("lookup_order", order_id="A1001")]},
        {"tool_calls": [_call("calculate_refund", order_id="A1001", items=[{"sku": "MUG-1", "price": 12.5, "qty": 2}])]},
        {"content": "Your refund for order A1001 is $25.00; it will reach your card in 3-5 days."},
    ],
    "refund for order A10O2": [
        {"tool_calls": [_call("lookup_order", order_id="A10O2")]},
        {"tool_calls": [_call("calculate_refund", order_id="A10O2", items=[])]},
        {"content": "I could not find any order under that number, so there is nothing to refund yet."},
    ],
    "parcel for order A1003": [
        {"tool_calls": [_call("track_shipment", order_id="A1003")]},
        {"tool_calls": [_call("track_shipment", order_id="A1003")]},
        {"content": "Order A1003 has shipped with DHL and should arrive in 2 days."},
    ],
    "order A1004 shipped": [{"tool_calls": [_call("track_shipment", order_id="A1004")]}] * (MAX_TURNS + 1),
}

TICKETS = [
    "Hi, I'd like a refund for order A1001, the mugs arrived broken.",
    "Please process a refund for order A10O2, I returned it last week. Reach me at jane.doe@example.com or +1 415 555 0134.",
    "Where is my parcel for order A1003?",
    "Has my order A1004 shipped yet?",
]


def make_client() -> tuple[Any, Any]:
    """An OpenAI client for the configured endpoint, else for a scripted server started here."""
    import openai

    if os.environ.get("OPENAI_BASE_URL"):
        return openai.OpenAI(), None
    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    server = ScriptedOpenAIServer(SCRIPTS).start()
    return openai.OpenAI(base_url=server.base_url, api_key="scripted", max_retries=0), server


def answer_tickets(answer: Any) -> None:
    """Each ticket through `answer(ticket)`, its reply or failure printed (every example's main)."""
    failures = 0
    for ticket in TICKETS:
        try:
            reply = answer(ticket)
            print(f"[ok]     {ticket}\n         -> {reply}")
        except Exception as exc:
            failures += 1
            print(f"[failed] {ticket}\n         -> {type(exc).__name__}: {exc}")
    print(f"{len(TICKETS) - failures} of {len(TICKETS)} tickets answered")


def main() -> int:
    client, server = make_client()
    try:
        answer_tickets(lambda ticket: handle_ticket(client, ticket))
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    # Import ourselves as `support_agent`, so OTEL_AGENT_TRACE_ENTRYPOINTS=support_agent:handle_ticket
    # (a post-import hook) applies: a script's own `__main__` module cannot be hooked.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import support_agent

    sys.exit(support_agent.main())
