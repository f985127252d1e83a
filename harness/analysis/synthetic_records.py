"""The bulk of a synthetic unit (:mod:`harness.analysis.synthetic_unit`): produced records and their
processing, built with numpy so that memory stays bounded by one unit.

Contract
--------
:func:`build_records` takes the unit's ownership timeline (``epochs``: from when, partition ->
owner) and its triggers' stop-the-world intervals, all in seconds from the unit's start, and
returns :class:`Records`:

* produced: ``rate`` records/s from ``produce_from`` for ``produce_s`` seconds, round-robin over
  the ``n`` partitions (offset = index // n);
* processed 2 ms after being produced by the partition's owner at that time; a record due in a
  trigger's [t0, t1) is processed right after t1 by the new owner (stop the world);
* redelivered: the records produced in the ``redeliver_s`` before each t0 are processed again by
  the new owners right after t1;
* ``lose`` records, drawn below the last ``n`` records before the tail (so below the top of their
  partition), and the last ``undrained`` records are never processed;
* zombie replays (:class:`Zombie`): the old owner processes its last :data:`ZOMBIE_RECORDS`
  records of a partition again, evenly over ``zombie_s`` seconds, from the later of t1 +
  :data:`ZOMBIE_AFTER_S` and the new owner's first record of it (so both process it meanwhile).

Times of records are integer ns (``start`` + seconds, rounded), as the history stores them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from harness.history.schema import SCHEMA

NS = 1_000_000_000
PROCESS_AFTER_S = 0.002  # from produced to processed, outside a stop-the-world
ZOMBIE_RECORDS = 4  # records an old owner replays after its revocation
ZOMBIE_AFTER_S = 0.5  # earliest replay after t1


@dataclass(frozen=True)
class Zombie:
    """A replay after trigger ``k``: ``old`` replays partition ``p`` that ``new`` owns since t1;
    it must end before ``end`` (seconds)."""

    k: int
    p: int
    old: str
    new: str
    end: float


@dataclass
class Records:
    """Processed records (``ts`` ns, ``part``, ``off``, ``who``: index into ``names``) and the
    produced ones (``produced_ts``, ``produced_part``, ``produced_off``)."""

    ts: np.ndarray
    part: np.ndarray
    off: np.ndarray
    who: np.ndarray
    names: list[str]
    produced_ts: np.ndarray
    produced_part: np.ndarray
    produced_off: np.ndarray
    #: per :class:`Zombie` asked for: (first, last) ts_ns of its replay
    zombies: list[tuple[int, int]] = field(default_factory=list)

    @property
    def produced(self) -> int:
        return int(self.produced_ts.size)


def build_records(
    *,
    start: int,
    n: int,
    rate: float,
    produce_from: float,
    produce_s: float,
    epochs: list[tuple[float, dict[int, str]]],
    stops: list[tuple[float, float]],
    redeliver_s: float,
    lose: int,
    undrained: int,
    zombies: list[Zombie],
    zombie_s: float,
    rng: np.random.Generator,
) -> Records:
    """The bulk of one unit (see the module contract); ``stops[k]`` is trigger k's (t0, t1), after
    which ``epochs[k + 1]`` owns. Raises ValueError when ``lose`` or a zombie cannot be built."""
    total = int(rate * produce_s)
    i = np.arange(total, dtype=np.int64)
    p_ts = produce_from + i / rate
    part = (i % n).astype(np.int32)
    off = i // n
    proc = p_ts + PROCESS_AFTER_S
    for t0, t1 in stops:
        inside = (proc >= t0) & (proc < t1)
        proc = np.where(inside, t1 + 0.001 + (proc - t0) * 1e-3, proc)
    names = sorted({m for _, owners in epochs for m in owners.values()})
    index = {m: k for k, m in enumerate(names)}
    matrix = np.array([[index[owners[p]] for p in range(n)] for _, owners in epochs], dtype=np.int32)
    epoch = np.searchsorted(np.array([since for since, _ in epochs]), proc, side="right") - 1
    keep = np.ones(total, dtype=bool)
    if undrained:
        keep[max(0, total - undrained) :] = False
    if lose:
        pool = total - undrained - n
        if lose > pool:
            raise ValueError(f"lose={lose}: only {max(pool, 0)} records of a unit can be skipped")
        keep[rng.choice(pool, size=lose, replace=False)] = False
    ns = _to_ns(start)
    parts: list[tuple[Any, ...]] = [(ns(proc)[keep], part[keep], off[keep], matrix[epoch, part][keep])]
    for k, (t0, t1) in enumerate(stops):
        sel = np.nonzero((p_ts >= t0 - redeliver_s) & (p_ts < t0) & keep)[0]
        ts = ns(np.array([t1 + 0.0005]))[0] + np.arange(sel.size, dtype=np.int64) * 1000
        parts.append((ts, part[sel], off[sel], matrix[k + 1, part[sel]]))
    spans = []
    for z in zombies:
        replay = _zombie(z, stops[z.k], parts, index, zombie_s, ns)
        parts.append(replay)
        spans.append((int(replay[0][0]), int(replay[0][-1])))
    return Records(
        ts=np.concatenate([x[0] for x in parts]),
        part=np.concatenate([x[1] for x in parts]),
        off=np.concatenate([x[2] for x in parts]),
        who=np.concatenate([x[3] for x in parts]),
        names=names,
        produced_ts=ns(p_ts),
        produced_part=part,
        produced_off=off,
        zombies=spans,
    )


def _to_ns(start: int) -> Any:
    def ns(seconds: np.ndarray) -> np.ndarray:
        return start + np.round(seconds * NS).astype(np.int64)

    return ns


def _zombie(
    z: Zombie,
    stop: tuple[float, float],
    parts: list[tuple[np.ndarray, ...]],
    index: dict[str, int],
    zombie_s: float,
    ns: Any,
) -> tuple[np.ndarray, ...]:
    t0, t1 = (int(x) for x in ns(np.array(stop)))
    a, b = index[z.old], index[z.new]
    ts, part, off, who = (np.concatenate([x[k] for x in parts]) for k in range(4))
    replay = np.sort(off[(who == a) & (part == z.p) & (ts < t0)])[-ZOMBIE_RECORDS:]
    theirs = ts[(who == b) & (part == z.p) & (ts >= t1)]
    if replay.size < 2 or not theirs.size:
        raise ValueError(f"too few records of partition {z.p} around trigger {z.k + 1} for a zombie replay")
    first = max(int(ns(np.array([stop[1] + ZOMBIE_AFTER_S]))[0]), int(theirs.min()))
    step = int(round(zombie_s * NS / (replay.size - 1)))
    zts = first + np.arange(replay.size, dtype=np.int64) * step
    if zts[-1] >= ns(np.array([z.end - 0.05]))[0]:
        raise ValueError(f"zombie_s={zombie_s:g} does not fit in the window of trigger {z.k + 1}")
    return zts, np.full(replay.size, z.p, np.int32), replay, np.full(replay.size, a, np.int32)


def tables(ctx: dict[str, Any], topic: str, r: Records) -> list[pa.Table]:
    """The ``produced`` and ``record`` events of :data:`SCHEMA` (run columns from ``ctx``)."""
    return [
        _table(
            ctx,
            topic,
            r.produced_ts,
            r.produced_part,
            r.produced_off,
            "produced",
            "producer",
            ["producer"],
            None,
        ),
        _table(ctx, topic, r.ts, r.part, r.off, "record", "member", r.names, r.who),
    ]


def _table(
    ctx: dict[str, Any],
    topic: str,
    ts: np.ndarray,
    part: np.ndarray,
    off: np.ndarray,
    kind: str,
    role: str,
    names: list[str],
    who: np.ndarray | None,
) -> pa.Table:
    n = len(ts)
    zeros = pa.array(np.zeros(n, dtype=np.int32))

    def const(v: Any, typ: pa.DataType) -> pa.Array:
        return pa.DictionaryArray.from_arrays(zeros, pa.array([v], typ)).cast(typ)

    source = zeros if who is None else pa.array(who.astype(np.int32))
    cols = {
        "ts_ns": pa.array(ts.astype(np.int64)),
        "run_id": const(ctx["run_id"], pa.string()),
        "scenario": const(ctx["scenario"], pa.string()),
        "case": const(ctx["case"], pa.string()),
        "impl": const(ctx["impl"], pa.string()),
        "repetition": const(ctx["repetition"], pa.int32()),
        "source": pa.DictionaryArray.from_arrays(source, pa.array(names)).cast(pa.string()),
        "role": const(role, pa.string()),
        "kind": const(kind, pa.string()),
        "topic": const(topic, pa.string()),
        "partition": pa.array(part.astype(np.int32)),
        "offset": pa.array(off.astype(np.int64)),
        "seq": pa.array(off.astype(np.int64)),
    }
    return pa.Table.from_arrays(
        [cols[f.name] if f.name in cols else pa.nulls(n, f.type) for f in SCHEMA], schema=SCHEMA
    )


def duplicate_last_ts(r: Records) -> np.ndarray:
    """For every (partition, offset) processed more than once: the time of its last delivery."""
    if not r.ts.size:
        return np.empty(0, dtype=np.int64)
    keys = r.part.astype(np.int64) << 40 | r.off.astype(np.int64)
    order = np.lexsort((r.ts, keys))
    ks, ts = keys[order], r.ts[order]
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    ends = np.r_[starts[1:], ks.size]
    many = (ends - starts) > 1
    return ts[ends[many] - 1]
