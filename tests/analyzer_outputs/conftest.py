"""Fixtures for the analysis/output tests: the demo's traces through the real pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest
from demo_traces import record_demo_tickets


@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_server) -> Path:
    """The four demo tickets through the real openai client, SDK, batch processor and exporter."""
    return record_demo_tickets(tmp_path_factory.mktemp("demo") / "traces.jsonl", demo_server.base_url)
