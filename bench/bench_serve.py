#!/usr/bin/env python3
"""`otel-agent-trace serve` throughput and memory, as the Collector would feed it.

    python bench/bench_serve.py --mb 50
    python bench/bench_serve.py --smoke     # the test suite's: 0.3 MB, the counters' shape checked

Generates `gen_otlp_file.py`'s traces (a trace over many records, interleaved), starts a real
`serve` process, POSTs every record as OTLP JSON over one keep-alive connection (what the
Collector's exporter does), then SIGTERMs it (which analyses what is still held) and reports:
spans/s received and analysed end to end (post of the first record to exit), the process's peak
RSS (VmHWM), and the counters serve prints at exit. Figures: docs/deploy.md, "Sizing serve".
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--smoke", action="store_true", help="0.3 MB; asserts the output's shape, not a rate")
    args = parser.parse_args()
    if args.smoke:
        args.mb = 0.3
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "traces.jsonl"
        subprocess.run([sys.executable, str(HERE / "gen_otlp_file.py"), str(source), "--mb", str(args.mb)], check=True,
                       capture_output=True)
        lines = source.read_bytes().splitlines()
        serve = subprocess.Popen([sys.executable, "-m", "otel_agent_trace.cli", "serve", "--listen", "127.0.0.1:0",
                                  "--findings", str(Path(tmp) / "findings.jsonl"), "--decision-wait", "1"],
                                 stderr=subprocess.PIPE)
        port = int(re.search(rb"127\.0\.0\.1:(\d+)", serve.stderr.readline()).group(1))
        connection = http.client.HTTPConnection("127.0.0.1", port)
        start = time.perf_counter()
        pushed_back = 0
        for line in lines:
            while True:
                connection.request("POST", "/v1/traces", body=line, headers={"Content-Type": "application/json"})
                response = connection.getresponse()
                response.read()
                if response.status == 200:
                    break
                pushed_back += 1
                time.sleep(float(response.headers.get("Retry-After", "1")))
        received = time.perf_counter() - start
        peak = int(re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{serve.pid}/status").read_text()).group(1)) / 1024
        serve.send_signal(signal.SIGTERM)
        _, err = serve.communicate()
        total = time.perf_counter() - start
        stats = dict(re.findall(r"(\w+) (\d+)", err.decode().rsplit("stopped;", 1)[-1]))
        spans = int(stats["spans_received"])
        result = {"mb": round(sum(map(len, lines)) / 1e6, 1), "records": len(lines), "spans": spans,
                  "received_s": round(received, 2), "total_s": round(total, 2),
                  "spans_per_s": round(spans / total), "peak_rss_mb": round(peak), "pushed_back": pushed_back,
                  "stats": {k: int(v) for k, v in stats.items()}}
        print(json.dumps(result, indent=2))
        if args.smoke:
            sent = sum(len(ss.get("spans", ())) for line in lines for rs in json.loads(line)["resourceSpans"]
                       for ss in rs.get("scopeSpans", ()))
            assert spans == sent > 0 and result["stats"]["runs"] > 0 and result["stats"]["analysis_errors"] == 0, result
            print("smoke: OK")
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
