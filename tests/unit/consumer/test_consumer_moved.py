"""partitions_moved against its definition: the partitions whose target owner differs between two targets
(gaining or losing an owner included), on random targets where every partition has at most one owner and an
unchanged member's part may be the very same object (as the assignors hand it back)."""

from __future__ import annotations

import random
import uuid

from coordinator.core.consumer.member import Assignment
from coordinator.core.consumer.target import partitions_moved

Owners = dict[tuple[uuid.UUID, int], str | None]


def _target(owners: Owners, members: list[str]) -> dict[str, Assignment]:
    parts: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    for (topic, p), m in owners.items():
        if m is not None:
            parts[m].setdefault(topic, set()).add(p)
    return {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in parts.items()}


def _by_definition(old: Owners, new: Owners) -> int:
    return sum(1 for k in old.keys() | new.keys() if old.get(k) != new.get(k))


def test_partitions_moved_counts_the_partitions_whose_owner_changed() -> None:
    rng = random.Random(7)
    topics = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(3)]
    for _ in range(2000):
        before = [f"m{j}" for j in range(rng.randint(1, 6))]
        after = [f"m{j}" for j in range(rng.randint(1, 6))]
        old: Owners = {(t, p): rng.choice([*before, None]) for t in topics for p in range(rng.randint(0, 8))}
        new: Owners = {
            k: v if v in after and rng.random() < 0.7 else rng.choice([*after, None]) for k, v in old.items()
        }
        a, b = _target(old, before), _target(new, after)
        b = {m: a[m] if m in a and a[m] == part else part for m, part in b.items()}
        assert partitions_moved(a, b) == _by_definition(old, new)
