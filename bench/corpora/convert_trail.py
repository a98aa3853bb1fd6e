"""Convert a TRAIL split (Patronus AI, arXiv:2505.08638) to the OTLP/JSON corpus format `bench_trail.py` scores.

Why: /work/shared/benchmarks/trail-gaia was made by a converter (`bench_convert.py`) that is not in
this repository. TRAIL's SWE-bench split is the held-out data that checks whether analyzer rules
tuned on GAIA generalise, so it must be converted in exactly the same format; this script
reproduces that format (its GAIA output equals the shared corpus) and converts either split.

    python bench/corpora/convert_trail.py --split GAIA|SWE --out DIR [--repo MIRROR --commit 0ffbed9]

Reads TRAIL from a git mirror with `git show` (no work tree needed): `benchmarking/data/<split>/`
(traces) and `benchmarking/processed_annotations_<split>/` (annotations) at commit 0ffbed9, the
last upstream TRAIL commit. Writes DIR/traces.jsonl.gz, DIR/labels.jsonl and DIR/README.md.
The format is specified in /work/shared/benchmarks/trail-gaia/README.md. Standard library only.
"""

from __future__ import annotations

import argparse
import calendar
import collections
import difflib
import gzip
import json
import os
import re
import subprocess
import sys
from datetime import datetime
from typing import Any

DEFAULT_REPO = "/work/.mirror/JuneHou+CausalError/repo"
DEFAULT_COMMIT = "0ffbed9"
# --split -> (TRAIL's folder name, used in the labels' paths; traces folder; annotations folder)
SPLITS = {
    "GAIA": ("GAIA", "benchmarking/data/GAIA", "benchmarking/processed_annotations_gaia"),
    "SWE": ("SWE Bench", "benchmarking/data/SWE Bench", "benchmarking/processed_annotations_swe_bench"),
}

