"""Every attribute key we write or read, defined once: our own under `agent_trace.`, the GenAI
semantic conventions' `gen_ai.*` (docs/attributes.md), and the operation names. Plain strings:
the recorder, the processor, the analyzer, replay, regress and the minimizer import them from here."""

from __future__ import annotations

# The instrumentation scope of every span the recorder creates: what "ours" means to the processor
# (which stamps `agent_trace.*` only on these) and to the analyzer (see normalize.is_ours).
INSTRUMENTATION_SCOPE = "otel_agent_trace"

# --- attribute names (our own, under agent_trace.) -------------------------------------------
AGENT_TRACE_PREFIX = "agent_trace."  # our namespace
RUN_NAME = "agent_trace.run.name"
RUN_IMPLICIT = "agent_trace.run.implicit"
RUN_AGENTS = "agent_trace.run.agents"  # framework agents that ran as the body of an entry point / agent_run
# the trace id (32 hex) of the run this run resumes (a LangGraph thread resumed after `interrupt`, once
# the interrupted run had ended); the run span also links to that run's span, relation `resumes`
RUN_RESUMES = "agent_trace.run.resumes"
# a run span ended early because its tracer provider shut down (value: "provider_shutdown")
RUN_ENDED_BY = "agent_trace.run.ended_by"
# the `run_outcome` span: an exception that failed a run after a flush had already exported it;
# its parent is the run span, this attribute names that span's id (lowercase hex)
RUN_OUTCOME_SPAN = "run_outcome"
RUN_OUTCOME_OF = "agent_trace.run_outcome.of"
# the `guardrail_tripped` event on a run (openai-agents): the guardrail, its kind (input, output,
# tool_input, tool_output) and, for a tool's guardrail, what it did (reject_content, raise_exception)
GUARDRAIL_EVENT = "guardrail_tripped"
GUARDRAIL_NAME = "agent_trace.guardrail.name"
GUARDRAIL_KIND = "agent_trace.guardrail.kind"
GUARDRAIL_BEHAVIOR = "agent_trace.guardrail.behavior"
STEP_INDEX = "agent_trace.step.index"
STEP_KIND = "agent_trace.step.kind"
STEP_TOOL_CALLS = "agent_trace.step.tool_calls"
CONTEXT_HASH = "agent_trace.context.hash"
CONTEXT_MESSAGE_HASHES = "agent_trace.context.message_hashes"
CONTEXT_MESSAGES = "agent_trace.context.messages"
# how many leading messages a step's context shares with the previous step's: its
# `message_hashes` then list only the messages after them (`context_hashes` expands them)
CONTEXT_SHARED_PREFIX = "agent_trace.context.shared_prefix"
# with content capture: JSON `[{"hash", "message"}]` of the messages a step's context shows first
CONTEXT_NEW_MESSAGES = "agent_trace.context.new_messages"
# a field of an item of `new_messages`: its message is a tool result that an `execute_tool` span
# of the run holds whole as `gen_ai.tool.call.result`; the message carries no `content`, this
# names that span's id (16 hex) instead of writing the result twice (the analyzer restores it)
NEW_MESSAGE_CONTENT_FROM = "content_from"
TOOL_OUTCOME = "agent_trace.tool.outcome"
TOOL_SOURCE = "agent_trace.tool.source"  # "explicit" (decorator / dispatcher) | "inferred"
LIFECYCLE_PHASE = "agent_trace.lifecycle.phase"
ERROR_TYPE = "agent_trace.error.type"
DEPENDS_ON = "agent_trace.depends_on"
DEPENDS_ON_RELATIONS = "agent_trace.depends_on.relations"
LINK_RELATION = "agent_trace.link.relation"
LOOP_COUNT = "agent_trace.loop.count"
COST_USD = "agent_trace.usage.cost_usd"  # a chat's price (cost.py), summed per run by the analyzer

# --- GenAI semantic convention names we write (semconv gen_ai.*) ------------------------------
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_SYSTEM = "gen_ai.system"  # deprecated by provider.name; still read by Jaeger and peers
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature"
GEN_AI_REQUEST_TOP_P = "gen_ai.request.top_p"
GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE_SEMCONV = "error.type"
# the `gen_ai.evaluation.result` event (a span event, or a log record with this event name)
GEN_AI_EVALUATION_RESULT = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_TOOL_DEFINITIONS = "gen_ai.tool.definitions"  # opt-in content
GEN_AI_REQUEST_TOOLS = "gen_ai.request.tools"  # an older name of the tool definitions, still read
# OpenLLMetry's older names, read from foreign traces (analyzer/normalize/conventions.py)
GEN_AI_PROMPT_PREFIX = "gen_ai.prompt."  # gen_ai.prompt.N.role / .content
GEN_AI_COMPLETION_PREFIX = "gen_ai.completion."
GEN_AI_PROMPT_FIRST_ROLE = "gen_ai.prompt.0.role"  # (a span with a prompt has it)
GEN_AI_COMPLETION_FIRST_ROLE = "gen_ai.completion.0.role"
GEN_AI_USAGE_PROMPT_TOKENS = "gen_ai.usage.prompt_tokens"
GEN_AI_USAGE_COMPLETION_TOKENS = "gen_ai.usage.completion_tokens"

