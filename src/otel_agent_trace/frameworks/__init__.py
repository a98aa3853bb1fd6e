"""Agent frameworks recorded over the handler API: their runs and their tool registries (issue #13)."""
