"""Model calls that failed (`llm_error`) or were cut at the length limit (`truncated_output`)."""

from __future__ import annotations

from typing import Any

from otel_agent_trace.analyzer.lifecycle.state import Lifecycle, derived_origin
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.spans import STATUS_ERROR
from otel_agent_trace.semconv import GEN_AI_OUTPUT_MESSAGES, GEN_AI_RESPONSE_FINISH_REASONS
from otel_agent_trace.vocabulary import ErrorType

def chat_origins(run: Run, life: Lifecycle) -> dict[str, Any]:
    """Model calls that failed (`llm_error`) or were cut at the length limit (`truncated_output`).
    Returns, per span id, the output messages of the first model call under it that recorded
    some: a step's answer (`answer_text`)."""
    tool_ids = run.tool_ids
    answers: dict[str, Any] = {}
    for span in run.chats:
        output = span.attributes.get(GEN_AI_OUTPUT_MESSAGES)
        if output is not None and span.parent_id not in answers:
            answers[span.parent_id] = output
        if span.span_id in tool_ids:
            continue  # (a span that is both was looked at as a tool)
        if span.status_code == STATUS_ERROR:
            derived_origin(life, span, ErrorType.LLM_ERROR.value, "chat call failed")
        else:
            reasons = span.attributes.get(GEN_AI_RESPONSE_FINISH_REASONS)
            if isinstance(reasons, list) and "length" in reasons or reasons == "length":
                derived_origin(life, span, ErrorType.TRUNCATED_OUTPUT.value, "finish_reason=length")
    return answers
