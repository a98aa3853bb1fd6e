"""Reading a user's JSON or YAML settings file (team rules, price tables) with errors that name
the file and where it went wrong. YAML needs PyYAML (optional); JSON needs nothing."""

from __future__ import annotations

import json
import os
from typing import Any


class DataFileError(ValueError):
    """The file is unusable: the message names the file, the line where known, and the reason."""


def parse(path: str, text: str) -> Any:
    """`text` read from `path`, as YAML (`.yaml` / `.yml`) or JSON."""
    if os.path.splitext(path)[1].lower() in (".yaml", ".yml"):
        try:
            import yaml  # type: ignore[import-untyped]
        except ImportError:
            raise DataFileError(f"{path}: YAML files need PyYAML (pip install pyyaml), or use JSON") from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise DataFileError(f"{path}: invalid YAML: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFileError(f"{path}: invalid JSON: {exc}") from None


def load(path: str) -> Any:
    """The parsed file; an unreadable one is a `DataFileError` too."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse(path, text)
