"""Herd counts of one unit per trigger, read straight from its histories: what the simulator's validation
compares between a real run and a simulation.

Contract
--------
:func:`unit_counts` takes one unit's events (any order) and the settle window, finds its triggers and
their windows with the checker's own definitions (:func:`harness.kernel.windows.evaluate`) and counts,
per trigger, the member and broker events inside its window ``[t0, end)``: ``watches``, ``zk_requests``
by op (a simulated event's ``count`` summed; offset commits, the steady-state writes of
:func:`harness.kernel.events.zk_steady`, left out as the herd figures leave them out), ``conflicts``,
``attempts`` (``rebalance_begin``), ``failed_attempts`` and broker ``group_requests`` by ``api`` (but the
workload's own clients', :data:`harness.kernel.events.WORKLOAD_CLIENTS`, as the herd analysis leaves
them out: the producer's metadata refreshes are not the group's traffic); plus the
outcome and the latency (t1 - t0, seconds; None unless settled); and ``repeats``, the requests of the
client's repeated joins inside the window (:func:`repeated_joins`), and ``repeat_attempts``, the attempts
a leader's repeated round made (:func:`repeat_attempts`), so that the protocol's own counts
(:meth:`TriggerCounts.protocol_counts`) can be compared apart from them. :func:`read_unit` reads a unit
directory's ``events/*.jsonl``; :func:`run_counts` counts every unit of a run directory once and
:func:`compare` sets real runs' counts (pooled) against a simulation's; :func:`compare_runs` does both
for run directories. A repetition with a trigger that did not settle (no effect in its window, never
settled, skipped) is left out of the comparison on either side, and :func:`unsettled` names it: its
windows do not each hold one change and its effects (a join whose member boots slower than the step's spacing makes its rebalance in the next
step's window: that join counts nothing and that leave both changes). Pure but for those reads: no Spark.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.kernel.events import SETTLED, WORKLOAD_CLIENTS, Kind, Role, failed_attempt, zk_steady
from harness.kernel.windows import evaluate

__all__ = [
    "Comparison",
    "ConsumerCounts",
    "RunCounts",
    "Sync",
    "TriggerCounts",
    "compare",
    "compare_runs",
    "consumer_counts",
    "read_unit",
    "repeat_attempts",
    "repeated_joins",
    "repeated_rounds",
    "run_cases",
    "run_counts",
    "unit_counts",
    "unsettled",
]


@dataclass
class TriggerCounts:
    """One trigger's herd counts (module contract)."""

    label: str
    outcome: str
    latency_s: float | None
    watches: int = 0
    attempts: int = 0
    failed_attempts: int = 0
    conflicts: int = 0
    zk_requests: Counter[str] = field(default_factory=Counter[str])
    group_requests: Counter[str] = field(default_factory=Counter[str])
    #: the group requests (by API) of the client's repeated joins in the window (:func:`repeated_joins`);
    #: part of ``group_requests``
    repeats: Counter[str] = field(default_factory=Counter[str])
    #: the attempts a leader's repeated round made (:func:`repeat_attempts`); part of ``attempts``
    repeat_attempts: int = 0

    def counts(self) -> dict[str, int]:
        """Every count under one flat name (``zk:<op>``, ``api:<name>``), zero counts left out."""
        out = {
            "watches": self.watches,
            "attempts": self.attempts,
            "failed_attempts": self.failed_attempts,
            "conflicts": self.conflicts,
        }
        out.update({f"zk:{op}": n for op, n in sorted(self.zk_requests.items())})
        out.update({f"api:{api}": n for api, n in sorted(self.group_requests.items())})
        return {k: v for k, v in out.items() if v}

    def protocol_counts(self) -> dict[str, int]:
        """:meth:`counts` less the client's repeated joins (:attr:`repeats`, :attr:`repeat_attempts`): the
        protocol's own counts."""
        return replace(
            self,
            group_requests=self.group_requests - self.repeats,
            attempts=self.attempts - self.repeat_attempts,
        ).counts()


@dataclass(frozen=True)
class Sync:
    """A SyncGroup as the broker saw it: the member, its generation, and whether it carried assignments
    (the leader's)."""

    member: str
    generation: int
    leader: bool


