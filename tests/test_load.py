"""Load (issue 18): a burst of agent runs through the real SDK with tail sampling at 0.01 and 1%
failing, and a short compressed soak; both as whole processes (bench/bench_load.py, which also
runs the documented long soak of 1M runs).

Promises: every failing run is written whole; the sampler's buffer stays under its caps (also
when the cap is small enough to force early decisions); the SDK's bounded batch queue drops
nothing; memory stays bounded. Speed is reported by the bench, not asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_load.py"


def bench(*args: str) -> dict:
    done = subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_burst_keeps_every_failing_run_under_the_caps():
    # paced at 10k runs/s (40k spans/s), 100 runs open at once: the 200-span cap forces early decisions
    out = bench("--runs", "10000", "--rate", "10000", "--interleave", "100", "--max-spans", "200", "--max-bytes", str(1 << 20))
    assert out["failing"] == 100 and out["failing_written"] == 100, out
    stats = out["sampler"]
    assert stats["forced_flushes"] > 0 and stats["max_buffered_spans"] <= 200 + 4, stats  # + the span that tipped it
    assert stats["traces_kept"] + stats["traces_dropped"] == out["runs"]
    assert out["dropped_by_batch_queue"] == 0
    assert out["written_spans"] == 4 * out["written_traces"] == 4 * stats["traces_kept"]
    # kept: the failing runs plus ~1% of the others (trace-id rule)
    assert 100 < out["written_traces"] < 100 + 3 * 100, out
    assert out["peak_rss_mb"] < 200, out
    print(f"\nburst: {out['runs_per_s']} runs/s ({out['spans_per_s']} spans/s), peak RSS {out['peak_rss_mb']} MB")


def test_short_soak_memory_stays_steady():
    out = bench("--runs", "30000")
    assert out["failing_written"] == out["failing"] == 300
    rss = out["rss_mb"]
    assert len(rss) == 10 and rss[-1] - rss[1] < 25, rss  # bounded caches: no growth per run
    print(f"\nsoak 30k runs: RSS {rss}, {out['spans_per_s']} spans/s")
