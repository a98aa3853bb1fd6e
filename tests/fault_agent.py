"""The demo agent as a process for the fault tests: `python fault_agent.py [exit|sigterm]`.

Runs support_agent.main() (its own scripted model server, four tickets) and exits with its code.
When a tracer provider of the SDK is configured (under opentelemetry-instrument), a counting span
processor (public SDK API) reports on stderr how many spans ended: `ENDED <n>`. `sigterm`: after
the tickets it prints READY and waits to be terminated.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import support_agent  # noqa: E402

ended = []


def _count():
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    except ImportError:
        return False
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        return False

    class Counter(SpanProcessor):
        def on_end(self, span):
            ended.append(span.name)

    provider.add_span_processor(Counter())
    return True


if __name__ == "__main__":
    counting = _count()
    code = support_agent.main()
    if counting:
        sys.stderr.write(f"ENDED {len(ended)}\n")
        sys.stderr.flush()
    if sys.argv[1:] == ["sigterm"]:
        print("READY", flush=True)
        time.sleep(60)
    sys.exit(code)
