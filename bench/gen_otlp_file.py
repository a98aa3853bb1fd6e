"""Generate a large OTLP JSON Lines file of agent traces, shaped like the Collector's file exporter.

One line per exported batch (`--batch` spans), spans of `--interleave` concurrent runs mixed in each
batch, so a trace is spread over many lines. Every run has our span shape: `invoke_agent` ▸
`agent_step N` ▸ `chat` + `execute_tool`, with context hashes, tool arguments/results, outcomes and
dependency attributes; one run in `--fail-every` fails with an empty tool result at step 0.

    python bench/gen_otlp_file.py OUT.jsonl --mb 200

`--from FILE` instead replicates the records of a real OTLP JSON Lines file (`.gz` too), each
copy with fresh trace ids, up to `--mb`: e.g. the TRAIL GAIA traces, whose spans carry the full
message content OpenInference records (about 25 KB per span, against about 1.2 KB for our default
span shape above).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import random

import orjson
from otel_agent_trace.semconv import (
    CONTEXT_HASH,
    CONTEXT_MESSAGES,
    CONTEXT_MESSAGE_HASHES,
    DEPENDS_ON,
    DEPENDS_ON_RELATIONS,
    ERROR_TYPE,
    GEN_AI_AGENT_NAME,
    GEN_AI_OPERATION_NAME,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    LIFECYCLE_PHASE,
    LINK_RELATION,
    STEP_INDEX,
    STEP_KIND,
    TOOL_OUTCOME,
)


def _attr(key, value):
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    if isinstance(value, list):
        return {"key": key, "value": {"arrayValue": {"values": [_attr("", v)["value"] for v in value]}}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _span(trace_id, span_id, parent, name, start, end, attrs, kind=1, status=0, links=()):
    out = {"traceId": trace_id, "spanId": span_id, "name": name, "kind": kind,
           "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
           "attributes": [_attr(k, v) for k, v in attrs.items()], "events": [],
           "links": [{"traceId": trace_id, "spanId": t, "attributes": [_attr(LINK_RELATION, r)]}
                     for t, r in links],
           "status": {"code": status} if status else {}}
    if parent:
        out["parentSpanId"] = parent
    return out


def run_spans(rng: random.Random, index: int, t0: int, failing: bool) -> list[dict]:
    trace_id = "%032x" % rng.getrandbits(128)
    ids = iter("%016x" % rng.getrandbits(64) for _ in range(1000))
    root = next(ids)
    spans = []
    steps = rng.randint(3, 8)
    t = t0
    previous_tools: list[str] = []
    text = "lorem ipsum dolor sit amet order %d customer %d " % (index, rng.randint(1, 10**6))
    for n in range(steps):
        step = next(ids)
        chat = next(ids)
        final = n == steps - 1
        deps = [(s, "consumes") for s in previous_tools]
        spans.append(_span(trace_id, chat, step, "chat gpt-4o-mini", t + 10, t + 900_000, {
            GEN_AI_OPERATION_NAME: "chat", GEN_AI_PROVIDER_NAME: "openai", GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
            GEN_AI_USAGE_INPUT_TOKENS: rng.randint(200, 4000), GEN_AI_USAGE_OUTPUT_TOKENS: rng.randint(10, 300),
            GEN_AI_RESPONSE_FINISH_REASONS: ["stop" if final else "tool_calls"],
            GEN_AI_OUTPUT_MESSAGES: orjson.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text * 4}]}]).decode(),
        }, kind=3))
        tools = []
        if not final:
            for k in range(rng.randint(1, 2)):
                tool = next(ids)
                result = "[]" if failing and n == 0 else orjson.dumps({"rows": [text] * rng.randint(1, 6)}).decode()
                outcome = "empty_result" if result == "[]" else "ok"
                spans.append(_span(trace_id, tool, step, "execute_tool lookup_order", t + 1_000_000, t + 1_500_000, {
                    GEN_AI_OPERATION_NAME: "execute_tool", GEN_AI_TOOL_NAME: "lookup_order",
                    GEN_AI_TOOL_CALL_ID: "call_%d_%d_%d" % (index, n, k),
                    GEN_AI_TOOL_CALL_ARGUMENTS: orjson.dumps({"order_id": "A-%d" % rng.randint(1, 99999)}).decode(),
                    GEN_AI_TOOL_CALL_RESULT: result, TOOL_OUTCOME: outcome,
                    STEP_INDEX: n, DEPENDS_ON: [step],
                    DEPENDS_ON_RELATIONS: ["decided_by"],
                }, links=[(step, "decided_by")]))
                tools.append(tool)
        attrs = {STEP_INDEX: n, STEP_KIND: "final" if final else "tool_call",
                 CONTEXT_HASH: hashlib.sha256(b"%d-%d" % (index, n)).hexdigest(),
                 CONTEXT_MESSAGE_HASHES: [hashlib.sha1(b"%d" % m).hexdigest()[:12] for m in range(2 * n + 2)],
                 CONTEXT_MESSAGES: 2 * n + 2}
        if deps:
            attrs[DEPENDS_ON] = [d for d, _ in deps]
            attrs[DEPENDS_ON_RELATIONS] = [r for _, r in deps]
        spans.append(_span(trace_id, step, root, "agent_step %d" % n, t, t + 2_000_000, attrs, links=deps))
        previous_tools = tools
        t += 2_000_000
    root_attrs = {GEN_AI_OPERATION_NAME: "invoke_agent", GEN_AI_AGENT_NAME: "support_agent"}
    status = 0
    if failing:
        root_attrs.update({LIFECYCLE_PHASE: "critical", ERROR_TYPE: "run_exception"})
        status = 2
    spans.append(_span(trace_id, root, None, "invoke_agent support_agent", t0, t, root_attrs, status=status))
    return spans


def line_of(spans: list[dict]) -> bytes:
    return orjson.dumps({"resourceSpans": [{
        "resource": {"attributes": [_attr("service.name", "support-agent")]},
        "scopeSpans": [{"scope": {"name": "otel_agent_trace"}, "spans": spans}]}]}) + b"\n"


def generate(path: str, megabytes: float, batch: int = 64, interleave: int = 8, fail_every: int = 5, seed: int = 7) -> int:
    """Write about `megabytes` MB; returns the number of runs written."""
    rng = random.Random(seed)
    limit = int(megabytes * 1_000_000)
    written = 0
    runs = 0
    pending: list[dict] = []
    active: list[list[dict]] = []
    t0 = 1_764_000_000_000_000_000
    with open(path, "wb") as out:
        while written < limit or pending or active:
            while written < limit and len(active) < interleave:
                active.append(run_spans(rng, runs, t0 + runs * 1_000_000, runs % fail_every == 1))
                runs += 1
            if not active and not pending:
                break
            # take the next ended span of a random active run (spans end children-first)
            if active:
                which = rng.randrange(len(active))
                pending.append(active[which].pop(0))
                if not active[which]:
                    active.pop(which)
            if len(pending) >= batch or (not active and pending):
                data = line_of(pending)
                out.write(data)
                written += len(data)
                pending = []
    return runs


def replicate(source: str, path: str, megabytes: float) -> int:
    """Copies of `source`'s records, each with its own trace ids, until `megabytes` MB are written;
    returns the number of copies."""
    opener = gzip.open if source.endswith(".gz") else open
    with opener(source, "rb") as handle:
        records = [orjson.loads(line) for line in handle if line.strip()]
    limit = int(megabytes * 1_000_000)
    written = copies = 0
    with open(path, "wb") as out:
        while written < limit:
            fresh: dict[str, str] = {}

            def renamed(trace_id: str) -> str:
                if trace_id not in fresh:
                    fresh[trace_id] = hashlib.sha256(b"%d:%s" % (copies, trace_id.encode())).hexdigest()[:32]
                return fresh[trace_id]

            for record in records:
                for resource_spans in record.get("resourceSpans", ()):
                    for scope_spans in resource_spans.get("scopeSpans", ()):
                        for span in scope_spans.get("spans", ()):
                            span["traceId"] = renamed(span["traceId"])
                            for link in span.get("links") or ():
                                link["traceId"] = renamed(link["traceId"])
                data = orjson.dumps(record) + b"\n"
                out.write(data)
                written += len(data)
                if written >= limit:
                    break
            copies += 1
    return copies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--mb", type=float, default=200.0)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--interleave", type=int, default=8)
    parser.add_argument("--from", dest="source", help="replicate this OTLP JSON Lines file (.gz too) instead")
    parser.add_argument("--smoke", action="store_true", help="the test suite's run: 0.2 MB")
    args = parser.parse_args()
    if args.smoke:
        args.mb = 0.2
    if args.source:
        print(f"{args.out}: {replicate(args.source, args.out, args.mb)} copies of {args.source}")
        return
    runs = generate(args.out, args.mb, args.batch, args.interleave)
    print(f"{args.out}: {runs} runs")


if __name__ == "__main__":
    main()
