"""The regression set: recorded runs kept as cases (`save`), checked again (`regress`), and as
pytest items (`pytest --agent-traces DIR`). See docs/replay.md."""
