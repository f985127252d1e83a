# pyright: strict
"""The Apache Kafka lines herdlab runs, for its broker jars and for Kafka's own Java client alike.

Contract
--------
:data:`LINES`: each line and the exact version it means: ``3.9`` (the last line with ZooKeeper mode) and
``4`` (KRaft only). :func:`resolve_version` turns ``None`` / ``3.9`` / ``4`` / ``4.x`` / ``4.1`` / an exact
``X.Y.Z`` into an exact version (``None``: the ``3.9`` line); anything else is a
:class:`~harness.kernel.errors.ConfigError`. Kept in the kernel so that the scenario layer (which checks a
Java member's properties against the client version's own names) and the cluster layer
(:mod:`harness.cluster.kafka_dist`) read one table.
"""

from __future__ import annotations

import re

from harness.kernel.errors import ConfigError

__all__ = ["LINES", "resolve_version"]

#: line -> the version herdlab runs of it (the newest Maven Central served when it was chosen)
LINES = {"3.9": "3.9.2", "4": "4.1.1"}
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")


def resolve_version(version: str | None) -> str:
    """``None`` / ``"3.9"`` -> :data:`LINES` ``["3.9"]``; ``"4"`` or ``"4.x"`` -> ``LINES["4"]``; an exact
    ``X.Y.Z`` as it is; anything else a :class:`ConfigError`."""
    v = (version or "3.9").strip()
    if v in LINES:
        return LINES[v]
    if v in ("4.x", "4.1"):
        return LINES["4"]
    if _VERSION.match(v):
        return v
    raise ConfigError(f"Apache Kafka version {v!r}: expected 3.9, 4 or an exact version such as {LINES['4']}")
