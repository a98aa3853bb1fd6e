"""Redaction cost per 8 KB of new text, and per agent step with the content cache.

Whole-process benchmark (not a test): medians over many runs, ratios against a naive baseline
(six PII regexes with `re`, the approach NOTES.md measured at ~4.4 ms per 8 KB) run in the
same process. Run: `python bench/bench_redaction.py [--runs N]`.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time

from otel_agent_trace.processor import pii_detectors
from otel_agent_trace.processor.redaction import Redactor
from otel_agent_trace.semconv import GEN_AI_INPUT_MESSAGES

NAIVE = [re.compile(p) for p in (
    r"(?<!\d)(?:\+?86[- ]?)?1[3-9]\d{9}(?!\d)|\+\d{1,3}[ -]?\(?\d{1,4}\)?(?:[ -]?\d{2,4}){2,4}",
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
    r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)",
    r"(?<!\d)\d{17}[\dXx](?!\d)",
    r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])",
    r"sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+",
)]

WORDS_CJK = ["客户", "询问", "订单", "状态", "退款", "配送", "地址", "发票", "付款", "工具", "返回", "结果", "请", "检查", "账户", "余额", "最新", "用户", "总结", "。", "，"]
WORDS = ["the", "customer", "asked", "about", "order", "status", "refund", "shipping", "address", "invoice", "payment", "tool", "returned", "empty", "result", "please", "check", "account", "balance", "latest", "orders", "for", "this", "user", "and", "summarize"]


def context(rnd: random.Random, size: int = 8192, pii: float = 0.004, words: list[str] = WORDS) -> str:
    """Agent-like text: prose, JSON tool results with ids/amounts/timestamps, a little PII."""
    out: list[str] = []
    total = 0
    while total < size:
        r = rnd.random()
        if r < 0.05:
            piece = json.dumps({"order_id": f"ORD-{rnd.randint(10**7, 10**8)}", "amount": round(rnd.random() * 500, 2),
                                "created_at": f"2026-11-{rnd.randint(1, 28):02d}T12:{rnd.randint(0, 59):02d}:00Z",
                                "items": rnd.randint(1, 9), "status": rnd.choice(["paid", "shipped", "refunded"])})
        elif r < 0.05 + pii:
            piece = rnd.choice([f"1{rnd.choice('3589')}{rnd.randint(10**8, 10**9 - 1)}", f"user{rnd.randint(1, 999)}@example.com",
                                f"+44 20 {rnd.randint(1000, 9999)} {rnd.randint(1000, 9999)}", f"10.0.{rnd.randint(0, 255)}.{rnd.randint(1, 254)}"])
        elif r < 0.08:
            piece = str(rnd.randint(1, 10**5))
        else:
            piece = rnd.choice(words)
        out.append(piece)
        total += len(piece) + 1
    return " ".join(out)[:size]


def median_ms(fn, items) -> float:
    times = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def naive(text: str) -> None:
    for p in NAIVE:
        for _ in p.finditer(text):
            pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--smoke", action="store_true", help="the test suite's run: a few iterations (tests/test_bench_smoke.py)")
    args = ap.parse_args()
    if args.smoke:
        args.runs = 3
    rnd = random.Random(42)
    texts = [context(rnd) for _ in range(args.runs)]  # all distinct: "new text" every run
    rows = [("naive re, 6 patterns (baseline)", median_ms(naive, texts))]
    rows.append(("detectors, pure re", median_ms(pii_detectors.find_all, texts)))
    fast = None
    try:
        from otel_agent_trace.processor.fast_scan import FastScanner

        fast = FastScanner()
        rows.append(("detectors, hyperscan front end", median_ms(fast, texts)))
    except ImportError:
        rows.append(("detectors, hyperscan front end", float("nan")))
    red = Redactor(key="bench")
    rows.append(("Redactor.text (scan + pseudonyms), new text", median_ms(lambda t: red.text(t + "\n"), texts)))
    # non-ASCII text: Chinese prose around the same JSON, numbers and PII (8192 characters)
    cjk = [context(rnd, words=WORDS_CJK) for _ in range(args.runs)]
    rows.append(("non-ASCII text: detectors, pure re", median_ms(pii_detectors.find_all, cjk)))
    if fast is not None:
        rows.append(("non-ASCII text: detectors, hyperscan front end", median_ms(fast, cjk)))
    red = Redactor(key="bench")
    rows.append(("non-ASCII text: Redactor.text, new text", median_ms(lambda t: red.text(t + "\n"), cjk)))

    # per agent step: the growing message list re-appears in every step, as JSON
    step_times = []
    for run in range(max(1, args.runs // 20)):
        red = Redactor(key="bench")
        messages = [{"role": "system", "content": context(rnd, 1500, 0)}]
        for step in range(20):
            messages.append({"role": "tool" if step % 2 else "user", "content": context(rnd, 330)})
            attr = json.dumps(messages)
            t0 = time.perf_counter()
            red.value(GEN_AI_INPUT_MESSAGES, attr)
            step_times.append((len(attr), time.perf_counter() - t0))
    late = [t for size, t in step_times if size >= 7000]
    rows.append((f"per step, ~8 KB JSON context, cached ({len(late)} steps)", statistics.median(late) * 1e3))

    base = rows[0][1]
    print(f"{'variant':58} {'median ms':>10} {'vs baseline':>12}")
    for name, ms in rows:
        print(f"{name:58} {ms:10.4f} {base / ms if ms > 0 else float('nan'):11.1f}x")


if __name__ == "__main__":
    main()
