"""The values our attributes take: tool outcomes, lifecycle phases, error types, link relations
(each an enum, never free text), and the roles that instruct. Plain data, no SDK."""

from __future__ import annotations

import enum

# roles whose messages instruct rather than converse: every conversation of an agent shares them
INSTRUCTION_ROLES = ("system", "developer")


class Outcome(str, enum.Enum):
    """What a tool execution produced (`agent_trace.tool.outcome`)."""

    OK = "ok"
    EXCEPTION = "exception"
    ERROR_RESULT = "error_result"
    EMPTY_RESULT = "empty_result"
    TIMEOUT = "timeout"


class Phase(str, enum.Enum):
    """Error lifecycle phase (`agent_trace.lifecycle.phase`), after seed 001."""

    ORIGIN = "origin"
    PROPAGATE = "propagate"
    RECOVERED = "recovered"
    CRITICAL = "critical"


class ErrorType(str, enum.Enum):
    """`agent_trace.error.type`: an enum, never free text."""

    TOOL_EXCEPTION = "tool_exception"
    TOOL_ERROR_RESULT = "tool_error_result"
    TOOL_EMPTY_RESULT = "tool_empty_result"
    TOOL_TIMEOUT = "tool_timeout"
    INVALID_ARGUMENTS = "invalid_arguments"
    UNKNOWN_TOOL = "unknown_tool"
    LOOP_DETECTED = "loop_detected"
    BUDGET_EXCEEDED = "budget_exceeded"
    FINAL_ANSWER_INVALID = "final_answer_invalid"
    FABRICATED_VALUE = "fabricated_value"
    CONTEXT_DROPPED = "context_dropped"
    LLM_ERROR = "llm_error"
    TRUNCATED_OUTPUT = "truncated_output"
    # an exception left the agent's entrypoint / agent_run block
    RUN_EXCEPTION = "run_exception"
    # analyzer only: a verdict from outside the run says it failed (analyzer/verdicts.py)
    KNOWN_FAILED = "known_failed"  # `analyze --all-failed`
    EVALUATION_FAILED = "evaluation_failed"  # a failing `gen_ai.evaluation.result`
    WRONG_ANSWER = "wrong_answer"  # the final answer differs from the expected one (`analyze --expected`)


class Relation(str, enum.Enum):
    """`agent_trace.link.relation` of a dependency link."""

    DECIDED_BY = "decided_by"
    CONSUMES = "consumes"
    DATA = "data"
    RESOURCE = "resource"
    RETRY_OF = "retry_of"
    DELEGATED_TO = "delegated_to"  # a sub-agent's run -> the step or tool that delegated to it
    # a resumed run -> the run it resumes, in another trace (a link only: no `depends_on` mirror,
    # which holds span ids of the same trace; `agent_trace.run.resumes` holds the trace id)
    RESUMES = "resumes"


STRONG_RELATIONS = frozenset({Relation.DECIDED_BY.value, Relation.DATA.value, Relation.RESOURCE.value})

OUTCOME_ERROR_TYPE = {
    Outcome.EXCEPTION: ErrorType.TOOL_EXCEPTION,
    Outcome.ERROR_RESULT: ErrorType.TOOL_ERROR_RESULT,
    Outcome.EMPTY_RESULT: ErrorType.TOOL_EMPTY_RESULT,
    Outcome.TIMEOUT: ErrorType.TOOL_TIMEOUT,
}


# the kinds of value the built-in PII detectors report (processor/pii_detectors.py): a redacted
# value's placeholder names its kind, and `redact_disabled` accepts these names (config.py)
PHONE = "PHONE"
EMAIL = "EMAIL"
CARD = "CARD"
CN_ID = "CN_ID"
IP = "IP"
IBAN = "IBAN"
SECRET = "SECRET"
US_SSN = "US_SSN"
UK_NINO = "UK_NINO"
CA_SIN = "CA_SIN"
IN_AADHAAR = "IN_AADHAAR"
PII_KINDS = (PHONE, EMAIL, CARD, CN_ID, IP, IBAN, SECRET, US_SSN, UK_NINO, CA_SIN, IN_AADHAAR)
