"""The support agent of support_agent.py built with LangGraph's `create_react_agent` and
LangChain tools on `ChatOpenAI`. It knows nothing about tracing: run it under
`opentelemetry-instrument` and each ticket is a run named `support`, with a step per model call
and an `execute_tool` span where each tool really runs. Its model is the scripted server (offline),
or OPENAI_BASE_URL / OPENAI_API_KEY when set.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support_agent  # noqa: E402


def build_tools() -> list[Any]:
    from langchain_core.tools import tool

    @tool
    def lookup_order(order_id: str) -> str:
        """Find an order by id"""
        return json.dumps(support_agent.lookup_order(order_id))

    @tool
    def track_shipment(order_id: str) -> str:
        """Shipping status of an order"""
        return json.dumps(support_agent.track_shipment(order_id))

    @tool
    def calculate_refund(order_id: str, items: list[dict[str, Any]]) -> str:
        """Refund amount for order items"""
        return json.dumps(support_agent.calculate_refund(order_id, items))

    return [lookup_order, track_shipment, calculate_refund]


def build_agent(base_url: str | None = None, name: str = "support") -> Any:
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import ToolNode, create_react_agent

    llm = ChatOpenAI(model=support_agent.MODEL, base_url=base_url, api_key="scripted" if base_url else None,
                     max_retries=0)
    tools = ToolNode(build_tools(), handle_tool_errors=True)  # a raising tool: an error message to the model
    return create_react_agent(llm, tools, prompt=support_agent.SYSTEM, name=name)


def handle_ticket(agent: Any, ticket: str) -> str:
    reply = agent.invoke({"messages": [("user", ticket)]})["messages"][-1].content
    return support_agent.check_reply(ticket, reply)


def main() -> int:
    server = None
    base_url = None
    if not os.environ.get("OPENAI_BASE_URL"):
        from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

        server = ScriptedOpenAIServer(support_agent.SCRIPTS).start()
        base_url = server.base_url
    agent = build_agent(base_url)
    try:
        support_agent.answer_tickets(lambda ticket: handle_ticket(agent, ticket))
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
