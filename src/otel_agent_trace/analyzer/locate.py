"""From a run's critical failure back to where its error originated.

1. Lifecycle phases are recomputed offline (lifecycle/): origins (errors where they first
   appear), recovered origins, and the *tainted* spans (origins and everything that depends on
   one).
2. Critical-failure rules (critical_rules.py) pick the critical spans; the first (the run span when it
   fired, else the earliest) is the one walked back from.
3. The walk goes backwards over dependency edges, cheapest path first, where a path's cost is
   (weak hops, hops):
   * strong edges (`decided_by`, `data`, `resource`) and the run's `result_of` are always followed;
   * a weak edge (`consumes`, context only) is followed only into a tainted span: a step that
     merely saw an earlier healthy output is not blamed, but a step that read an error is how the
     error reached the next decision;
   * `retry_of` is followed only into a failed attempt that was not recovered.
4. The unrecovered origins reached are the suspects; those that do not themselves depend on
   another suspect are the *roots*, each the start of one independent chain. Roots are ranked by
   evidence: `1.0` recorded online, `0.8` derived offline, times `0.8` when the whole graph was
   inferred from the span tree, times `0.9` per weak hop on the path; ties go to the earliest.
   A root's confidence is its share of the total, times the best evidence (so one recorded,
   strongly connected root has 1.0, and ambiguity lowers everyone).
5. The origin is the top-ranked root; `chain` is its path; `chains` holds every root's path.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from otel_agent_trace.analyzer import silent, verdicts
from otel_agent_trace.analyzer.graph import RESULT_OF, Graph, LazyGraph
from otel_agent_trace.analyzer.lifecycle import SUSPICION, Lifecycle, compute, tool_error_type
from otel_agent_trace.analyzer.critical_rules import Fired, Rule, fire, load_rules
from otel_agent_trace.analyzer.runs import Run, is_tool_span
from otel_agent_trace.analyzer.settings import AnalyzerSettings
from otel_agent_trace.analyzer.spans import STATUS_ERROR, Span
from otel_agent_trace.causes import event_exception
from otel_agent_trace.semconv import ERROR_TYPE, GEN_AI_TOOL_NAME, STEP_KIND, STEP_TOOL_CALLS
from otel_agent_trace.vocabulary import STRONG_RELATIONS, ErrorType, Phase, Relation

WEAK_HOP_FACTOR = 0.9
DERIVED_EVIDENCE = 0.8
DERIVED_GRAPH = 0.8


@dataclass
class Hop:
    span: Span
    step_index: int | None
    phase: str
    error_type: str | None
    relation: str | None  # how the next hop depends on this one


@dataclass
class Candidate:
    span: Span
    error_type: str | None
    score: float
    confidence: float = 0.0
    weak_hops: int = 0
    derived: bool = False
    chain: list[Hop] = field(default_factory=list)
    suspect: bool = False  # no error recorded: the decision most likely at fault


@dataclass
class Finding:
    run: Run
    failed: bool
    critical: Span | None = None
    critical_error_type: str | None = None
    description: str = ""
    origin: Span | None = None
    origin_error_type: str | None = None
    chain: list[Hop] = field(default_factory=list)
    recovered: list[Span] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    bug_class: str | None = None
    # additions (issue 5)
    candidates: list[Candidate] = field(default_factory=list)
    chains: list[list[Hop]] = field(default_factory=list)
    fired: list[Fired] = field(default_factory=list)
    lifecycle: Lifecycle | None = None
    graph: Graph | None = None
    errors: list[Span] = field(default_factory=list)  # every unrecovered origin in the run
    confidence: float | None = None
    # origin span id -> the decision (step) that read it: where a failure of the tool or the
    # environment became the model's problem (the first propagate hop of its chain)
    readers: dict[str, Span] = field(default_factory=dict)
    # the run ended with an answer that depends on an unrecovered, proven error (status `suspect`)
    answer_suspect: bool = False
    # the sub-agent the origin is in, when the failure was followed across agents (delegation.py)
    origin_agent: str | None = None
    # a failed run without a proven origin: the places its text suggests, best first (analyzer/silent/)
    silent: list[Any] = field(default_factory=list)


def error_type_of(span: Span, life: Lifecycle | None = None) -> str | None:
    """The span's error type: offline lifecycle when given, else recorded, else from the outcome."""
    if life is not None:
        value = life.error_type(span.span_id)
        if value:
            return value
    recorded = span.attr(ERROR_TYPE)
    if recorded:
        return str(recorded)

    return tool_error_type(span)[0] if is_tool_span(span) else None


