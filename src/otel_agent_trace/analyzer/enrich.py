"""Re-run location and classification with a team's critical-failure rules.

`analysis.analyze()` locates with the built-in rules; when `--rules` names a file, the CLI calls
`apply_rules` to recompute every finding with the merged rule set (runs are not re-read), with
the settings the analysis ran with.
"""

from __future__ import annotations

from otel_agent_trace.analyzer.analysis import Analysis
from otel_agent_trace.analyzer.classify import classify
from otel_agent_trace.analyzer.locate import locate
from otel_agent_trace.analyzer.critical_rules import Rule
from otel_agent_trace.analyzer.runs import sub_runs


def apply_rules(analysis: Analysis, rules: list[Rule]) -> Analysis:
    findings = []
    by_trace: dict[str, list] = {}
    for old in analysis.findings:
        by_trace.setdefault(old.run.trace_id, []).append(old.run)
    nested = set().union(*(sub_runs(group) for group in by_trace.values()))
    for old in analysis.findings:
        finding = locate(old.run, rules, settings=analysis.settings, top_level=id(old.run) not in nested)
        classify(finding)
        findings.append(finding)
    analysis.findings = findings
    return analysis