# --- our names written by one stage and read by another ----------------------------------------
CONTEXT_DROPPED_HASHES = "agent_trace.context.dropped_hashes"
CONTEXT_DROPPED_ROLES = "agent_trace.context.dropped_roles"
OUTPUT_MESSAGE_HASH = "agent_trace.output.message_hash"  # the hash of a chat's output message
BUDGET_EXCEEDED = "agent_trace.budget.exceeded"
BUDGET_REASON = "agent_trace.budget.reason"
BUDGET_LIMIT = "agent_trace.budget.limit"
BUDGET_USED = "agent_trace.budget.used"
FABRICATED_VALUES = "agent_trace.fabricated.values"
VALIDATION_ERRORS = "agent_trace.validation.errors"
TOOL_DEFINITIONS = "agent_trace.tool.definitions"  # a framework's tools, where no semconv name fits
REDACTION_COUNT = "agent_trace.redaction.count"
SAMPLING_RATIO = "agent_trace.sampling.ratio"
REDACTION_PREFIX = "agent_trace.redaction."  # the processor's keys (redaction.py, sampling.py)
SAMPLING_PREFIX = "agent_trace.sampling."
REPLAY_OF = "agent_trace.replay.of"  # resource: the trace a replaying process answers from
MINIMIZED_FROM = "agent_trace.minimized.from_trace"
MINIMIZED_SIGNATURE = "agent_trace.minimized.signature"
MINIMIZED_STRATEGY = "agent_trace.minimized.strategy"
# written by the analyzer's normalization onto foreign spans (analyzer/normalize/)
NORMALIZED_FROM = "agent_trace.normalized_from"
HARNESS_CALL = "agent_trace.harness_call"  # a trailing LLM call outside the agent (normalize.is_harness_call)
ERROR_EVIDENCE = "agent_trace.error.evidence"  # the text that proved a tool result an error
SUBAGENT_RUNS = "agent_trace.run.subagent_runs"  # runs nested directly in this run (managed agents)

OP_INVOKE_AGENT = "invoke_agent"
OP_CHAT = "chat"
OP_EXECUTE_TOOL = "execute_tool"
STEP_SPAN_PREFIX = "agent_step"

# --- evaluations (recorder/evaluation.py writes, analyzer/evaluations.py reads) -----------------
EVALUATION_SCOPE = "agent_trace.evaluation.scope"  # `trace`: a small span about a whole trace (no span id given)
EVALUATION_SOURCE = "agent_trace.evaluation.source"  # analyzer-side only: `log_record` | `span` | `span_event`

# --- the task a run answers (read by --expected and the judge) -----------------------------------
RUN_INPUT = "agent_trace.run.input"
TASK_ID = "agent_trace.task.id"
GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"

# --- findings as telemetry (serve/telemetry.py) and the recorder's metrics (recorder/metrics.py) ---
RUN_STATUS = "agent_trace.run.status"
ORIGIN_ERROR_TYPE = "agent_trace.origin.error_type"
ORIGIN_SPAN_ID = "agent_trace.origin.span_id"
ORIGIN_SPAN_NAME = "agent_trace.origin.span_name"
ORIGIN_STEP_INDEX = "agent_trace.origin.step_index"
BUG_CLASS = "agent_trace.bug_class"
SERVE_DROP_REASON = "agent_trace.serve.drop_reason"
SPAN_KIND = "agent_trace.span.kind"
FINDING_SPAN_KIND = "agent_trace.finding"  # the finding spans' agent_trace.span.kind
GEN_AI_TOKEN_TYPE = "gen_ai.token.type"
# metric instrument names (docs/attributes.md, "Metrics")
METRIC_OPERATION_DURATION = "gen_ai.client.operation.duration"
METRIC_TOKEN_USAGE = "gen_ai.client.token.usage"
METRIC_RUNS = "agent_trace.runs"
METRIC_RUN_STEPS = "agent_trace.run.steps"
METRIC_RUN_COST = "agent_trace.run.cost"
METRIC_RUN_LOOP_ABORTS = "agent_trace.run.loop_aborts"
METRIC_RUN_BUDGET_STOPS = "agent_trace.run.budget_stops"
METRIC_TOOL_CALLS = "agent_trace.tool.calls"
METRIC_TOOL_ERRORS = "agent_trace.tool.errors"
METRIC_SERVE_RUNS = "agent_trace.serve.runs"
METRIC_SERVE_SPANS_DROPPED = "agent_trace.serve.spans.dropped"
METRIC_SERVE_TRACES_EVICTED = "agent_trace.serve.traces.evicted"
METRIC_SERVE_TRACES_ANALYSED = "agent_trace.serve.traces.analysed"
METRIC_SERVE_TRACES_HELD = "agent_trace.serve.traces.held"
METRIC_SERVE_SPANS_HELD = "agent_trace.serve.spans.held"