def find_critical(run: Run, life: Lifecycle, rules: list[Rule]) -> tuple[Span | None, list[Fired]]:
    fired = fire(run, life, rules)
    if not fired:
        return None, fired
    return fired[0].span, fired


def locate(run: Run, rules: list[Rule] | None = None, delegated: dict[str, str] | None = None,
           settings: AnalyzerSettings | None = None, top_level: bool = True) -> Finding:
    """`delegated`: span id -> error type of the spans that delegated to a sub-agent whose answer
    carried an error (analyzer/delegation.py): origins of this run. `settings`: the analysis's
    (None: the environment's now). `top_level`: the run is no sub-agent's (what a verdict about
    the whole task applies to, analyzer/verdicts.py)."""
    rules = load_rules(None) if rules is None else rules  # (the built-ins, and the evaluations' source)
    graph = LazyGraph(run)  # (edges built only if something reads them: most runs have no error)
    life = compute(run, graph, AnalyzerSettings.from_env() if settings is None else settings, delegated)
    known = verdicts.apply(run, life, rules, top_level)  # (a failure known from outside: a critical span)
    critical, fired = find_critical(run, life, rules)
    finding = Finding(run, failed=critical is not None, lifecycle=life, graph=graph, fired=fired)
    finding.evidence.extend(v.evidence for v in known)
    recovered = life.recovered
    if critical is not None and critical.span_id in recovered:
        # a rule calls failed attempts the run's failure although a later one succeeded
        # (TOOL_RETRY_EXCEEDED): those attempts are the failure, not errors it recovered from
        recovered = recovered - _retried_failures(graph, critical.span_id, recovered)
        finding.evidence.append(f"a later attempt succeeded, but rule {fired[0].rule.rule_id} calls this failure "
                                "(with the failed attempts it retried) the run's failure")
    live_ids = life.origins - recovered
    if life.origins:  # (else no error to list, no reader to find, no answer to suspect)
        finding.recovered = sorted((run.spans[s] for s in recovered), key=lambda s: (s.start_ns, s.span_id))
        # (a span that delegated to a sub-agent is an origin here only to be walked to: the error is the
        # sub-run's, listed there)
        own = live_ids - delegated.keys() if delegated else live_ids
        finding.errors = sorted((run.spans[s] for s in own if s in run.spans), key=lambda s: (s.start_ns, s.span_id))
        for sid in life.origins - (delegated.keys() if delegated else set()):
            reader = reader_of(run, graph, run.spans[sid], life) if sid in run.spans else None
            if reader is not None:
                finding.readers[sid] = reader
    if critical is None:
        if live_ids:
            _suspect_answer(finding, run, graph, life, live_ids)
        return finding
    finding.critical = critical
    finding.critical_error_type = error_type_of(critical, life) or (
        "run_exception" if critical is run.root and critical.status_code == STATUS_ERROR else None)
    finding.description = _describe(critical, fired[0].rule)
    verdict = next((v for v in known if (v.span_id or run.root.span_id) == critical.span_id), None)
    if verdict is not None and isinstance(fired[0].rule, verdicts.VerdictSource):
        finding.critical_error_type, finding.description = verdict.error_type, verdict.evidence
    if not any(f.rule.trace_back for f in fired if f.span is critical):
        finding.evidence.append(f"rule {fired[0].rule.rule_id} fired without traceBack: origin not searched")
        return finding
    dist, parent = _walk(graph, life, critical.span_id, live_ids)
    suspects = [s for s in dist if s in live_ids]
    if not suspects and critical.span_id in live_ids:
        suspects = [critical.span_id]
    roots = [s for s in suspects if not (_upstream(graph, life, s, live_ids) & (set(suspects) - {s}))]
    if not roots:
        expected = next((v.expected for v in known if v.expected is not None), None)
        if not _suspect_silent(finding, run, life, critical, expected):
            _suspect_final_step(finding, run, graph, life, critical)
        return finding
    cands = []
    for sid in roots:
        span = run.spans[sid]
        st = life.states.get(sid)
        derived = bool(st and st.derived)
        weak = dist[sid][0]
        score = (DERIVED_EVIDENCE if derived else 1.0) * (DERIVED_GRAPH if graph.derived else 1.0) \
            * WEAK_HOP_FACTOR ** weak
        cand = Candidate(span, error_type_of(span, life), score, weak_hops=weak, derived=derived or graph.derived)
        cand.chain = _chain(run, life, parent, sid, critical.span_id)
        cands.append(cand)
    cands.sort(key=lambda c: (-c.score, c.span.start_ns, c.span.span_id))
    total = sum(c.score for c in cands)
    best = cands[0].score
    for c in cands:
        c.confidence = round(c.score / total * best, 3)
    finding.candidates = cands
    finding.chains = [c.chain for c in cands]
    top = cands[0]
    finding.origin = top.span
    finding.origin_error_type = top.error_type
    finding.chain = top.chain
    finding.confidence = top.confidence
    return finding