def repeated_joins(syncs: Sequence[Sync]) -> Counter[str]:
    """The group requests of a window's repeated joins, given its SyncGroups in order: requests a member's
    client sent again although the protocol had nothing more to do, whose number depends on the client's
    timing (kafka-python 3.0.12: a join completed while the main thread was between two polls is found done
    and started again, ``join_group_async``; and a REBALANCE_IN_PROGRESS heartbeat answer taken after the
    main thread began rejoining requests a rejoin that outlives the join). The simulator draws them
    (``kafka_poll_gap_per_member_s``); a real run makes them as the machine's load falls. Two kinds:

    * a follower's: a SyncGroup of a member for a generation it had synced in already, and the JoinGroup
      before it (the coordinator, stable with that member's protocols unchanged, answers the JoinGroup
      with the same generation): one JoinGroup and one SyncGroup;
    * the leader's: a leader's JoinGroup in Stable always rebalances (Kafka's ``GroupCoordinator``;
      herdlab's :mod:`coordinator.core.group.machine`), so it is a whole round more: a generation with the same
      members and the same leader as the generation before it in the window, that is every member's
      JoinGroup and SyncGroup once more and the leader's Metadata refresh after the round (no
      OffsetFetch: the same members get the same assignment).

    The first generation of a window is the change's own, whatever its members: only a later one can be
    a repeat. A leader's repeated round also makes attempts (:func:`repeat_attempts`)."""
    extra: Counter[str] = Counter()
    seen: set[tuple[str, int]] = set()
    for s in syncs:
        if (s.member, s.generation) in seen:
            extra.update(("JoinGroup", "SyncGroup"))
        seen.add((s.member, s.generation))
    for gen in repeated_rounds(syncs).values():
        n = len({s.member for s in syncs if s.generation == gen})
        extra.update({"JoinGroup": n, "SyncGroup": n, "Metadata": 1})
    return extra


def repeated_rounds(syncs: Sequence[Sync]) -> dict[int, int]:
    """A window's leader's repeated rounds (:func:`repeated_joins`), given its SyncGroups in order: each
    generation that was repeated, mapped to the generation that repeated it."""
    members: dict[int, set[str]] = {}
    leaders: dict[int, str] = {}
    for s in syncs:
        members.setdefault(s.generation, set()).add(s.member)
        if s.leader:
            leaders[s.generation] = s.member
    return {
        before: gen
        for before, gen in itertools.pairwise(sorted(members))
        if members[gen] == members[before] and before in leaders and leaders.get(gen) == leaders[before]
    }


def repeat_attempts(syncs: Sequence[Sync], begins: Sequence[int | None]) -> int:
    """The attempts (``rebalance_begin``) a window's leader's repeated rounds made, given its SyncGroups
    and, per member attempt in the window, the last generation that member had synced in before it (None:
    none yet): the attempts of members that had synced in a generation the leader then repeated. A member
    that had its assignment when the repeated round began starts a new rebalance (kafka-python revokes
    its partitions again); one still waiting for its SyncGroup's answer only joins again; so their number
    follows how far the round had got, the client's timing, like the repeat itself."""
    repeated = repeated_rounds(syncs)
    return sum(1 for gen in begins if gen is not None and gen in repeated)


def read_unit(unit_dir: Path) -> list[dict[str, Any]]:
    """Every event of one unit directory's ``events/*.jsonl``."""
    out: list[dict[str, Any]] = []
    for p in sorted((unit_dir / "events").glob("*.jsonl")):
        with open(p, encoding="utf-8") as f:
            out.extend(json.loads(line) for line in f if line.strip())
    return out


