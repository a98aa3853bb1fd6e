"""What the model saw: the messages each step showed first, the values it received, and the
instructions it lost (`dropped_context`)."""

from __future__ import annotations

from otel_agent_trace import detectors
from otel_agent_trace.analyzer.lifecycle.state import Lifecycle, mark
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.json_text import parse_json_or_text
from otel_agent_trace.semconv import (
    CONTEXT_MESSAGE_HASHES,
    CONTEXT_NEW_MESSAGES,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_RESULT,
    STEP_INDEX,
    STEP_KIND,
)
from otel_agent_trace.vocabulary import ErrorType


def new_messages(step: Span) -> list[tuple[str, str, str | None]]:
    """(hash, role, text content) of the messages a step's context showed first
    (`agent_trace.context.new_messages`, with content capture)."""
    raw = step.attributes.get(CONTEXT_NEW_MESSAGES)
    items = parse_json_or_text(raw) if raw is not None else None
    out = []
    for item in items if isinstance(items, list) else ():
        message = item.get("message") if isinstance(item, dict) else None
        if isinstance(message, dict):
            content = message.get("content")
            out.append((str(item.get("hash") or ""), str(message.get("role") or ""),
                        content if isinstance(content, str) else None))
    return out


def received_texts(run: Run) -> detectors.Received:
    """The texts `received_values` reads (received messages, tool results), for the factors and
    totals an answer may have computed with (`detectors.fabricated_values`)."""
    received = detectors.Received(content for step in run.steps for _, role, content in new_messages(step)
                                  if role in detectors.RECEIVED_ROLES)
    for tool in run.tools:
        received.add(tool.attributes.get(GEN_AI_TOOL_CALL_RESULT))
    return received


def received_values(run: Run) -> tuple[set[str], dict[str, str]]:
    """What the run's model saw, as the recorder indexes it: the distinctive values of user,
    system, developer and tool messages (the steps' new messages), of tool results and of the
    run's own tool arguments; and the role of each message hash. Empty without captured content."""
    known: set[str] = set()
    roles: dict[str, str] = {}
    for step in run.steps:
        for digest, role, content in new_messages(step):
            if digest:
                roles[digest] = role
            if role in detectors.RECEIVED_ROLES and content:
                known |= detectors.distinctive_values(content)
    for tool in run.tools:  # results, and the arguments the run itself used (`detectors.fabricated_values`)
        for key in (GEN_AI_TOOL_CALL_RESULT, GEN_AI_TOOL_CALL_ARGUMENTS):
            text = tool.attributes.get(key)
            if isinstance(text, str) and text:
                known |= detectors.distinctive_values(text)
    return known, roles


def unseen_argument_values(run: Run, tool: Span) -> list[str]:
    """Values of a tool call's arguments the model had never seen when it decided the call: in
    no user, system or developer message or tool result of the steps up to the deciding one, nor
    in an earlier tool's result, and not derived from their numbers (`detectors.fabricated_values`).
    Empty when the run did not capture its messages (nothing to compare with)."""
    arguments = tool.attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS)
    index = run.step_index_of(tool)
    if not isinstance(arguments, str) or not arguments or index is None:
        return []
    known: set[str] = set()
    captured = False
    for step in run.steps:
        step_index = step.attributes.get(STEP_INDEX)
        if not isinstance(step_index, int) or step_index > index:
            continue
        for _, role, content in new_messages(step):
            captured = True
            if role in detectors.RECEIVED_ROLES and content:
                known |= detectors.distinctive_values(content)
    if not captured:
        return []
    for other in run.tools:
        result = other.attributes.get(GEN_AI_TOOL_CALL_RESULT)
        if other.start_ns < tool.start_ns and isinstance(result, str) and result:
            known |= detectors.distinctive_values(result)
    return detectors.fabricated_values(arguments, known)


def received_once(run: Run, life: Lifecycle) -> tuple[set[str], dict[str, str]]:
    if life.received is None:
        life.received = received_values(run)
    return life.received


def dropped_context(run: Run, life: Lifecycle) -> list[Span]:
    """`context_dropped`, as the recorder checks it (`detectors`): messages of the previous step's
    context gone from this one, an error when one was a system or developer message. Roles come
    from the captured new messages; a lost message of unknown role counts (no content captured).
    Returns the steps of kind `final` (`fabricated`'s), found on the way."""
    previous: list[str] | None = None
    roles: dict[str, str] | None = None
    finals: list[Span] = []
    for step in run.steps:
        attributes = step.attributes
        if attributes.get(STEP_KIND) == "final":
            finals.append(step)
        hashes = attributes.get(CONTEXT_MESSAGE_HASHES)
        if not isinstance(hashes, list):
            previous = None
            continue
        if previous is not None and hashes[:len(previous)] != previous:  # (a context that grew lost nothing)
            lost = detectors.dropped_messages(previous, hashes)
            if lost:
                if roles is None:
                    roles = received_once(run, life)[1]
                if not roles or detectors.drops_instructions(roles.get(h, "system") for h in lost):
                    mark(life, step, ErrorType.CONTEXT_DROPPED.value,
                          f"{len(lost)} message(s) of the previous step's context are missing")
        previous = hashes
    return finals
