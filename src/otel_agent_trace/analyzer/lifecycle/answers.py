"""Final answers: values never received (`fabricated_value`) and answers no tool result supports
(`unsupported_answer`)."""

from __future__ import annotations

import re
from typing import Any

from otel_agent_trace import detectors
from otel_agent_trace.analyzer.lifecycle.context import received_once, received_texts
from otel_agent_trace.analyzer.lifecycle.state import START_ID, Lifecycle, mark
from otel_agent_trace.analyzer.normalize.evidence import asks_for_lookup, listed_tools, mentioned
from otel_agent_trace.analyzer.runs import Run
from otel_agent_trace.analyzer.spans import Span
from otel_agent_trace.messages import semconv_messages
from otel_agent_trace.semconv import GEN_AI_TOOL_NAME, STEP_KIND, SUBAGENT_RUNS
from otel_agent_trace.vocabulary import ErrorType

UNSUPPORTED_ANSWER = "unsupported_answer"  # analyzer only: see `unsupported_answer`


SUSPICION = "suspicion"  # an origin inferred without proof (see unsupported_answer): not a proven error
PLAN_NAMED_TOOL = "plan_named_tool"


FINAL_ANSWER_TOOL = re.compile(r"^(?:final[_ ]?answer|FinalAnswerTool)$", re.IGNORECASE)


def is_final_answer_tool(span: Span) -> bool:
    return bool(FINAL_ANSWER_TOOL.match(str(span.attr(GEN_AI_TOOL_NAME) or span.name.removeprefix("execute_tool "))))


def unsupported_answer(run: Run, life: Lifecycle, definitions: set[str] | None) -> None:
    """A final answer no tool result supports (`unsupported_answer`, analyzer only: weaker than
    `fabricated_value`, which names values never received).

    The agent provably had tools: it delivered its answer through a final-answer tool
    (`final_answer`, smolagents' `FinalAnswerTool`), or tool definitions are recorded. Yet the run
    executed no other tool and delegated to no sub-agent (`agent_trace.run.subagent_runs`, set by
    normalization): whatever the answer states came from the model alone. The origin is the step
    that decided the answer. Runs with an earlier error are left alone (that error is the story),
    and so are runs whose tool list (recorded, or listed in the prompt) holds nothing but the final
    answer: a code agent given no tool does its work in code, and had nothing else to call.
    """
    if not run.steps or any(s in run.spans for s in life.origins):
        return
    if run.root.attr(SUBAGENT_RUNS):
        return
    finals: list[Span] = []
    for tool in run.tools:
        if not is_final_answer_tool(tool):
            return  # a tool other than the final answer ran: the answer may rest on its result
        finals.append(tool)
    has_tools = bool(finals) or bool(definitions and any(not FINAL_ANSWER_TOOL.match(d) for d in definitions))
    if not has_tools:
        return
    if finals:
        decider = max((s for s in run.steps if s.start_ns <= finals[0].start_ns), key=lambda s: s.start_ns, default=None)
    else:
        decider = run.steps[-1]
        if decider.attr(STEP_KIND) not in (None, "final"):
            return  # the run stopped on a tool call (its results never read) or a truncated output: no answer
    if decider is None:
        return
    given, outputs = _tools_given(run, decider, definitions)
    if given is not None and not given:
        return  # its only tool was the final answer: there was nothing else to call
    index = run.step_index_of(decider)
    planned = set().union(*(mentioned(text, given) for text in outputs)) if given and outputs else set()
    reason = (f"final answer at step {index} rests on no tool result: the run called no tool but the final answer "
              "and no sub-agent, though it had tools")
    if planned:
        reason += f"; its own plan named {', '.join(sorted(planned))}, which it never called"
    else:
        reason += "; low confidence (a suspicion): nothing in the trace says the task needed a tool"
        # (the first step nested as the answering one is: a framework's planning calls, made
        # beside its step spans rather than in one, are not steps that could have called a tool)
        wrapped = decider.parent_id != run.root.span_id
        first = next(s for s in run.steps if (s.parent_id != run.root.span_id) == wrapped)
        if first is not decider:
            reason += f"; the first step ({run.step_index_of(first)}) already went without one"
            decider = first
        plan = _plan_before(run, first) if wrapped else None
        if plan is not None:
            word = asks_for_lookup(plan)
            if word is None:
                return  # its own plan works on what the task gives: going without a tool was the plan
            reason += f"; its plan asked for a lookup ({word!r}) that no step made"
    mark(life, decider, UNSUPPORTED_ANSWER, reason)
    life.state(decider.span_id).flags.add(PLAN_NAMED_TOOL if planned else SUSPICION)