def unit_counts(
    events: Iterable[Mapping[str, Any]], settle_window_s: float, broker: bool = True
) -> list[TriggerCounts]:
    """Per trigger of the unit, its counts (module contract), in trigger order; ``broker`` False leaves
    the broker's group requests out (a legacy unit: its members' fetchers' Metadata requests are not
    simulated)."""
    evs = sorted(events, key=lambda e: int(e.get("ts_ns") or 0))
    facts = evaluate(evs, int(settle_window_s * 1e9))
    out: list[TriggerCounts] = []
    for t in facts.triggers:
        latency = (t.t1_ns - t.t0_ns) / 1e9 if t.t1_ns is not None else None
        tc = TriggerCounts(f"{t.action} {','.join(t.targets)}".strip(), t.outcome, latency)
        syncs: list[Sync] = []
        synced: dict[str, int] = {}  # member -> the last generation it synced in, in the window
        begins: list[int | None] = []  # per member attempt: its member's last generation synced before it
        for e in evs:
            ts = int(e.get("ts_ns") or 0)
            if ts < t.t0_ns:
                continue
            if ts >= t.end_ns:
                break
            kind, role = e.get("kind"), e.get("role")
            if role == Role.MEMBER:
                if kind == Kind.WATCH:
                    tc.watches += 1
                elif kind == Kind.ZK_REQUEST and not zk_steady(e.get("op"), e.get("path")):
                    tc.zk_requests[str(e.get("op"))] += int(e.get("count") or 1)
                elif kind == Kind.CONFLICT:
                    tc.conflicts += 1
                elif kind == Kind.REBALANCE_BEGIN:
                    tc.attempts += 1
                    begins.append(synced.get(str(e.get("source"))))
                elif failed_attempt(kind, e.get("outcome")):
                    tc.failed_attempts += 1
            elif (
                broker
                and role == Role.BROKER
                and kind == Kind.GROUP_REQUEST
                and e.get("client") not in WORKLOAD_CLIENTS
            ):
                api = str(e.get("api"))
                tc.group_requests[api] += 1
                if api == "SyncGroup":
                    gen = -1 if e.get("generation") is None else int(e["generation"])
                    syncs.append(Sync(str(e.get("member")), gen, bool(e.get("assignments"))))
                    synced[str(e.get("client"))] = gen
        tc.repeats = repeated_joins(syncs)
        tc.repeat_attempts = repeat_attempts(syncs, begins)
        out.append(tc)
    return out


@dataclass
class Comparison:
    """One (implementation, case, trigger) of a validation: real counts per repetition, simulated counts
    per simulated repetition (one when the model has no random part), and the latencies."""

    impl: str
    case: str
    members: int
    trigger: str
    real: list[dict[str, int]]
    simulated_reps: list[dict[str, int]]
    real_latency_s: list[float]
    #: per simulated repetition (aligned with ``simulated_reps``); None where it did not settle (never in
    #: :func:`compare`'s rows, which keep only repetitions whose triggers all settled)
    simulated_latencies_s: list[float | None]
    #: the protocol's own counts (:meth:`TriggerCounts.protocol_counts`), aligned with ``real`` and
    #: ``simulated_reps``; None: the same as those (no repeated joins known)
    real_protocol: list[dict[str, int]] | None = None
    simulated_protocol_reps: list[dict[str, int]] | None = None

    @property
    def simulated(self) -> dict[str, int]:
        """The first simulated repetition's counts."""
        return self.simulated_reps[0] if self.simulated_reps else {}

    @property
    def alike(self) -> list[int]:
        """The simulated repetitions (indices) whose counts are those of some real repetition: the ones
        that made the same herd (the same conflicts and retries)."""
        return [i for i, x in enumerate(self.simulated_reps) if x in self.real]

    @property
    def simulated_latency_s(self) -> float | None:
        """The simulated latency: the median over the settled simulated repetitions that made the same
        herd as a real one (:attr:`alike`), or over every settled one when none did; None when none of
        those settled. A conflict costs a retry after ``rebalance.backoff.ms``: a latency is compared
        with real ones of the same herd, while the counts say whether the simulation makes that herd."""
        pick = self.alike or range(len(self.simulated_latencies_s))
        xs = sorted(x for i in pick if (x := self.simulated_latencies_s[i]) is not None)
        if not xs:
            return None
        mid = len(xs) // 2
        return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2

    @property
    def counts_equal(self) -> bool:
        """Every real repetition's counts equal exactly those of one of the simulated repetitions (with one
        simulated repetition: all equal it). A real run's conflicts are random; so are a simulation's once
        the model has a random part: the real outcomes must be among the simulated ones."""
        return bool(self.real) and all(r in self.simulated_reps for r in self.real)

    @property
    def protocol_equal(self) -> bool:
        """:attr:`counts_equal` for the protocol's own counts: the client's repeated joins
        (:func:`repeated_joins`) taken out of both sides, since their number follows the client's timing
        on a machine at that moment (the model draws it) and not the protocol."""
        real = self.real if self.real_protocol is None else self.real_protocol
        sims = self.simulated_reps if self.simulated_protocol_reps is None else self.simulated_protocol_reps
        return bool(real) and all(r in sims for r in real)

    @property
    def latency_inside(self) -> bool | None:
        """The simulated latency (the median of the simulated repetitions') within the real repetitions'
        range (None: a side did not settle)."""
        sim = self.simulated_latency_s
        if sim is None or not self.real_latency_s:
            return None
        return min(self.real_latency_s) <= sim <= max(self.real_latency_s)


