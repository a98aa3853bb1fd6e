"""`otel-agent-trace serve`: live analysis behind the Collector (docs/deploy.md, "Live analysis").

An OTLP receiver (`receiver.py`: HTTP, protobuf and JSON, gzip; `grpc_receiver.py`: gRPC, what
the Collector's load-balancing exporter speaks) hands each request's spans to `held.HeldTraces`,
which holds every trace until it is complete (its root arrived, plus `decision_wait`), bounded in
traces and spans per trace. `analyst.Analyst` analyses each complete trace with the function the
`analyze` command runs per trace (`analyzer/chunks.analyse_trace`: one code path, the same
findings), writes one JSON line per run (the run's `runs[]` entry of `analyze --format json`) to
a rotating file, and reports metrics of the findings and, optionally, a span per finding
(`telemetry.py`). `command.py` is the CLI: flags, signals, shutdown.
"""
