"""Another process that knows only a trace id (an eval harness, a feedback handler): it records one
evaluation with `otel_agent_trace.record_evaluation` and exits.

    python evaluation_process.py log|otlp|span OUT TRACE_ID SPAN_ID|- NAME [key=value ...]

`log`: a LoggerProvider writing OTLP JSON log lines to the file OUT (the SDK's file log exporter);
`otlp`: a LoggerProvider sending log records to OUT, an OTLP/HTTP logs endpoint (a Collector's);
`span`: no LoggerProvider, a TracerProvider writing spans to the file OUT with our file exporter.
key=value: score=0.2, label=fail, explanation=..., response_id=... Prints how it was recorded.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> None:
    mode, out, trace_id, span_id, name, *rest = argv
    options = dict(item.split("=", 1) for item in rest)
    if "score" in options:
        options["score"] = float(options["score"])  # type: ignore[assignment]
    import otel_agent_trace

    if mode in ("log", "otlp"):
        from opentelemetry import _logs
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

        if mode == "log":
            from opentelemetry.exporter.otlp.json.file._log_exporter import FileLogExporter

            exporter = FileLogExporter(out)
        else:
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

            exporter = OTLPLogExporter(endpoint=out)
        provider = LoggerProvider()
        provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
        _logs.set_logger_provider(provider)
        how = otel_agent_trace.record_evaluation(name, trace_id=trace_id, span_id=None if span_id == "-" else span_id,
                                                 **options)
        provider.shutdown()
    else:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor

        from otel_agent_trace.exporter import AgentTraceFileExporter

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(AgentTraceFileExporter(out)))
        trace.set_tracer_provider(provider)
        how = otel_agent_trace.record_evaluation(name, trace_id=trace_id, span_id=None if span_id == "-" else span_id,
                                                 **options)
        provider.shutdown()
    print(how)


if __name__ == "__main__":
    main(sys.argv[1:])
