"""`agent_trace.replay.of` on the resource of a process that replays a recording.

Under `opentelemetry-instrument` the SDK's configurator builds the resource before any
instrumentor runs, and nothing of a package runs before it but a distro (only one is loaded, and
`opentelemetry-distro` is already one). The SDK's own way to add to the resource is a resource
detector: this one is the entry point `opentelemetry_resource_detector: agent_trace_replay`,
enabled by name (`OTEL_EXPERIMENTAL_RESOURCE_DETECTORS=agent_trace_replay`). With
`OTEL_AGENT_TRACE_REPLAY` set, it resolves the recording's trace id (a prefix or none given) and
puts it on the resource; the replay's spans carry it either way (`replay/interceptor.py`). A recording
that cannot be read gives an empty resource: the replay itself says why, and exits.
"""

from __future__ import annotations

import os

from opentelemetry.sdk.resources import Resource, ResourceDetector

ENV = "OTEL_AGENT_TRACE_REPLAY"


class ReplayResourceDetector(ResourceDetector):
    def detect(self) -> Resource:
        target = os.environ.get(ENV, "").strip()
        if not target:
            return Resource.get_empty()
        from otel_agent_trace.replay import ReplayUnavailable, split_target
        from otel_agent_trace.semconv import REPLAY_OF
        from otel_agent_trace.replay.recording import load

        try:
            origin = load(*split_target(target)).trace_id
        except (ReplayUnavailable, OSError):
            return Resource.get_empty()
        return Resource({REPLAY_OF: origin})
