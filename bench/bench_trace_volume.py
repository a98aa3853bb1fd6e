#!/usr/bin/env python3
"""Trace volume of an N-step agent run, ours vs the official OpenAI instrumentation, content on.

    python3 bench/bench_trace_volume.py                 # 10/25/50 steps, both sides, table + JSON
    python3 bench/bench_trace_volume.py --steps 50 --json out.json --keep DIR

Each side runs in its own venv (`bench/.venvs/<side>`, built on first use) in a subprocess: the
same deterministic agent loop (`_agent_loop.run_agent`: ~1.2 KB system prompt, 6 tool
definitions, tool results of 0.3-2 KB, one tool call + one tool result per step, the final answer
on the last call) with the real `openai` client over an in-process `httpx2.MockTransport`, a real
SDK `TracerProvider` and one `BatchSpanProcessor` to the official OTLP JSON Lines file exporter
(`opentelemetry-exporter-otlp-json-file`, the class our `agent_trace_file` extends), so the bytes
are comparable. Sides:
  ours      AgentTraceInstrumentor, capture_content=true (the default);
  official  opentelemetry-instrumentation-openai-v2 2.4b0 (+ util-genai 1.1b0),
            OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only.
The bench asserts that both sides saw byte-identical requests, and that our trace alone lets
`reconstruct_contexts` rebuild every step's full context (checked message by message against the
requests the model really received, and hash by hash against `agent_trace.context.message_hashes`).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator
from otel_agent_trace.semconv import (
    CONTEXT_MESSAGE_HASHES,
    CONTEXT_NEW_MESSAGES,
    CONTEXT_SHARED_PREFIX,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_TOOL_CALL_RESULT,
    OUTPUT_MESSAGE_HASH,
    STEP_INDEX,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _agent_loop as loop  # noqa: E402

SCRIPT = Path(__file__).resolve()
GOAL_RATIO = 8.0  # issue 31 (issue 3: 5): ours at most 1/8 of the official's bytes at 50 steps

CONTENT_FROM = "content_from"  # an item of new_messages whose content is that span's GEN_AI_TOOL_CALL_RESULT


# --- reading OTLP JSON Lines (stdlib only) ------------------------------------------------------
def _value(v: dict[str, Any]) -> Any:
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: _value(kv.get("value", {})) for kv in v["kvlistValue"].get("values", [])}
    return None


def read_spans(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Spans of an OTLP JSON Lines file as dicts with `attributes` decoded to plain values."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            for rs in json.loads(line).get("resourceSpans", []):
                for ss in rs.get("scopeSpans", []):
                    for span in ss.get("spans", []):
                        attrs = {a["key"]: _value(a.get("value", {})) for a in span.get("attributes", [])}
                        yield {**span, "attributes": attrs}


# --- reconstruction of every step's context from our trace -------------------------------------
def reconstruct_contexts(spans: Iterable[dict[str, Any]]) -> dict[str, list[list[dict[str, Any]]]]:
    """Every step's full context (list of canonical messages), per trace id, in step order.

    Our trace stores each distinct message once: input messages in the `agent_trace.context.
    new_messages` of the step where they first appear (`[{"hash", "message"}]`; a tool result
    written whole on its `execute_tool` span is named there by that span's id, `content_from`, instead
    of written again), the model's own
    outputs in the chat span's `gen_ai.output.messages` (GenAI semconv role + parts, keyed by `agent_trace.output.message_hash`,
    since an output fed back in the next request is not new). Each step lists its context as
    `agent_trace.context.message_hashes`. Raises KeyError naming a hash that no span stores.
    Candidate for the analyzer (replay needs exactly this); kept here, dependency-free, for now.
    """
    spans = list(spans)
    results = {span["spanId"]: span["attributes"][GEN_AI_TOOL_CALL_RESULT] for span in spans if GEN_AI_TOOL_CALL_RESULT in span["attributes"]}
    store: dict[str, dict[str, Any]] = {}
    steps: dict[str, list[tuple[int, list[str]]]] = {}
    for span in spans:
        attrs = span["attributes"]
        if CONTEXT_NEW_MESSAGES in attrs:
            for item in json.loads(attrs[CONTEXT_NEW_MESSAGES]):
                message = item["message"]
                if CONTENT_FROM in item:  # a tool result its execute_tool span holds: not written twice
                    message = {"role": message["role"], "content": results[item[CONTENT_FROM]],
                               **{k: v for k, v in message.items() if k != "role"}}
                store.setdefault(item["hash"], message)
        if OUTPUT_MESSAGE_HASH in attrs and GEN_AI_OUTPUT_MESSAGES in attrs:
            outputs = json.loads(attrs[GEN_AI_OUTPUT_MESSAGES])
            if outputs:
                store.setdefault(attrs[OUTPUT_MESSAGE_HASH], semconv_to_canonical(outputs[0]))
        if CONTEXT_MESSAGE_HASHES in attrs and STEP_INDEX in attrs:
            steps.setdefault(span["traceId"], []).append((attrs[STEP_INDEX], list(attrs[CONTEXT_MESSAGE_HASHES]),
                                                          attrs.get(CONTEXT_SHARED_PREFIX, 0)))
    contexts: dict[str, list[list[dict[str, Any]]]] = {}
    for trace_id, entries in steps.items():
        out = []
        previous: list[str] = []
        for _, listed, shared in sorted(entries, key=lambda e: e[0]):
            hashes = previous = previous[:shared] + listed  # docs/attributes.md: model.context_hashes
            missing = [h for h in hashes if h not in store]
            if missing:
                raise KeyError(f"trace {trace_id}: no span stores the messages {missing}")
            out.append([store[h] for h in hashes])
        contexts[trace_id] = out
    return contexts


def semconv_to_canonical(message: dict[str, Any]) -> dict[str, Any]:
    """A GenAI semconv output message (role + parts) in the canonical form we hash."""
    parts = message.get("parts") or ()
    out: dict[str, Any] = {"role": message.get("role") or "assistant"}
    text = "\n".join(str(p.get("content", "")) for p in parts if p.get("type") == "text")
    if text:
        out["content"] = text
    calls = [{"id": p.get("id") or "", "name": p.get("name") or "", "arguments": p.get("arguments")}
             for p in parts if p.get("type") == "tool_call"]
    if calls:
        out["tool_calls"] = calls
    return out


def canonical_message(raw: dict[str, Any]) -> dict[str, Any]:
    """The wire message in the canonical form we hash (docs/attributes.md, `Message.canonical`)."""
    content = raw.get("content")
    if isinstance(content, list):
        content = "\n".join(p.get("text", "") if p.get("type") in ("text", "input_text", "output_text")
                            else f"[{p.get('type')}]" for p in content)
    out: dict[str, Any] = {"role": raw.get("role") or "user"}
    if content:
        out["content"] = content
    calls = [c for c in raw.get("tool_calls") or () if c.get("function") is not None]
    if calls:
        out["tool_calls"] = [{"id": c.get("id") or "", "name": c["function"].get("name") or "",
                              "arguments": _parse(c["function"].get("arguments") or "")} for c in calls]
    if raw.get("tool_call_id"):
        out["tool_call_id"] = raw["tool_call_id"]
    if raw.get("name"):
        out["name"] = raw["name"]
    return out


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def short_hash(message: dict[str, Any]) -> str:
    data = json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return hashlib.sha256(data).hexdigest()[:16]


def verify_reconstruction(trace_file: str, requests: list[dict[str, Any]]) -> int:
    """Assert our trace rebuilds each request's messages exactly; return the number of steps checked."""
    spans = list(read_spans(trace_file))
    contexts = reconstruct_contexts(spans)
    assert len(contexts) == 1, f"expected one run, got {len(contexts)} traces"
    (steps,) = contexts.values()
    assert len(steps) == len(requests), f"{len(steps)} steps in the trace, {len(requests)} requests sent"
    listed = {s["attributes"][STEP_INDEX]: (s["attributes"][CONTEXT_MESSAGE_HASHES], s["attributes"].get(CONTEXT_SHARED_PREFIX, 0))
              for s in spans if CONTEXT_MESSAGE_HASHES in s["attributes"]}
    previous: list[str] = []
    for i, (rebuilt, request) in enumerate(zip(steps, requests)):
        sent = [canonical_message(m) for m in request["messages"]]
        assert rebuilt == sent, f"step {i}: reconstructed context differs from the request"
        hashes, shared = listed[i]
        previous = previous[:shared] + list(hashes)
        assert [short_hash(m) for m in sent] == previous, f"step {i}: message hashes differ"
    return len(steps)


