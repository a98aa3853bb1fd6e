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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(tree: ast.Module, modules: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """Modules a module imports, at load time or later in a function (not under TYPE_CHECKING)."""
    names: set[str] = set()
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(block.test) for n in ast.walk(block)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names}
            names.update(submodules)
            if not submodules <= modules:  # `from pkg import submodule` is an arrow to the submodule only
                names.add(node.module)
    return names


def _cycles(prefixes: tuple[str, ...]) -> list[list[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: sorted(n for n in _runtime_imports(ast.parse(path.read_text(), str(path)), set(modules))
                          if n in modules and n != name and n.startswith(prefixes))
             for name, path in modules.items() if name.startswith(prefixes)}
    found, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                found.append(stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return found


def test_the_analyzer_and_the_vocabulary_import_no_circle():
    """The analyzer's modules (analysis, chunks, lifecycle/, ...) and the shared vocabulary
    (semconv, vocabulary, messages, json_text, detectors) import each other in one direction only."""
    analyzer = _cycles(("otel_agent_trace.analyzer",))
    shared = _cycles(("otel_agent_trace.semconv", "otel_agent_trace.vocabulary", "otel_agent_trace.messages",
                      "otel_agent_trace.json_text", "otel_agent_trace.detectors", "otel_agent_trace.schema"))
    assert len(list(PACKAGE.joinpath("analyzer").rglob("*.py"))) > 30  # (the walk saw the package)
    assert (analyzer, shared) == ([], [])


def test_the_whole_package_imports_no_circle():
    """No module of the package reaches itself through its imports (issue 26): `from pkg import mod`
    is an arrow to `mod`, and a function-level import counts like one at the top."""
    assert len(list(PACKAGE.rglob("*.py"))) > 150  # (the walk saw the package)
    assert _cycles(("otel_agent_trace",)) == []
