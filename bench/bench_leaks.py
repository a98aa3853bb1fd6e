"""Leak figures of docs/reliability.md: seeded values in adversarial forms through both exporters.

Whole-process run (not a test): `python bench/bench_leaks.py [--per-detector N]` (default 300:
16 kinds x 8 forms x 300 = 38,400 values, plus the split-JSON form). Prints, per exporter path,
the leaked values per form and detector kind, recall per kind, the split-JSON rate, and the
false-positive rate on text without personal data. The short version runs in the test suite
(tests/processor/test_adversarial_leaks.py, 30 per kind).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "processor"))

import leak_harness  # noqa: E402
from processor_corpus import DETECTORS, benign  # noqa: E402

from otel_agent_trace.processor.redaction import Redactor  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-detector", type=int, default=300)
    ap.add_argument("--benign", type=int, default=200_000)
    ap.add_argument("--smoke", action="store_true", help="the test suite's run: a few iterations (tests/test_bench_smoke.py)")
    args = ap.parse_args()
    if args.smoke:
        args.per_detector = 2
        args.benign = 300
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = leak_harness.run(Path(tmp), args.per_detector)
    elapsed = time.perf_counter() - t0
    values = result["values"]
    print(f"{sum(values.values())} values in {len(leak_harness.FORMS)} forms, {elapsed:.1f} s; spans per path {result['spans']}")
    for path in ("agent_trace_file", "otlp_http"):
        by_form: Counter = Counter()
        by_kind: Counter = Counter()
        for (p, form, kind), n in result["leaks"].items():
            if p == path:
                by_form[form] += n
                by_kind[kind] += n
        print(f"\n[{path}] leaked values per form:")
        for form in leak_harness.FORMS:
            total = sum(n for (f, _), n in values.items() if f == form)
            print(f"  {form:36s} {by_form[form]:6d} / {total}")
        leaked, total = result["split"][path]
        print(f"  {leak_harness.SPLIT:36s} {leaked:6d} / {total}  ({leaked / total:.1%}, both halves out)")
        print("  recall per kind (all forms):")
        for kind in DETECTORS:
            total = sum(n for (_, k), n in values.items() if k == kind)
            print(f"    {kind:16s} {1 - by_kind[kind] / total:.4f} ({total - by_kind[kind]}/{total})")
    rnd = random.Random(18)
    redactor = Redactor(key="k")
    changed = Counter()
    for _ in range(args.benign):
        text = benign(rnd)
        out, n = redactor.value("x", text)
        if n:
            changed[out[:50]] += 1
    print(f"\nfalse positives on text without personal data: {sum(changed.values())} / {args.benign}"
          f" ({sum(changed.values()) / args.benign:.4%}) {changed.most_common(3)}")


if __name__ == "__main__":
    main()
