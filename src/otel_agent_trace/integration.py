"""The one shape every integration (an LLM client, an agent framework) declares its patches in.

    INTEGRATION = Integration("ollama", (
        Patch("ollama._client", "Client.chat", wrapper),
        Patch("ollama._client", "AsyncClient.chat", wrapper),
    ))

A `Patch` wraps `target` (`Class.method` or a module-level function) of `module` with a wrapt
wrapper, when and if the agent imports that module: no client library is ever imported by us.
An optional `ImportHook` runs first, when its module is imported; the integration's patches are
then applied (their modules imported) only if it returns True (the OpenAI Agents SDK registers
its trace processor so). The registry (registry.py) lists every integration; the instrumentor
walks it. See docs/architecture.md, "Add an integration".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Patch:
    module: str  # the module the agent imports
    target: str  # "Class.method" or "function" in it
    wrapper: Callable[..., Any]  # a wrapt wrapper: (wrapped, instance, args, kwargs) -> result


@dataclass(frozen=True)
class ImportHook:
    module: str
    hook: Callable[[Any], bool]  # (the imported module) -> apply the patches?


@dataclass(frozen=True)
class Integration:
    name: str
    patches: tuple[Patch, ...]
    import_hook: ImportHook | None = None

    def modules(self) -> dict[str, list[Patch]]:
        """The patches by module, in declaration order."""
        grouped: dict[str, list[Patch]] = {}
        for patch in self.patches:
            grouped.setdefault(patch.module, []).append(patch)
        return grouped


def patches(module: str, targets: tuple[str, ...] | list[str], wrapper: Callable[..., Any]) -> tuple[Patch, ...]:
    """The same wrapper on several targets of one module."""
    return tuple(Patch(module, target, wrapper) for target in targets)
