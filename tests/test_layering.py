"""The product never imports test support: no module of the package outside `scripted_servers/` imports
`otel_agent_trace.scripted_servers` (the scripted servers build their wire formats from product code,
`providers/wire_streams.py`, not the reverse)."""

from __future__ import annotations

import ast
from pathlib import Path

import otel_agent_trace

PACKAGE = Path(otel_agent_trace.__file__).parent


def _imported(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_product_modules_never_import_test_support():
    product = [p for p in PACKAGE.rglob("*.py") if "scripted_servers" not in p.relative_to(PACKAGE).parts]
    assert len(product) > 50
    offenders = {str(p.relative_to(PACKAGE)): sorted(n for n in _imported(ast.parse(p.read_text(), str(p)))
                                                     if n == "otel_agent_trace.scripted_servers"
                                                     or n.startswith("otel_agent_trace.scripted_servers."))
                 for p in product}
    assert {k: v for k, v in offenders.items() if v} == {}