# --- child: one side, one run ---------------------------------------------------------------------
def child(side: str, steps: int, out: str, requests_out: str) -> None:
    if side == "official":
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "span_only"
    from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "bench-agent"}))
    # one batch per run: the byte count does not depend on the export thread's timing
    provider.add_span_processor(BatchSpanProcessor(FileSpanExporter(out), schedule_delay_millis=3_600_000,
                                                   max_queue_size=100_000, max_export_batch_size=100_000))
    if side == "ours":
        from otel_agent_trace.instrumentor import AgentTraceInstrumentor

        AgentTraceInstrumentor().instrument(tracer_provider=provider, capture_content=True)
    elif side == "official":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
    else:
        raise SystemExit(f"unknown side {side}")
    record: list[bytes] = []
    client = loop.mock_client(lambda body: loop.completion(body, steps), record)
    loop.run_agent(client, steps)
    provider.force_flush()
    provider.shutdown()
    with open(requests_out, "wb") as fh:
        fh.write(b"[" + b",".join(record) + b"]")
    spans = list(read_spans(out))
    print(json.dumps({"side": side, "steps": steps, "bytes": os.path.getsize(out), "spans": len(spans),
                      "requests": len(record), "request_bytes": sum(len(r) for r in record),
                      "requests_sha256": hashlib.sha256(b"\n".join(record)).hexdigest()}))


