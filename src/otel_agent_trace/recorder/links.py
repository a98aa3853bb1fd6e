"""Dependency edges: span links plus their mirror as span attributes.

Jaeger drops link attributes (links become FOLLOWS_FROM references), so every link is written
twice: as an OpenTelemetry link carrying `agent_trace.link.relation`, and in the parallel arrays
`agent_trace.depends_on` (span ids, lowercase hex) / `agent_trace.depends_on.relations`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from opentelemetry.trace import Link, SpanContext, format_span_id

from otel_agent_trace.semconv import DEPENDS_ON, DEPENDS_ON_RELATIONS, LINK_RELATION
from otel_agent_trace.vocabulary import Relation


@dataclass
class Dependencies:
    """The edges one span is about to be created with (links must be known at span start)."""

    edges: list[tuple[SpanContext, Relation]] = field(default_factory=list)

    def add(self, target: SpanContext | None, relation: Relation) -> None:
        if target is None or not target.is_valid:
            return
        if any(t.span_id == target.span_id and r == relation for t, r in self.edges):
            return
        self.edges.append((target, relation))

    def links(self) -> list[Link]:
        return [Link(t, {LINK_RELATION: r.value}) for t, r in self.edges]

    def attributes(self) -> dict[str, list[str]]:
        if not self.edges:
            return {}
        return {
            DEPENDS_ON: [format_span_id(t.span_id) for t, _ in self.edges],
            DEPENDS_ON_RELATIONS: [r.value for _, r in self.edges],
        }

    def targets(self, relation: Relation) -> list[SpanContext]:
        return [t for t, r in self.edges if r == relation]