def _units(run_dir: Path) -> dict[tuple[int, str], list[Path]]:
    """(case index, implementation) -> its unit directories (``c<case>-<impl>-r<rep>``), by repetition."""
    found: list[tuple[int, str, int, Path]] = []
    for d in (run_dir / "units").iterdir():
        m = re.fullmatch(r"c(\d+)-(.+)-r(\d+)", d.name)
        if m:
            found.append((int(m.group(1)), m.group(2), int(m.group(3)), d))
    out: dict[tuple[int, str], list[Path]] = {}
    for case, impl, _, d in sorted(found, key=lambda x: x[:3]):
        out.setdefault((case, impl), []).append(d)
    return out


#: One run's herd counts: (case index, implementation) -> per repetition, per trigger (:func:`run_counts`).
RunCounts = dict[tuple[int, str], list[list[TriggerCounts]]]


def run_counts(run_dir: Path, settle_window_s: float) -> RunCounts:
    """Every unit of a run directory read once and counted (:func:`unit_counts`; a legacy unit without
    broker requests)."""
    return {
        key: [unit_counts(read_unit(d), settle_window_s, key[1] != "legacy_zk") for d in dirs]
        for key, dirs in _units(run_dir).items()
    }


def run_cases(run_dir: Path) -> dict[int, dict[str, Any]]:
    """The run's cases by index (its ``manifest.json``)."""
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return {c["index"]: c for c in manifest.get("cases") or []}


def _settled(rep: Sequence[TriggerCounts]) -> bool:
    return all(t.outcome == SETTLED for t in rep)


def unsettled(run_dir: Path, counts: RunCounts) -> list[str]:
    """The repetitions of ``run_dir`` (counted in ``counts`` by :func:`run_counts`) that :func:`compare`
    leaves out (module contract), one line each: ``<unit> (#<i> <trigger>: <outcome>, ...)``."""
    out: list[str] = []
    for key, dirs in sorted(_units(run_dir).items()):
        for d, rep in zip(dirs, counts.get(key, []), strict=True):
            if not _settled(rep):
                bad = ", ".join(
                    f"#{i + 1} {t.label}: {t.outcome}" for i, t in enumerate(rep) if t.outcome != SETTLED
                )
                out.append(f"{d.name} ({bad})")
    return out


def compare(
    real: Sequence[RunCounts], sim: RunCounts, cases: Mapping[int, Mapping[str, Any]]
) -> list[Comparison]:
    """Each (implementation, case, trigger) of the real runs' counts against every repetition of the
    simulation's; several real runs are pooled, their repetitions in the order given (see
    :func:`compare_runs`); a repetition with a trigger that did not settle is left out on either side
    (:func:`unsettled`)."""
    pooled: RunCounts = {}
    for counts in real:
        for key, reps in counts.items():
            pooled.setdefault(key, []).extend(reps)
    out: list[Comparison] = []
    for key in sorted(pooled):
        if key not in sim:
            continue
        reps = [r for r in pooled[key] if _settled(r)]
        sims = [x for x in sim[key] if _settled(x)]
        if not reps or not sims:  # nothing to compare: the left-out lines say why
            continue
        case = cases.get(key[0], {})
        for i, st in enumerate(sims[0]):
            rs = [r[i] for r in reps if i < len(r)]
            ss = [x[i] for x in sims if i < len(x)]
            out.append(
                Comparison(
                    impl=key[1],
                    case=str(case.get("label", key[0])),
                    members=int(case.get("members") or 0),
                    trigger=f"#{i + 1} {st.label}",
                    real=[r.counts() for r in rs],
                    simulated_reps=[x.counts() for x in ss],
                    real_latency_s=[r.latency_s for r in rs if r.latency_s is not None],
                    simulated_latencies_s=[x.latency_s for x in ss],
                    real_protocol=[r.protocol_counts() for r in rs],
                    simulated_protocol_reps=[x.protocol_counts() for x in ss],
                )
            )
    return out