# --- driver ----------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[10, 25, 50])
    parser.add_argument("--json", help="write the results here as JSON")
    parser.add_argument("--keep", help="keep the trace files in this directory")
    parser.add_argument("--here", action="store_true",
                        help="run both sides with this interpreter (it must hold the pinned packages of each side) "
                             "instead of building bench/.venvs")
    parser.add_argument("--smoke", action="store_true",
                        help="the test suite's check: --here, 3 and 5 steps; asserts the output's shape, not the ratio")
    parser.add_argument("--child", nargs=4, metavar=("SIDE", "STEPS", "OUT", "REQUESTS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        side, steps, out, requests_out = args.child
        child(side, int(steps), out, requests_out)
        return 0

    if args.smoke:
        args.here, args.steps = True, [3, 5]
    if args.here:
        pythons = {side: Path(sys.executable) for side in ("ours", "official")}
    else:
        pythons = {side: loop.ensure_venv(side) for side in ("ours", "official")}
    for side, python in pythons.items():
        if python is None:
            print(f"cannot install side {side}", file=sys.stderr)
            return 2
    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-volume-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict[int, dict[str, Any]] = {}
    for steps in args.steps:
        row: dict[str, Any] = {}
        for side in ("ours", "official"):
            out = workdir / f"{side}-{steps}.jsonl"
            req = workdir / f"{side}-{steps}-requests.json"
            out.unlink(missing_ok=True)
            # --here: the child imports what this process imports (a source tree on PYTHONPATH too)
            env = {"PYTHONPATH": os.pathsep.join([str(SCRIPT.parent), *sys.path[1:]])} if args.here else None
            row[side] = loop.run_child(pythons[side], SCRIPT, [side, str(steps), str(out), str(req)], env=env)
        assert row["ours"]["requests_sha256"] == row["official"]["requests_sha256"], \
            f"{steps} steps: the two sides did not send the same requests"
        requests = json.loads((workdir / f"ours-{steps}-requests.json").read_text())
        row["ours"]["reconstructed_steps"] = verify_reconstruction(str(workdir / f"ours-{steps}.jsonl"), requests)
        row["ratio"] = row["official"]["bytes"] / row["ours"]["bytes"]
        results[steps] = row
        print(f"[bench] {steps} steps: ours {row['ours']['bytes']} B, official {row['official']['bytes']} B, "
              f"official/ours {row['ratio']:.2f}x; context of all {steps} steps rebuilt from our trace", file=sys.stderr)

    print(report(results))
    if args.json:
        Path(args.json).write_text(json.dumps({"date": datetime.date.today().isoformat(),
                                               "machine": loop.machine_note(), "results": results}, indent=2))
    if not args.keep:
        for f in workdir.iterdir():
            f.unlink()
        workdir.rmdir()
    top = max(results)
    if args.smoke:
        for steps, row in results.items():
            assert row["ours"]["reconstructed_steps"] == steps and row["ours"]["spans"] == 3 * steps, row
            assert row["official"]["spans"] == steps and row["ratio"] > 0, row
        low, high = sorted(results)
        assert results[high]["ratio"] > results[low]["ratio"], results  # ours grows slower per step
        ratios = ", ".join(f"{s} steps {results[s]['ratio']:.2f}x" for s in sorted(results))
        print(f"smoke: OK ({ratios})")
        return 0
    ok = results[top]["ratio"] >= GOAL_RATIO
    print(f"\ngoal (issue 31) at {top} steps: ours <= 1/{GOAL_RATIO:g} of the official's bytes: "
          f"{'MET' if ok else 'NOT MET'} ({results[top]['ratio']:.2f}x smaller)")
    return 0


def report(results: dict[int, dict[str, Any]]) -> str:
    lines = [f"trace volume, OTLP JSON Lines, content on ({datetime.date.today().isoformat()}; {loop.machine_note()})", "",
             "| steps | request bytes sent | ours bytes | ours B/step | ours spans | official bytes | official B/step "
             "| official spans | official / ours |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for steps, row in sorted(results.items()):
        o, f = row["ours"], row["official"]
        lines.append(f"| {steps} | {o['request_bytes']:,} | {o['bytes']:,} | {o['bytes'] // steps:,} | {o['spans']} "
                     f"| {f['bytes']:,} | {f['bytes'] // steps:,} | {f['spans']} | {row['ratio']:.2f}x |")
    keys = sorted(results)
    if len(keys) >= 2:
        lines.append("")
        lines.append("marginal bytes per added step (between consecutive sizes):")
        for a, b in zip(keys, keys[1:]):
            for side in ("ours", "official"):
                per = (results[b][side]["bytes"] - results[a][side]["bytes"]) / (b - a)
                lines.append(f"  {side:8s} {a:>3} -> {b:<3}: {per:,.0f} B/step")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
