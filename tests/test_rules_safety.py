"""Rules files cannot run code (issue 18): YAML is read with the safe loader (python tags are
refused with the file named), and rule fields are data, never evaluated. Both readers: the
analyzer's `--rules` and the processor's `OTEL_AGENT_TRACE_REDACT_RULES`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from otel_agent_trace.cli import main as cli_main
from otel_agent_trace.processor.redaction_rules import load_rules as load_redaction_rules

sys.path.insert(0, str(Path(__file__).parent / "analyzer_inputs"))
from inputs_support import failing_run, line  # noqa: E402

TAGS = [
    "!!python/object/apply:os.system [\"touch {marker}\"]",
    "!!python/object/apply:subprocess.check_output [[\"touch\", \"{marker}\"]]",
    "!!python/object/new:os.system [\"touch {marker}\"]",
    "!!python/name:os.system",
    "!!python/module:os",
]


@pytest.mark.parametrize("tag", TAGS)
def test_analyzer_yaml_rules_with_python_tags_are_refused(tmp_path, capsys, tag):
    marker = tmp_path / "ran"
    rules = tmp_path / "rules.yaml"
    rules.write_text("criticalFailures:\n  - ruleId: X\n    match: " + tag.format(marker=marker) + "\n")
    traces = tmp_path / "t.jsonl"
    traces.write_text(line(failing_run(0)))
    code = cli_main(["analyze", "--rules", str(rules), str(traces)])
    err = capsys.readouterr().err
    assert code == 2 and str(rules) in err, err
    assert not marker.exists()


@pytest.mark.parametrize("tag", TAGS)
def test_redaction_yaml_rules_with_python_tags_are_refused(tmp_path, tag):
    marker = tmp_path / "ran"
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - name: X\n    regex: " + tag.format(marker=marker) + "\n")
    with pytest.raises(Exception) as info:
        load_redaction_rules(str(rules))
    assert "python" in str(info.value).lower() or "tag" in str(info.value).lower()
    assert not marker.exists()


def test_rule_fields_are_data_not_code(tmp_path, capsys):
    marker = tmp_path / "ran"
    code_text = f"__import__('os').system('touch {marker}')"
    rules = tmp_path / "rules.yaml"
    rules.write_text(json.dumps({"criticalFailures": [{"ruleId": code_text, "description": code_text,
                                                       "match": {"span_name": code_text, "attribute": {code_text: code_text}}}]}))
    traces = tmp_path / "t.jsonl"
    traces.write_text(line(failing_run(0)))
    assert cli_main(["analyze", "--format", "json", "--rules", str(rules), str(traces)]) == 0
    capsys.readouterr()
    redaction = tmp_path / "redact.yaml"
    redaction.write_text(json.dumps({"rules": [{"name": "X", "regex": code_text}, {"name": "Y", "keys": [code_text]}]}))
    load_redaction_rules(str(redaction))
    assert not marker.exists()
