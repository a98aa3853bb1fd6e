"""Agent frameworks recorded through the handler API: their agent invocations as runs, their
tool registries as explicit tool spans (docs/coverage.md, Frameworks)."""