def _suspect_answer(finding: Finding, run: Run, graph: Graph, life: Lifecycle, live_ids: set[str]) -> None:
    """A run no rule failed whose answer depends on an error: the walk of step 3 from the step that
    answered reaches an unrecovered origin that is proven (not a `suspicion`). Then the run is
    `suspect`, with origin and chain as a failed run's, the answering step in the critical's place."""
    proven = {s for s in live_ids if SUSPICION not in life.states[s].flags} if live_ids else set()
    if not proven or not run.steps:
        return
    answer = run.steps[-1]
    kind = answer.attributes.get(STEP_KIND)
    if kind is not None and kind != "final":
        return  # the run stopped on a tool call or a truncated output: no answer to suspect
    dist, parent = _walk(graph, life, answer.span_id, proven)
    reached = sorted((s for s in dist if s in proven), key=lambda s: (dist[s], run.spans[s].start_ns, s))
    if not reached:
        return
    roots = [s for s in reached if not (_upstream(graph, life, s, proven) & (set(reached) - {s}))] or reached
    origin = min(roots, key=lambda s: (run.spans[s].start_ns, s))
    finding.answer_suspect = True
    finding.origin = run.spans[origin]
    finding.origin_error_type = error_type_of(finding.origin, life)
    finding.chain = _chain(run, life, parent, origin, answer.span_id)
    finding.chains = [finding.chain]
    finding.evidence.append(f"the answer of {answer.name} depends on {finding.origin.name} "
                            f"({finding.origin_error_type}), which nothing recovered")


def reader_of(run: Run, graph: Graph, span: Span, life: Lifecycle | None = None) -> Span | None:
    """The step that read an error: one with a `consumes` edge to it (or to a tool it ran), else
    the first step that started after it ended. None for a step's own error (it is the decision)
    and when no step follows, except a model call that failed (`llm_error`): it returned nothing,
    so it decided nothing; the next step is the first decision made knowing of the failure."""
    if span in run.steps and not (life is not None and life.error_type(span.span_id) == ErrorType.LLM_ERROR.value):
        return None
    steps = acting_steps(run)
    step_ids = {s.span_id for s in steps}
    targets = {span.span_id} | {t.span_id for t in run.tools if t.parent_id == span.span_id}
    readers = [run.spans[src] for t in targets for src, rel in graph.reverse.get(t, ())
               if rel == Relation.CONSUMES.value and src in step_ids]
    if readers:
        return min(readers, key=lambda s: (s.start_ns, s.span_id))
    # (a framework's step span that failed holds the model call that wrote what failed: not its reader)
    later = [s for s in steps if s.start_ns >= span.end_ns and s.parent_id != span.span_id]
    return later[0] if later else None


