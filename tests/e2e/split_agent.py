"""One agent run split across two processes, as in a fleet: a planner and a tool service.

    python split_agent.py planner ENDPOINT N OUT   # N root spans; writes their traceparents to OUT
    python split_agent.py tools ENDPOINT IN        # a tool span under each root; even runs fail

Each process exports with the real SDK over OTLP/HTTP to its own front Collector, so the two
halves of a trace arrive at different gateways and must meet at one sampler.
"""

from __future__ import annotations

import json
import sys

from opentelemetry import propagate, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode


def _tracer(service: str, endpoint: str) -> tuple[TracerProvider, trace.Tracer]:
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider, provider.get_tracer("split-agent")


def planner(endpoint: str, runs: int, out: str) -> None:
    provider, tracer = _tracer("planner", endpoint)
    carriers = []
    for i in range(runs):
        with tracer.start_as_current_span("invoke_agent planner") as root:
            root.set_attribute("gen_ai.operation.name", "invoke_agent")
            root.set_attribute("run", i)
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            carriers.append(carrier)
    provider.shutdown()
    with open(out, "w") as f:
        json.dump(carriers, f)


def tools(endpoint: str, carriers_path: str) -> None:
    provider, tracer = _tracer("tools", endpoint)
    with open(carriers_path) as f:
        carriers = json.load(f)
    for i, carrier in enumerate(carriers):
        with tracer.start_as_current_span("execute_tool lookup_order", context=propagate.extract(carrier)) as span:
            span.set_attribute("gen_ai.operation.name", "execute_tool")
            span.set_attribute("run", i)
            if i % 2 == 0:
                span.set_attribute("agent_trace.lifecycle.phase", "origin")
                span.set_attribute("agent_trace.error.type", "tool_empty_result")
                span.set_status(Status(StatusCode.ERROR, "lookup_order returned nothing"))
    provider.shutdown()


if __name__ == "__main__":
    role, endpoint, *rest = sys.argv[1:]
    if role == "planner":
        planner(endpoint, int(rest[0]), rest[1])
    else:
        tools(endpoint, rest[0])
