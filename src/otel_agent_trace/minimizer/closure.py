"""The strong dependency closure of a set of steps (seed 004's second trap).

Keeping a step must keep what it cannot run without: the step that wrote the script it runs
(`resource`), the step whose result held the id it passes (`data`). The weak `consumes` edges
(the model merely saw an earlier result) are never followed: every step follows the one before
in the conversation, so counting them would make nothing deletable.

One refinement, for replay: a replay uses the recorded arguments, so a `data` edge matters only
through the producer's *effect*. A producer the harness knows has none (`read_file`, `ls`: it
only looked) contributes nothing a later step needs, and edges into it are dropped.
"""

from __future__ import annotations

from typing import Collection, Iterable, Mapping, Sequence


def effective_edges(depends: Mapping[int, Sequence[tuple[int, str]]],
                    pure: Collection[int] = ()) -> dict[int, set[int]]:
    """position -> the positions it needs, without edges into steps that have no effect."""
    return {step: {target for target, _ in edges if target not in pure} for step, edges in depends.items()}


def close(keep: Iterable[int], needs: Mapping[int, set[int]]) -> frozenset[int]:
    """`keep` plus everything it transitively needs."""
    closed = set(keep)
    frontier = list(closed)
    while frontier:
        for target in needs.get(frontier.pop(), ()):
            if target not in closed:
                closed.add(target)
                frontier.append(target)
    return frozenset(closed)