def acting_steps(run: Run) -> list[Span]:
    """The steps that decide an action. When a framework nests its model calls in step spans
    (smolagents' `Step N`), a model call directly under the run span is a planning call (a plan or
    its update, which restates the history): it reads an error but acts on nothing, so it is not
    where the error became a decision. Without nesting every step acts."""
    root = run.root.span_id
    nested = [s for s in run.steps if s.parent_id and s.parent_id != root]
    return nested if nested else list(run.steps)


def _suspect_silent(finding: Finding, run: Run, life: Lifecycle, critical: Span, expected: Any = None) -> bool:
    """A failed run with no proven origin: the places `silent.suspicions` reads in its text, as
    suspected origins (flag `suspicion`, listed in `errors[]`), the first one the run's origin.
    `expected`: the answer the run should have given, when a verdict knows it. False when the
    text names none."""
    found = silent.suspicions(run, expected)
    if not found:
        return False
    total = sum(s.score for s in found)
    cands = []
    for s in found:
        state = life.state(s.span.span_id)
        if state.phase is None:
            state.phase = Phase.ORIGIN.value
        state.error_type = state.error_type or s.signal
        state.derived = True
        state.reason = s.reason
        state.flags |= {SUSPICION, *s.signals}
        life.origins.add(s.span.span_id)
        hops = [Hop(s.span, run.step_index_of(s.span), Phase.ORIGIN.value, state.error_type, RESULT_OF),
                Hop(critical, run.step_index_of(critical), Phase.CRITICAL.value, finding.critical_error_type, None)]
        cands.append(Candidate(s.span, state.error_type, s.score, confidence=round(s.score / total * s.score, 3),
                               derived=True, chain=hops, suspect=True))
    listed = {e.span_id: e for e in finding.errors} | {c.span.span_id: c.span for c in cands}
    finding.errors = sorted(listed.values(), key=lambda x: (x.start_ns, x.span_id))
    finding.candidates = cands
    finding.chains = [c.chain for c in cands]
    top = cands[0]
    finding.origin, finding.origin_error_type, finding.chain = top.span, top.error_type, top.chain
    finding.confidence = top.confidence
    finding.silent = found
    finding.evidence.append(f"no proven error before the failure: the places below are suspicions read from the "
                            f"run's text, best first; {found[0].reason}")
    return True


def _suspect_final_step(finding: Finding, run: Run, graph: Graph, life: Lifecycle, critical: Span) -> None:
    last = run.steps[-1] if critical is run.root and run.steps else None
    pending = _pending_tool_calls(graph, last) if last is not None else None
    if pending:
        # (a plain loop's tool result is recorded when the next model call carries it: none did)
        finding.evidence.append(
            f"no error was recorded before the failure: the run stopped after step {run.step_index_of(last)} "
            f"requested {', '.join(pending)}, before any model call read the results; the failure came while "
            "those tools ran or from the program's own check of their results, which the trace does not hold "
            "(record them with @otel_agent_trace.tool)")
    else:
        finding.evidence.append("no error was recorded before the failure: its cause is outside the trace "
                                "or in the model's final answer")
    if last is not None:
        hops = [Hop(last, run.step_index_of(last), Phase.ORIGIN.value, None, RESULT_OF),
                Hop(critical, run.step_index_of(critical), Phase.CRITICAL.value, error_type_of(critical, life), None)]
        finding.candidates = [Candidate(last, None, 0.3, confidence=0.3, chain=hops, suspect=True)]


