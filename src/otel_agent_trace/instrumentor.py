"""`AgentTraceInstrumentor`: wiring only.

Found by `opentelemetry-instrument` through the `opentelemetry_instrumentor` entry point
`agent_trace`. It installs the recorder and registers wrapt post-import hooks, so no client
library is imported by us: each patch is applied when (and if) the agent imports the library.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, Callable, Collection

import wrapt
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap

from otel_agent_trace import config as config_module
from otel_agent_trace import cost
from otel_agent_trace._failopen import log_once, safely
from otel_agent_trace.config import AgentTraceConfig
from otel_agent_trace.integration import Integration, Patch
from otel_agent_trace.recorder import flush as flush_hooks
from otel_agent_trace.recorder import metrics as recorder_metrics
from otel_agent_trace.recorder.exit_hooks import EXIT_HOOKS
from otel_agent_trace.recorder.handler import Handler, get_handler, set_handler, wrap_as_run
from otel_agent_trace.registry import INTEGRATIONS
from otel_agent_trace.replay import interceptor as replay_interceptor
from otel_agent_trace.replay import wire as replay_wire
from otel_agent_trace.tool_decorator import wrap_tool

# keywords other instrumentors accept, which callers pass to all of them alike
_OTHER_PROVIDERS = ("meter_provider", "logger_provider", "event_logger_provider")


def _resolve(owner: Any, dotted: str) -> tuple[Any, str]:
    """(object holding the attribute, attribute name) for `Class.method` or `function`."""
    parts = dotted.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part)
    return owner, parts[-1]


class AgentTraceInstrumentor(BaseInstrumentor):
    """Records agent runs, decision steps and tool calls; see docs/configuration.md for keywords."""

    def __init__(self) -> None:
        super().__init__()
        if hasattr(self, "_client_targets"):
            return  # BaseInstrumentor is a singleton: `AgentTraceInstrumentor()` is the one instance
        self._patched_paths: list[tuple[Any, str, Any]] = []
        self._active = False
        self._client_targets: list[tuple[Any, str, Any]] = []  # (module, "Class.method", our wrapper)

    def instrumentation_dependencies(self) -> Collection[str]:
        # Every client library is optional: the patches wait for the agent to import one.
        return ()

    def _instrument(self, **kwargs: Any) -> None:
        tracer_provider = kwargs.pop("tracer_provider", None)
        meter_provider = kwargs.pop("meter_provider", None)
        for name in _OTHER_PROVIDERS:
            kwargs.pop(name, None)
        # the one configuration of this process (unknown keywords: TypeError)
        config = AgentTraceConfig.from_env(**kwargs) if kwargs else config_module.current()
        config_module.set_current(config)
        handler = Handler(config, tracer_provider)
        replay_interceptor.inject(handler)  # replay on: the handler answers calls from the recording
        set_handler(handler, installed=True)
        EXIT_HOOKS.install()
        safely("install flush hooks", flush_hooks.install)
        safely("metrics: install", recorder_metrics.install, tracer_provider, meter_provider)
        if config.cost:
            cost.preload()  # the optional price library loads in the background
        self._active = True
        for integration in INTEGRATIONS:
            self._register(integration)
        for path in config.entrypoints:
            self._hook_path(path, wrap_as_run)
        for path in config.tools:
            self._hook_path(path, wrap_tool)

    def _uninstrument(self, **kwargs: Any) -> None:
        self._active = False
        recorder_metrics.uninstall()
        for module, target, wrapper in self._client_targets:
            owner, attr = _resolve(module, target)
            while _is_ours(vars(owner).get(attr), wrapper):  # ours on top (once or twice): off
                unwrap(owner, attr)
        self._client_targets.clear()
        for owner, attr, original in reversed(self._patched_paths):
            setattr(owner, attr, original)
        self._patched_paths.clear()
        safely("replay wire: uninstall", replay_wire.uninstall)
        get_handler().end_implicit_runs()
        EXIT_HOOKS.uninstall()
        safely("remove flush hooks", flush_hooks.uninstall)
        set_handler(None)
        config_module.set_current(None)

    def _register(self, integration: Integration) -> None:
        """Patch the integration's modules when (and if) the agent imports them."""
        if integration.import_hook is None:
            for module, patches in integration.modules().items():
                wrapt.register_post_import_hook(functools.partial(self._patch_module, patches), module)
            return
        wrapt.register_post_import_hook(functools.partial(self._on_import, integration),
                                        integration.import_hook.module)

    def _patch_module(self, patches: list[Patch], module: Any) -> None:
        for patch in patches:
            self._patch_client(module, (patch.target,), patch.wrapper)

    def _on_import(self, integration: Integration, module: Any) -> None:
        """The import hook's module is imported: run the hook, then patch (importing the modules)."""
        hook = integration.import_hook
        if not self._active or hook is None or not safely(f"patch {integration.name}", hook.hook, module):
            return
        for name, patches in integration.modules().items():
            owner = safely(f"import {name}", importlib.import_module, name)
            if owner is not None:
                self._patch_module(patches, owner)

    def _patch_client(self, module: Any, targets: Collection[str], wrapper: Any) -> None:
        """Wrap each `Class.method` (or function) of a client module with a provider's wrapper,
        remembered for `keep_outermost` and `_uninstrument`."""
        if not self._active:
            return
        for target in targets:
            if safely(f"check {target}", _on_top, module, target, wrapper):
                # the hooks of earlier instrument() calls fire too when the module is imported
                # late: wrap once (a second copy of a run wrapper would open a second run)
                if (module, target, wrapper) not in self._client_targets:
                    self._client_targets.append((module, target, wrapper))
                continue
            patched = safely(f"patch {module.__name__} {target}", wrapt.wrap_function_wrapper, module, target, wrapper)
            if patched is not None:
                self._client_targets.append((module, target, wrapper))

    def keep_outermost(self) -> None:
        """Wrap each patched client call again where another instrumentation wrapped it after us.

        Ours must be the outermost wrapper so that another instrumentation's chat span nests
        under our step and chat spans (`coexist=nest|adopt`), instead of our run nesting under
        it; the inner copy of ours passes the call through (`recorder/calls.py`).
        """
        if not self._active or config_module.current().coexist == "off":
            return
        for module, target, wrapper in self._client_targets:
            if not _on_top(module, target, wrapper):
                safely(f"re-patch {target}", wrapt.wrap_function_wrapper, module, target, wrapper)

    def _hook_path(self, path: str, wrap: Callable[[Any], Any]) -> None:
        """Wrap `module:attr.path` when `module` is imported (now, if it already is)."""
        module_name, _, dotted = path.partition(":")
        if not module_name or not dotted:
            log_once(f"config {path!r}", ValueError(f"expected module:function, got {path!r}"))
            return

        def patch(module: Any) -> None:
            if not self._active:
                return
            owner, attr = _resolve(module, dotted)
            original = getattr(owner, attr)
            setattr(owner, attr, wrap(original))
            self._patched_paths.append((owner, attr, original))

        wrapt.register_post_import_hook(lambda m: safely(f"patch {path}", patch, m), module_name)


def _on_top(module: Any, target: str, wrapper: Any) -> bool:
    """Is `wrapper` the outermost wrapper of `module`'s `Class.method` now?"""
    owner, attr = _resolve(module, target)
    return _is_ours(vars(owner).get(attr), wrapper)


def _is_ours(attribute: Any, wrapper: Any) -> bool:
    """Is this class attribute (read from the class's `__dict__`: not bound) our wrapper?"""
    return isinstance(attribute, wrapt.FunctionWrapper) and getattr(attribute, "_self_wrapper", None) is wrapper


def post_instrument(**kwargs: Any) -> None:
    """Entry point `opentelemetry_post_instrument: agent_trace`: runs after every instrumentor
    and the SDK's configuration. Keeps our client wrappers outermost, then puts the span
    processor in front of the exporters. Never raises."""
    from otel_agent_trace.processor.install import post_instrument as install_processor

    safely("post_instrument: wrapper order", AgentTraceInstrumentor().keep_outermost)
    install_processor(**kwargs)
