"""Price lookup per priced call: `cost.cost_usd` (rates kept per model) against the library's
`genai_prices.calc_price` (what every call paid before issue 30), in the same run.

Whole-process benchmark (not a test). Each round prices the same mix of calls (three flat-priced
models, varied token counts, cache reads) both ways; medians of the per-call CPU time over the
rounds, and their ratio. Goal (issue 30): <= 20 us per priced call.
Run: `python bench/bench_cost.py [--rounds R] [--calls N]`; `--smoke`: a few calls, the output's
shape checked (the suite runs it: tests/test_bench_smoke.py).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

MODELS = [("gpt-4o-mini", "openai"), ("claude-sonnet-4-5", "anthropic"), ("gemini-2.5-flash", "gcp.gemini")]
_LIBRARY_IDS = {"openai": "openai", "anthropic": "anthropic", "gcp.gemini": "google"}


def _calls(n: int) -> list[tuple[str, str, int, int, int]]:
    rnd = random.Random(30)
    out = []
    for i in range(n):
        model, provider = MODELS[i % len(MODELS)]
        inp = rnd.randint(200, 20_000)
        out.append((model, provider, inp, rnd.randint(10, 800), rnd.choice([0, inp // 2])))
    return out


def _per_call_us(fn, calls) -> float:
    start = time.process_time()
    for call in calls:
        fn(*call)
    return (time.process_time() - start) / len(calls) * 1e6


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--smoke", action="store_true", help="a few calls, output shape checked")
    args = parser.parse_args(argv)
    if args.smoke:
        args.rounds, args.calls = 2, 30
    try:
        import genai_prices
    except ImportError:
        print("bench_cost: genai-prices is not installed (the `cost` extra): nothing to measure")
        return 0
    from otel_agent_trace import cost

    cost.preload()
    cost._loaded.wait(60)
    calls = _calls(args.calls)

    def ours(model, provider, inp, out, read):
        return cost.cost_usd(model, provider, inp, out, cache_read_tokens=read)

    def library(model, provider, inp, out, read):
        usage = genai_prices.Usage(input_tokens=inp, output_tokens=out, cache_read_tokens=read or None)
        return float(genai_prices.calc_price(usage, model, provider_id=_LIBRARY_IDS[provider]).total_price)

    for call in calls[:len(MODELS)]:  # the same prices both ways (and the rates kept)
        assert abs(ours(*call) - library(*call)) < 1e-12, call
    ours_us, lib_us = [], []
    for _ in range(args.rounds):
        ours_us.append(_per_call_us(ours, calls))
        lib_us.append(_per_call_us(library, calls))
    o, lib = statistics.median(ours_us), statistics.median(lib_us)
    print(f"price lookup per call, median of {args.rounds} rounds x {len(calls)} calls (process CPU)")
    print(f"  cost.cost_usd (rates kept)   {o:8.2f} us")
    print(f"  genai_prices.calc_price      {lib:8.2f} us")
    print(f"  ratio library / ours         {lib / o:8.1f}x   goal: ours <= 20 us")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
