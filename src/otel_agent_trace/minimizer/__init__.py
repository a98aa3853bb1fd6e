"""Minimal failing cases: delta debugging over a recorded run's tool steps (seed 004).

`minimize(trace_file, harness="sandbox", workspace=..., output=...)` replays subsets of the run's
tool steps with a harness and keeps a subset only when it fails with the original's signature,
pulling in the steps each kept step strongly depends on. Modules: `trajectory` (reading the run),
`signature`, `closure`, `ddmin` (the search), `harness` and `sandbox` (replaying), `trace_out`
(the minimal run as a trace file), `api`, `command` (the CLI). Names below load on first use, so
that building the CLI's parser imports none of them.
"""

__all__ = ["MinimizeError", "MinimizeResult", "Outcome", "Sandbox", "Signature", "Step", "compare", "minimize"]

_LAZY = {
    "MinimizeError": "trajectory", "Step": "trajectory", "MinimizeResult": "api", "compare": "api",
    "minimize": "api", "Outcome": "ddmin", "Sandbox": "sandbox", "Signature": "signature",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f"otel_agent_trace.minimizer.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(name)
