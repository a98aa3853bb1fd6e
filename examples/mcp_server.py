"""The support agent's tools served over MCP (stdio) with the mcp package's `MCPServer` (mcp 2's
name for FastMCP). `lookup_order` of a malformed id silently returns `[]` (the planted origin),
`track_shipment` raises for order A1003's first call (the client gets an `isError` result), and
`lookup_refund` of an unknown order returns an `isError` result itself. `slow_lookup` takes a
second (a client's read timeout raises)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import support_agent  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.types import CallToolResult, TextContent  # noqa: E402

server = MCPServer("support-tools")


@server.tool()
def lookup_order(order_id: str) -> list[dict[str, Any]]:
    """Find an order by id."""
    return support_agent.lookup_order(order_id)


@server.tool()
def track_shipment(order_id: str) -> dict[str, Any]:
    """Shipping status of an order."""
    return support_agent.track_shipment(order_id)


@server.tool()
def calculate_refund(order_id: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """Refund amount for order items."""
    return support_agent.calculate_refund(order_id, items)


@server.tool()
def lookup_refund(order_id: str) -> CallToolResult:
    """Refund status of an order."""
    if order_id not in support_agent.ORDERS:
        return CallToolResult(content=[TextContent(type="text", text=f"no refund record for {order_id}")], is_error=True)
    return CallToolResult(content=[TextContent(type="text", text="no refund issued yet")])


@server.tool()
def slow_lookup(order_id: str) -> str:
    """An order lookup that takes a second."""
    time.sleep(1.0)
    return order_id


if __name__ == "__main__":
    server.run("stdio")
