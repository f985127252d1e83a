# pyright: strict
"""The high-watermark checkpoint of a data directory: 0.9's ``replication-offset-checkpoint``.

Source: apache/kafka 0.9.0.1 ``core/src/main/scala/kafka/server/OffsetCheckpoint.scala`` and
``ReplicaManager.checkpointHighWatermarks`` (``replica.high.watermark.checkpoint.interval.ms``, 5000 by default,
and once more at shutdown). The file is text::

    0                      <- version
    2                      <- number of entries
    my-topic 0 42          <- topic, partition, high watermark
    __consumer_offsets 7 3

written to ``<file>.tmp``, flushed and fsynced, then renamed over the file (atomic), as 0.9 does. A broker that
starts reads it back and truncates each partition's log to its checkpointed high watermark when it becomes
follower (``ReplicaManager.makeFollowers`` truncates to the HW; the HW comes from this file), so offsets a
previous run appended but never committed do not survive as a divergent tail.

:func:`read_checkpoint` of a missing file is empty; a malformed file raises :class:`ValueError` naming it (0.9
throws ``IOException("Malformed line in offset checkpoint file")``).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CHECKPOINT_NAME", "CHECKPOINT_INTERVAL_MS", "read_checkpoint", "write_checkpoint"]

CHECKPOINT_NAME = "replication-offset-checkpoint"
#: ``replica.high.watermark.checkpoint.interval.ms`` (0.9 default).
CHECKPOINT_INTERVAL_MS = 5_000
_VERSION = 0


def write_checkpoint(path: Path, offsets: dict[tuple[str, int], int]) -> None:
    """Replace ``path`` atomically with ``offsets`` ((topic, partition) -> high watermark), fsynced."""
    lines = [str(_VERSION), str(len(offsets))]
    lines += [f"{topic} {partition} {hw}" for (topic, partition), hw in sorted(offsets.items())]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """The offsets in ``path`` (empty when it does not exist); raises ValueError for a malformed file."""
    if not path.exists():
        return {}
    lines = path.read_text(encoding="utf-8").splitlines()
    try:
        if int(lines[0]) != _VERSION:
            raise ValueError(f"unknown version {lines[0]!r}")
        count = int(lines[1])
        entries = lines[2:]
        if len(entries) != count:
            raise ValueError(f"expected {count} entries, found {len(entries)}")
        out: dict[tuple[str, int], int] = {}
        for line in entries:
            topic, partition, offset = line.split(" ")
            out[(topic, int(partition))] = int(offset)
        return out
    except (IndexError, ValueError) as e:
        raise ValueError(f"malformed high-watermark checkpoint {path}: {e}") from e