# The 21 leaves of the official scorer (benchmarking/calculate_scores.py), in its order, and
# their top class in TRAIL's taxonomy ("Incorrect Memory Usage" is a scorer-only leaf: no class).
LEAVES = [
    "Language-only", "Tool-related", "Poor Information Retrieval", "Incorrect Memory Usage",
    "Tool Output Misinterpretation", "Incorrect Problem Identification", "Tool Selection Errors",
    "Formatting Errors", "Instruction Non-compliance", "Tool Definition Issues",
    "Environment Setup Errors", "Rate Limiting", "Authentication Errors", "Service Errors",
    "Resource Not Found", "Resource Exhaustion", "Timeout Issues", "Context Handling Failures",
    "Resource Abuse", "Goal Deviation", "Task Orchestration",
]
TOP_CLASS = {
    **dict.fromkeys(["Language-only", "Tool-related", "Poor Information Retrieval", "Tool Output Misinterpretation",
                     "Incorrect Problem Identification", "Tool Selection Errors", "Formatting Errors",
                     "Instruction Non-compliance"], "Reasoning"),
    **dict.fromkeys(["Tool Definition Issues", "Environment Setup Errors", "Rate Limiting", "Authentication Errors",
                     "Service Errors", "Resource Not Found", "Resource Exhaustion", "Timeout Issues"],
                    "System Execution"),
    **dict.fromkeys(["Context Handling Failures", "Resource Abuse", "Goal Deviation", "Task Orchestration"],
                    "Planning and Coordination"),
    "Incorrect Memory Usage": None,
}
KINDS = {"unspecified": 0, "internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
STATUS = {"unset": 0, "ok": 1, "error": 2}
ERROR_KEYS = ("category", "location", "evidence", "description", "impact")


# -- reading the mirror ---------------------------------------------------------------------------

def git_list(repo: str, commit: str, folder: str) -> list[str]:
    """File names (not paths) under `folder` at `commit`."""
    out = subprocess.run(["git", "-C", repo, "ls-tree", "--name-only", "-z", f"{commit}:{folder}"],
                         check=True, capture_output=True).stdout
    return sorted(name for name in out.decode().split("\0") if name)


def git_read(repo: str, commit: str, path: str) -> str | None:
    """A file's text at `commit`, or None when its object is absent from the mirror."""
    done = subprocess.run(["git", "-C", repo, "show", f"{commit}:{path}"], capture_output=True)
    return done.stdout.decode("utf-8") if done.returncode == 0 else None


# -- values ---------------------------------------------------------------------------------------

def unix_nano(stamp: str) -> int:
    """ISO-8601 time -> ns since the epoch, exactly (no float); no offset means UTC."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?", stamp.strip())
    if not m:
        raise ValueError(f"unreadable timestamp {stamp!r}")
    seconds = calendar.timegm(datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").timetuple())
    offset = m.group(3)
    if offset and offset != "Z":
        sign = -1 if offset[0] == "-" else 1
        digits = offset[1:].replace(":", "")
        seconds -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    return seconds * 10**9 + int(((m.group(2) or "") + "000000000")[:9])


def duration_nano(text: str) -> int:
    """ISO-8601 duration (`PT1M48.75533S`) -> ns, exactly."""
    m = re.fullmatch(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d+))?S)?)?", text.strip())
    if not m:
        raise ValueError(f"unreadable duration {text!r}")
    days, hours, minutes, secs = (int(g or 0) for g in m.groups()[:4])
    whole = ((days * 24 + hours) * 60 + minutes) * 60 + secs
    return whole * 10**9 + int(((m.group(5) or "") + "000000000")[:9])


def any_value(value: Any) -> dict[str, Any]:
    """An OTLP AnyValue: strings stay strings (TRAIL's attribute values all are); others typed."""
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": json.dumps(value, ensure_ascii=False)}


def kv(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": any_value(value)}


def as_text(value: Any) -> str:
    """A log body value: strings as they are, anything else as a JSON string."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


# -- spans ----------------------------------------------------------------------------------------

def flatten(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """TRAIL's nested `child_spans` tree in source (depth-first, pre-) order."""
    out: list[dict[str, Any]] = []
    stack = list(reversed(spans))
    while stack:
        span = stack.pop()
        out.append(span)
        stack.extend(reversed(span.get("child_spans") or []))
    return out


def log_event(log: dict[str, Any], span: dict[str, Any]) -> dict[str, Any]:
    """A Patronus log attached to a span -> an OTLP event named `log`."""
    attrs = [kv("log.severity_text", log.get("severity_text")), kv("log.severity_number", log.get("severity_number"))]
    body = log.get("body")
    if isinstance(body, dict):
        attrs += [kv(k, as_text(v)) for k, v in body.items()]
    elif body is not None:
        attrs.append(kv("log.body", as_text(body)))
    attrs += [kv(k, v) for k, v in (log.get("log_attributes") or {}).items()]
    span_resource = span.get("resource_attributes") or {}
    attrs += [kv(f"log.resource.{k}", v) for k, v in (log.get("resource_attributes") or {}).items()
              if span_resource.get(k, object()) != v]
    for key in ("scope_name", "scope_version"):
        if key in log and log[key] != span.get(key):
            attrs.append(kv(f"log.scope.{key[len('scope_'):]}", log[key]))
    attrs += [kv(f"log.scope.{k}", v) for k, v in (log.get("scope_attributes") or {}).items()]
    return {"timeUnixNano": str(unix_nano(log["timestamp"])), "name": "log", "attributes": attrs}


def otlp_span(span: dict[str, Any], present: set[str]) -> dict[str, Any]:
    start = unix_nano(span["timestamp"])
    out: dict[str, Any] = {"traceId": span["trace_id"], "spanId": span["span_id"]}
    parent = span.get("parent_span_id")
    if parent and parent in present:
        out["parentSpanId"] = parent
    if span.get("trace_state"):
        out["traceState"] = span["trace_state"]
    attrs = [kv(k, v) for k, v in (span.get("span_attributes") or {}).items()]
    if parent and parent not in present:
        attrs.append(kv("bench.orphan_parent_span_id", parent))
    events = [{"timeUnixNano": str(unix_nano(e.get("Timestamp") or e["timestamp"])), "name": e.get("Name") or e.get("name"),
               "attributes": [kv(k, v) for k, v in (e.get("Attributes") or e.get("attributes") or {}).items()]}
              for e in span.get("events") or ()]
    events += [log_event(log, span) for log in span.get("logs") or ()]
    links = [{"traceId": ln.get("trace_id") or ln.get("TraceId") or "", "spanId": ln.get("span_id") or ln.get("SpanId") or "",
              "attributes": [kv(k, v) for k, v in (ln.get("attributes") or ln.get("Attributes") or {}).items()]}
             for ln in span.get("links") or ()]
    status: dict[str, Any] = {"code": STATUS[(span.get("status_code") or "unset").lower()]}
    if span.get("status_message"):
        status["message"] = span["status_message"]
    out.update(name=span["span_name"], kind=KINDS[(span.get("span_kind") or "unspecified").lower()],
               startTimeUnixNano=str(start), endTimeUnixNano=str(start + duration_nano(span["duration"])),
               attributes=attrs, events=events, links=links, status=status)
    return out


def convert_trace(doc: dict[str, Any], notes: list[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One TRAIL trace file -> (OTLP ExportTraceServiceRequest, its spans in source order)."""
    spans: list[dict[str, Any]] = []
    seen: dict[str, dict[str, Any]] = {}
    for span in flatten(doc["spans"]):
        if span["span_id"] in seen:
            same = {k: v for k, v in span.items() if k != "child_spans"} == \
                   {k: v for k, v in seen[span["span_id"]].items() if k != "child_spans"}
            notes.append(f"span {span['span_id']} appears twice in the source tree "
                         f"({'identical copies' if same else 'differing copies'}); the second copy is dropped")
            continue
        seen[span["span_id"]] = span
        spans.append(span)
    present = set(seen)
    resources: dict[str, dict[str, Any]] = {}
    otlp = []
    for span in spans:
        res_attrs = span.get("resource_attributes") or {}
        rs = resources.setdefault(json.dumps(res_attrs, sort_keys=True), {
            "resource": {"attributes": [kv(k, v) for k, v in res_attrs.items()]}, "scopes": {}})
        scope_key = (span.get("scope_name") or "", span.get("scope_version") or "")
        if scope_key not in rs["scopes"]:
            scope: dict[str, Any] = {"name": scope_key[0]}
            if scope_key[1]:
                scope["version"] = scope_key[1]
            rs["scopes"][scope_key] = {"scope": scope, "spans": []}
        converted = otlp_span(span, present)
        rs["scopes"][scope_key]["spans"].append(converted)
        otlp.append(converted)
    request = {"resourceSpans": [{"resource": rs["resource"], "scopeSpans": list(rs["scopes"].values())}
                                 for rs in resources.values()]}
    return request, otlp


# -- labels ---------------------------------------------------------------------------------------

def _squash(text: str) -> str:
    return text.lower().replace(" ", "")


def normalise_category(raw: str) -> str | None:
    """The official scorer's `normalize_category` (exact, then without spaces, then the raw name as a
    substring of a leaf); then a leaf as a substring of the raw name ("Task Orchestration Errors");
    then the closest leaf by spelling ("Instruction non complience"). None when nothing fits."""
    category = (raw or "").lower().strip()
    if not category:
        return None
    for leaf in LEAVES:
        if category == leaf.lower() or _squash(category) == _squash(leaf):
            return leaf
    for leaf in LEAVES:
        if _squash(category) in _squash(leaf):
            return leaf
    for leaf in LEAVES:
        if _squash(leaf) in _squash(category):
            return leaf
    plain = {re.sub(r"[^a-z]", "", leaf.lower()): leaf for leaf in LEAVES}
    close = difflib.get_close_matches(re.sub(r"[^a-z]", "", category), list(plain), n=1, cutoff=0.8)
    return plain[close[0]] if close else None


def load_annotation(text: str, notes: list[str]) -> dict[str, Any]:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        repaired = re.sub(r",(\s*[\]}])", r"\1", text)
        doc = json.loads(repaired)
        notes.append("annotation had a trailing comma; repaired on load")
        return doc


def gold_of(annotation: dict[str, Any], spans: list[dict[str, Any]], notes: list[str]) -> dict[str, Any]:
    order = {s["spanId"]: i for i, s in enumerate(spans)}
    start = {s["spanId"]: int(s["startTimeUnixNano"]) for s in spans}
    errors = []
    for e in annotation.get("errors") or ():
        loc = e.get("location")
        raw = e.get("category")
        category = normalise_category(raw)
        if category is None:
            notes.append(f"category {raw!r} matches no leaf of the official scorer; kept as it is")
        item = {"span_id": loc if loc in order else None, "original_location": loc,
                "category": category if category is not None else raw,
                "top_class": TOP_CLASS.get(category) if category else None,
                "impact": e.get("impact"), "category_raw": raw,
                "description": e.get("description"), "evidence": e.get("evidence")}
        stray = {k: v for k, v in e.items() if k not in ERROR_KEYS}
        if stray:
            item["stray_fields"] = stray
        errors.append(item)

    def earliest(items: list[dict[str, Any]]) -> str | None:
        located = [e["span_id"] for e in items if e["span_id"]]
        return min(located, key=lambda sid: (start[sid], order[sid])) if located else None

    scores = annotation.get("scores")
    if isinstance(scores, list):
        scores = scores[0] if scores else None
    return {"errors": errors, "earliest_error_span_id": earliest(errors),
            "earliest_high_span_id": earliest([e for e in errors if (e["impact"] or "").strip().upper() == "HIGH"]),
            "scores": scores}


# -- checks and README ----------------------------------------------------------------------------

def check(request: dict[str, Any], label: dict[str, Any]) -> list[str]:
    """The corpus checks: hex ids of the right length, unique span ids, every parent present,
    end >= start, typed attribute values, every label span id present in its trace."""
    problems = []
    spans = [s for rs in request["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    ids = [s["spanId"] for s in spans]
    if len(ids) != len(set(ids)):
        problems.append("duplicate span ids")
    for s in spans:
        if not re.fullmatch(r"[0-9a-f]{32}", s["traceId"]) or not re.fullmatch(r"[0-9a-f]{16}", s["spanId"]):
            problems.append(f"bad id {s['traceId']}/{s['spanId']}")
        if s.get("parentSpanId") and s["parentSpanId"] not in ids:
            problems.append(f"parent of {s['spanId']} absent")
        if int(s["endTimeUnixNano"]) < int(s["startTimeUnixNano"]):
            problems.append(f"{s['spanId']} ends before it starts")
        for a in s["attributes"] + [a for e in s["events"] for a in e["attributes"]]:
            if len(a["value"]) != 1:
                problems.append(f"{s['spanId']}: untyped attribute {a['key']}")
    for e in label["gold"]["errors"]:
        if e["span_id"] and e["span_id"] not in ids:
            problems.append(f"label span {e['span_id']} absent")
    return problems


def readme(split: str, repo: str, commit: str, stats: dict[str, Any]) -> str:
    cats = ", ".join(f"{c} {n}" for c, n in stats["categories"].most_common())
    lines = [
        f"# TRAIL (Patronus AI), arXiv:2505.08638, split {split}, as OTLP/JSON Lines", "",
        f"Made by `bench/corpora/convert_trail.py --split {stats['flag']}` from the git mirror {repo} at commit {commit}",
        f"(`{SPLITS[stats['flag']][1]}/` and `{SPLITS[stats['flag']][2]}/`, read with `git show`).",
        "Same format as /work/shared/benchmarks/trail-gaia (see its README.md: Format, Labels); TRAIL's paths",
        f"appear in the labels as `traces/{split}/<id>.json.gz` and `annotations/{split}/<id>.json`.", "",
        "* License: MIT (Copyright (c) 2025 patronus-ai); traces contain GAIA / SWE-bench task text", "",
        "## Counts",
        f"* traces: {stats['traces']}, spans: {stats['spans']}",
        f"* gold errors: {stats['errors']} ({stats['unlocated']} whose location matches no span; their span_id is null)",
        f"* gold categories (normalised): {cats}",
        f"* top classes: " + ", ".join(f"{c} {n}" for c, n in stats["top_classes"].most_common()),
        f"* skipped source records: {len(stats['skipped'])}",
        *[f"  * `{path}`: {why}" for path, why in stats["skipped"]],
        f"* conversion notes: {sum(len(n) for _, n in stats['notes'])}",
        *[f"  * {trace}: {note}" for trace, notes in stats["notes"] for note in notes],
        "", "## Validation",
        f"{stats['traces']} lines, {len(stats['problems'])} problems (hex ids of the right length; span ids unique in a "
        "trace; every parent present; end >= start; typed attribute values; every label span id present in its trace)."
        + "".join(f"\n* {p}" for p in stats["problems"]), "",
    ]
    return "\n".join(lines)


# -- main -----------------------------------------------------------------------------------------

def convert(flag: str, out: str, repo: str = DEFAULT_REPO, commit: str = DEFAULT_COMMIT,
            only: list[str] | None = None) -> dict[str, Any]:
    """Convert split `flag` (GAIA or SWE) into `out`; `only`: these trace ids alone (tests)."""
    split, trace_dir, ann_dir = SPLITS[flag]
    ann_files = [n for n in git_list(repo, commit, ann_dir) if n.endswith(".json")]
    trace_files = {n for n in git_list(repo, commit, trace_dir) if n.endswith(".json")}
    stats: dict[str, Any] = {"flag": flag, "traces": 0, "spans": 0, "errors": 0, "unlocated": 0,
                             "categories": collections.Counter(), "top_classes": collections.Counter(),
                             "skipped": [], "notes": [], "problems": []}
    os.makedirs(out, exist_ok=True)
    labels_out = []
    with open(os.path.join(out, "traces.jsonl.gz"), "wb") as raw, \
            gzip.GzipFile(filename="traces.jsonl", mode="wb", compresslevel=9, mtime=0, fileobj=raw) as traces_out:
        for name in ann_files:
            stem = name[: -len(".json")]
            if only is not None and stem not in only:
                continue
            ann_path = f"annotations/{split}/{name}"
            text = git_read(repo, commit, f"{trace_dir}/{name}") if name in trace_files else None
            if text is None:
                why = "trace file not in the mirror's tree" if name not in trace_files else \
                    "trace file not available in the mirror (its git object is absent: the snapshot omits files of 4 MiB and more)"
                stats["skipped"].append((ann_path, why))
                continue
            notes: list[str] = []
            annotation = load_annotation(git_read(repo, commit, f"{ann_dir}/{name}") or "{}", notes)
            doc = json.loads(text)
            if annotation.get("trace_id") and annotation["trace_id"] != stem:
                notes.append(f"annotation names trace {annotation['trace_id']}, its file {stem}")
            request, spans = convert_trace(doc, notes)
            label: dict[str, Any] = {"trace_id": doc.get("trace_id") or stem, "source_file": f"traces/{split}/{stem}.json.gz",
                                     "annotation_file": ann_path, "split": split, "gold": gold_of(annotation, spans, notes)}
            if notes:
                label["conversion_notes"] = notes
                stats["notes"].append((label["trace_id"], notes))
            stats["problems"] += [f"{label['trace_id']}: {p}" for p in check(request, label)]
            traces_out.write((json.dumps(request, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8"))
            labels_out.append(json.dumps(label, ensure_ascii=False) + "\n")
            stats["traces"] += 1
            stats["spans"] += len(spans)
            for e in label["gold"]["errors"]:
                stats["errors"] += 1
                stats["unlocated"] += e["span_id"] is None
                stats["categories"][e["category"]] += 1
                stats["top_classes"][e["top_class"] or "(none)"] += 1
    if only is None:
        for name in sorted(trace_files - set(ann_files)):
            stats["skipped"].append((f"traces/{split}/{name}", "no annotation file"))
    with open(os.path.join(out, "labels.jsonl"), "w", encoding="utf-8") as handle:
        handle.writelines(labels_out)
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as handle:
        handle.write(readme(split, repo, commit, stats))
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", required=True, choices=sorted(SPLITS))
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--repo", default=DEFAULT_REPO, help="git directory of a TRAIL mirror")
    ap.add_argument("--commit", default=DEFAULT_COMMIT)
    args = ap.parse_args(argv)
    stats = convert(args.split, args.out, args.repo, args.commit)
    print(f"{args.split}: {stats['traces']} traces, {stats['spans']} spans, {stats['errors']} gold errors, "
          f"{len(stats['skipped'])} skipped, {len(stats['problems'])} problems -> {args.out}")
    return 1 if stats["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