def compare_runs(real_dirs: Path | Sequence[Path], sim_dir: Path, settle_window_s: float) -> list[Comparison]:
    """Each (implementation, case, trigger) of real and simulated run directories of the same scenario and
    cases: the real runs' repetitions against every repetition of the simulation (module contract).
    Several real runs are pooled: their repetitions, in the order given, are one real sample (a real run's
    repetitions follow each other within minutes, while a shared machine's speed can differ more between
    hours than between them; runs at different times give the range real runs take)."""
    dirs = [real_dirs] if isinstance(real_dirs, Path) else list(real_dirs)
    real = [run_counts(d, settle_window_s) for d in dirs]
    return compare(real, run_counts(sim_dir, settle_window_s), run_cases(dirs[0]))


#: The consumer protocol's one request (KIP-848): its exchanges carry ``change`` (herdlab's broker and the tap).
CONSUMER_HEARTBEAT = "ConsumerGroupHeartbeat"


@dataclass
class ConsumerCounts:
    """One trigger's timing-free counts under the consumer protocol (:func:`consumer_counts`)."""

    label: str
    outcome: str
    #: ConsumerGroupHeartbeat exchanges in the window whose ``change`` is true (the herd's own cost)
    change_heartbeats: int = 0
    #: members (by member id) that moved to a higher member epoch in the window: an exchange answered without
    #: error whose answer's epoch is above its request's (a join, epoch 0, included)
    members_reconciled: int = 0
    #: partitions a member was given in the window (its ``assigned`` events) that another member, or none,
    #: owned at the window's start (the members' ``assigned`` / ``revoked`` events before it)
    partitions_moved: int = 0

    def counts(self) -> dict[str, int]:
        return {
            "change_heartbeats": self.change_heartbeats,
            "members_reconciled": self.members_reconciled,
            "partitions_moved": self.partitions_moved,
        }


def consumer_counts(events: Iterable[Mapping[str, Any]], settle_window_s: float) -> list[ConsumerCounts]:
    """Per trigger of a consumer-protocol unit (a real run's or a simulation's history), in trigger order, its
    :class:`ConsumerCounts` inside the checker's window ``[t0, end)`` (:func:`harness.kernel.windows.evaluate`).
    Pure."""
    evs = sorted(events, key=lambda e: int(e.get("ts_ns") or 0))
    facts = evaluate(evs, int(settle_window_s * 1e9))
    out: list[ConsumerCounts] = []
    for t in facts.triggers:
        c = ConsumerCounts(f"{t.action} {','.join(t.targets)}".strip(), t.outcome)
        owner: dict[int, str] = {}
        reconciled: set[str] = set()
        moved: set[int] = set()
        for e in evs:
            ts = int(e.get("ts_ns") or 0)
            if ts >= t.end_ns:
                break
            kind, role = e.get("kind"), e.get("role")
            inside = ts >= t.t0_ns
            if role == Role.MEMBER and kind in (Kind.ASSIGNED, Kind.REVOKED):
                p, who = int(e["partition"]), str(e.get("source"))
                if kind == Kind.ASSIGNED:
                    if inside and owner.get(p) != who and p not in moved:
                        moved.add(p)
                    if not inside:
                        owner[p] = who
                elif not inside and owner.get(p) == who:
                    del owner[p]
            elif (
                inside
                and role == Role.BROKER
                and kind == Kind.GROUP_REQUEST
                and e.get("api") == CONSUMER_HEARTBEAT
                and e.get("change") is True
            ):
                c.change_heartbeats += 1
                epoch, asked = e.get("epoch"), e.get("member_epoch")
                answered = e.get("error") is None and epoch is not None and asked is not None
                if answered and 0 <= int(asked) < int(epoch):  # pyright: ignore[reportArgumentType]
                    reconciled.add(str(e.get("member")))
        c.members_reconciled = len(reconciled)
        c.partitions_moved = len(moved)
        out.append(c)
    return out