def _plan_before(run: Run, first: Span) -> str | None:
    """The text of the plan before the first step: the last planning call a framework made beside
    its step spans (smolagents' facts-then-plan calls), None without one.

    A plan that asks for no lookup (`asks_for_lookup`: no search, source, page, paper, ...; a
    cipher, a logic puzzle, a table given in the task) shows the task needs nothing from outside:
    answering from the model alone is then what the plan meant, not a suspicion. A plan that asked
    for a lookup the steps then skipped keeps the suspicion at the first step: the run went
    against its own plan."""
    from otel_agent_trace.analyzer.normalize.conventions import LLM, facts_of

    plans = [s for s in run.steps if s.parent_id == run.root.span_id and s.start_ns < first.start_ns]
    if not plans:
        return None
    plan = max(plans, key=START_ID)
    facts = facts_of(plan)
    if facts is None or facts.role != LLM or not facts.output_text:
        return None
    return facts.output_text


def _tools_given(run: Run, decider: Span, definitions: set[str] | None) -> tuple[set[str] | None, list[str]]:
    """The tools the model was given up to the answering decision (recorded definitions, or listed in
    its prompts as `- name: ...`), other than the final answer, and its outputs up to then. The set
    is None when no tool list is known at all (nothing recorded, no prompt lists one)."""
    from otel_agent_trace.analyzer.normalize.conventions import LLM, facts_of

    given = set(definitions or ())
    known = definitions is not None
    outputs: list[str] = []
    for span in sorted(run.spans.values(), key=START_ID):
        if span.start_ns > decider.end_ns:
            break
        facts = facts_of(span)
        if facts is None or facts.role != LLM:
            continue
        for message in facts.inputs:
            listed = listed_tools(message.content)
            known = known or bool(listed)
            given |= listed
        if facts.output_text:
            outputs.append(facts.output_text)
    if not known:
        return None, outputs
    return {n for n in given if not FINAL_ANSWER_TOOL.match(n)}, outputs


def answer_text(output: Any) -> str | None:
    """The final answer in a step's model call's output messages (`gen_ai.output.messages`, as
    `chat_origins` returns them), if recorded."""
    if output is None:
        return None
    return "\n".join([m.content for m in semconv_messages(output) if m.content])


def fabricated(run: Run, life: Lifecycle, finals: list[Span], results: list[str], answers: dict[str, Any]) -> None:
    """`fabricated_value`, as the recorder checks it (`detectors.fabricated_values`): values of a
    final answer (a step of kind `final`) the model never received. Needs captured content. On
    the way, of the run's last answer: its text, `Lifecycle.verifiable` (the reliability metrics')
    and `grounded` (what recovery asks: does the answer rest on something the run received).
    `finals`, `results` and `answers`: the final steps, the result texts and the output messages
    by parent, as the passes before collected them."""
    known: set[str] | None = None
    result_values: set[str] | None = None
    for step in finals:
        answer = answer_text(answers.get(step.span_id))
        last = step is run.steps[-1]
        if last:
            life.answer = answer
        values = detectors.distinctive_values(answer) if answer else frozenset()
        if not values:
            life.verifiable = life.grounded = None
            continue  # nothing in it to check (the common case needs no look at the context)
        if result_values is None and _all_in_results(results, values):
            unverified: list[str] = []  # each value found in some result: nothing unseen
        else:
            if result_values is None:
                result_values = _tool_results(results)
            unverified = detectors.fabricated_values(answer, result_values, detectors.Received(results))
        if last:
            life.verifiable = life.grounded = not unverified
        if not unverified:
            continue  # every value is in (or derived from) the results: in all that was seen too
        if known is None:
            known = received_once(run, life)[0]
        values = detectors.fabricated_values(answer, known, received_texts(run))
        if last:
            life.grounded = not values
        if values:
            mark(life, step, ErrorType.FABRICATED_VALUE.value,
                  f"value{'s' if len(values) > 1 else ''} {', '.join(values[:5])} never seen in the input, "
                  "the instructions or a tool result")


def _all_in_results(texts: list[str], values: frozenset[str]) -> bool:
    """Whether every value of an answer is among the tool results' values, proven by reading
    only the results whose text holds the value as written (a substring test in C); False when
    that does not prove it, and the caller reads every result (`_tool_results`). Same answer, a
    fraction of the work: scanning every result was half the analysis on runs with answers.
    `texts`: the non-empty result texts."""
    for key in values:
        needle = key[2:]
        for text in texts:
            if needle in text and key in detectors.distinctive_values(text):
                break
        else:
            return False
    return True


def _tool_results(texts: list[str]) -> set[str]:
    """The distinctive values of the run's tool results (`texts`: the non-empty result texts)."""
    out: set[str] = set()
    for text in texts:
        out |= detectors.distinctive_values(text)
    return out
