"""Which kind of bug (seed 000) an origin is: `prompt`, `tool` or `model_decision`, with evidence."""

from __future__ import annotations

from otel_agent_trace.analyzer.locate import Finding, tool_name
from otel_agent_trace.model import BUG_CLASS_OF_ERROR, GEN_AI_TOOL_CALL_ARGUMENTS, GEN_AI_TOOL_CALL_RESULT, ErrorType


def classify(finding: Finding) -> None:
    """Set `finding.bug_class` and add the evidence that supports it."""
    origin = finding.origin
    if origin is None or not finding.origin_error_type:
        return
    try:
        error_type = ErrorType(finding.origin_error_type)
    except ValueError:
        return
    finding.bug_class = BUG_CLASS_OF_ERROR.get(error_type)
    name = tool_name(origin)
    if name:
        args = origin.attr(GEN_AI_TOOL_CALL_ARGUMENTS)
        result = origin.attr(GEN_AI_TOOL_CALL_RESULT)
        detail = f"tool {name}({_short(args)}) returned {_short(result)}" if result is not None else f"tool {name} failed"
        finding.evidence.append(f"{detail} [{error_type.value}]")
    else:
        finding.evidence.append(f"{origin.name}: {error_type.value}")
    if finding.recovered:
        finding.evidence.append(f"{len(finding.recovered)} earlier error(s) were recovered by a retry and skipped")


def _short(value: object, limit: int = 80) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