def _pending_tool_calls(graph: Graph, step: Span) -> list[str]:
    """The tools a step asked for of which the trace holds no span (none decided by it)."""
    requested = step.attr(STEP_TOOL_CALLS)
    if step.attr(STEP_KIND) != "tool_call" or not isinstance(requested, list) or not requested:
        return []
    if any(relation == Relation.DECIDED_BY.value for _, relation in graph.reverse.get(step.span_id, ())):
        return []
    return [str(name) for name in requested]


def _retried_failures(graph: Graph, start: str, failed: set[str]) -> set[str]:
    """`start` and the attempts it retried, back over `retry_of` edges while they are in `failed`."""
    out, todo = {start}, [start]
    while todo:
        for target, relation in graph.edges.get(todo.pop(), ()):
            if relation == Relation.RETRY_OF.value and target in failed and target not in out:
                out.add(target)
                todo.append(target)
    return out


def _walk(graph: Graph, life: Lifecycle, start: str,
          live: set[str]) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[str, str]]]:
    """Cheapest (weak hops, hops) paths from `start` backwards over the allowed edges; `live`: the
    unrecovered origins (a retry is followed only into one of them)."""
    dist: dict[str, tuple[int, int]] = {start: (0, 0)}
    parent: dict[str, tuple[str, str]] = {}
    heap = [(0, 0, start)]
    while heap:
        weak, hops, node = heapq.heappop(heap)
        if dist.get(node, (1 << 30, 0)) < (weak, hops):
            continue
        for target, relation in graph.edges.get(node, ()):
            cost = _edge_cost(relation, target, life, live)
            if cost is None:
                continue
            new = (weak + cost, hops + 1)
            if new < dist.get(target, (1 << 30, 0)):
                dist[target] = new
                parent[target] = (node, relation)
                heapq.heappush(heap, (new[0], new[1], target))
    return dist, parent


def _edge_cost(relation: str, target: str, life: Lifecycle, live: set[str]) -> int | None:
    if relation in STRONG_RELATIONS or relation == RESULT_OF:
        return 0
    if relation == Relation.RETRY_OF.value:
        return 0 if target in live else None
    return 1 if target in life.tainted else None  # consumes and unknown relations: weak


def _upstream(graph: Graph, life: Lifecycle, start: str, live: set[str]) -> set[str]:
    dist, _ = _walk(graph, life, start, live)
    return set(dist) - {start}


def _chain(run: Run, life: Lifecycle, parent: dict[str, tuple[str, str]], origin: str, critical: str) -> list[Hop]:
    path: list[tuple[str, str | None]] = []
    node = origin
    while node != critical and node in parent:
        nxt, relation = parent[node]
        path.append((node, relation))
        node = nxt
    path.append((critical, None))
    hops = []
    for i, (span_id, relation) in enumerate(path):
        span = run.spans[span_id]
        phase = Phase.ORIGIN.value if i == 0 else Phase.CRITICAL.value if i == len(path) - 1 else Phase.PROPAGATE.value
        hops.append(Hop(span, run.step_index_of(span), phase, error_type_of(span, life), relation))
    return hops


def _describe(span: Span, rule: Rule) -> str:
    return failure_text(span) or str(rule.description or span.attr(ERROR_TYPE) or span.name)


def failure_text(span: Span) -> str | None:
    """What the span said when it failed: its status message, else its first exception event (an
    exception group, in either: the exception that caused it)."""
    event = next((e for e in span.events if e.name == "exception"), None)
    if event is not None:
        exc_type, message = event_exception(event.attributes)
        if not span.status_message or exc_type != event.attributes.get("exception.type"):
            return f"{exc_type}: {message}"
    return span.status_message or None


def tool_name(span: Span) -> Any:
    return span.attr(GEN_AI_TOOL_NAME) if is_tool_span(span) else None
