import sys
from pathlib import Path

import pytest

# helper modules of this folder (processor_helpers, processor_corpus): unique names, no clash
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def trace_file(tmp_path):
    return tmp_path / "traces.jsonl"


def pytest_configure(config):
    config.addinivalue_line("markers", "entry_point: needs the package's entry points registered (pip install -e .)")
