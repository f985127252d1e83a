"""One synthetic unit of :mod:`harness.analysis.synthetic`: its events and the answers built into it.

:func:`build_unit` returns the unit's events as one Arrow table of :data:`~harness.history.schema.SCHEMA`
and its expected figures (see :mod:`harness.analysis.synthetic` for the names). What a unit writes,
in the history contract of :mod:`harness.kernel.events` (times in seconds from the unit's start):

* start-up (0 to 1 s): ``unit_start``; every member ``ready``, ``started``, ``rebalance_begin``, one
  ``assigned`` per partition and ``rebalance_end`` ok at 0.5 (the broker's group states and
  requests, or the members' ZooKeeper registrations, around it); ``stable`` at 1.0.
* each trigger (:data:`PLAN`): a ``zk_mntr`` sample ``invoke:<action_id>`` 1 ms before the
  ``invoke``; the action's own events and its ``complete`` (join: the joiner's ``ready``
  :data:`JOIN_STARTUP_S` after the invoke is t0 and the complete, ``started`` 50 ms later; leave:
  the leaver commits, revokes and stops 15 to 40 ms after the invoke, then the complete; crash:
  the complete 10 ms after the invoke); the reaction at t0 + :func:`detection_s` (coordinator: the
  broker's ``group_state`` and ``rebalance_begin``; legacy_zk: a ``watch`` per remaining member);
  the remaining members revoke everything; the rebalance's traffic; and at t1 = t0 +
  :func:`latency_s` the new range assignment with a ``rebalance_end`` ok per live member.
* steady state: offset commits every :data:`COMMIT_EVERY_S` by each partition's owner, outside
  the triggers' rebalances (legacy_zk: a ``set`` under ``/offsets/`` and a member ``commit``;
  coordinator: a broker ``commit`` with the generation); one ``broker_request`` counter report
  per second (both implementations run a broker).
* the records (:mod:`.synthetic_records`); with ``zombie_s``, the old owner that replays a
  partition after a trigger writes a second ``revoked`` of it when the replay ends (it claims
  nothing, so ownership and the trigger's latency stay as they were).
* ``settling_end`` (and its ``zk_mntr`` sample) ``duration_s`` after ``stable`` (with
  ``settle_last=False``: half a settle window after the last trigger's t1); the drain; ``drained``
  50 ms after the last record; every live member revokes and stops 100 ms later.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from harness.analysis.synthetic_records import (
    Records,
    Zombie,
    build_records,
    duplicate_last_ts,
    tables,
)
from harness.history.schema import rows_to_table
from harness.kernel.events import COORDINATION_APIS, zk_steady

NS = 1_000_000_000
TOPIC, GROUP, BROKER = "herd", "g", "broker-0"
STABLE_S = 1.0  # the ``stable`` marker, seconds after the unit's start
JOIN_STARTUP_S = 0.4  # from a join's invoke to its joiner's ``ready`` (t0 of the join)
COMMIT_EVERY_S = 5.0  # steady offset commits
PINGS_PER_S = 2  # ZooKeeper packets that are not requests of the members (mntr counter)
#: (action, seconds after ``stable`` on a 60 s timeline)
PLAN = (("join", 5.0), ("leave", 25.0), ("crash", 45.0))
#: the ZooKeeper requests of a legacy rebalance, in turn ({m}: a member, {p}: a partition)
ZK_REBALANCE_OPS = (
    ("get_children", "/consumers/g/ids"),
    ("get", "/consumers/g/ids/{m}"),
    ("get", "/brokers/topics/herd"),
    ("exists", "/consumers/g/owners/herd/{p}"),
    ("delete", "/consumers/g/owners/herd/{p}"),
    ("create", "/consumers/g/owners/herd/{p}"),
    ("get", "/consumers/g/offsets/herd/{p}"),  # an offset read is coordination traffic (OffsetFetch)
)


def detection_s(impl: str, action: str) -> float:
    """Seconds from t0 to the first reaction the generator writes."""
    return {"join": 0.6, "leave": 0.05, "crash": 6.0}[action] + (0.0 if impl == "coordinator" else 0.02)


def latency_s(impl: str, action: str, n: int) -> float:
    """Seconds from t0 to settled for a trigger of ``action`` in a group of ``n`` members."""
    conv = 0.5 if impl == "coordinator" else 0.05 * n
    return round(detection_s(impl, action) + conv, 6)


class Ns(int):
    """An absolute time in ns (``ts_ns``), where the event helpers otherwise take seconds from the
    unit's start."""


@dataclass(frozen=True)
class UnitOptions:
    """The knobs of :func:`harness.analysis.synthetic.write_synthetic_run` that shape one unit."""

    rate: float = 200.0
    duration_s: float = 60.0
    redeliver_s: float = 0.05
    lose: int = 0
    undrained: int = 0
    zombie_s: float = 0.0
    settle_last: bool = True
    settle_window_s: float = 3.0


@dataclass
class _Trigger:
    """One trigger as written (seconds from the unit's start) and its closed-form herd."""

    action: str
    action_id: int
    targets: list[str]
    invoke: float
    t0: float
    react: float
    t1: float
    before: dict[int, str]  # partition -> owner before the trigger
    after: dict[int, str]  # ... after it
    live: list[str]  # live members after it
    herd: dict[str, Any]
    end: float = 0.0  # window end: next t0 or settling_end
    sample: int = 0  # ts_ns of the invoke's mntr sample
    zombie: tuple[int, int] | None = None  # (first, last) ts_ns of the replay, if any
    settled: bool = True


def build_unit(
    ctx: dict[str, Any], n: int, start: int, opts: UnitOptions, rng: np.random.Generator
) -> tuple[pa.Table, dict[str, Any]]:
    """One unit of ``n`` members starting at ``start`` (ns): its table and its expected figures."""
    if n < 3:
        raise ValueError(f"a synthetic unit needs at least 3 members (join, leave and crash), not {n}")
    return _Unit(ctx, n, start, opts, rng).build()


class _Unit:
    """The writer of one unit (see the module docstring)."""

    def __init__(
        self, ctx: dict[str, Any], n: int, start: int, opts: UnitOptions, rng: np.random.Generator
    ) -> None:
        self.ctx, self.n, self.start, self.o, self.rng = ctx, n, start, opts, rng
        self.legacy = ctx["impl"] == "legacy_zk"
        self.ev: list[dict[str, Any]] = []
        self.zk_ns: list[int] = []  # every member ZooKeeper request (the mntr counter)
        self.steady_zk_ns: list[int] = []  # offset writes
        self.requests: list[tuple[int, str]] = []  # broker group_request events (ts_ns, api)
        self.commit_ns: list[int] = []  # broker-side commits (OffsetCommit requests)
        self.samples: list[tuple[int, str]] = []  # zk_mntr (ts_ns, label)
        self.live = [f"m{i}" for i in range(n)]
        self.gen = 1
        self.owners: dict[int, str] = {}
        self.epochs: list[tuple[float, dict[int, str]]] = []  # (from, owners)
        self.triggers: list[_Trigger] = []
        self.settling_end = 0.0
        self.produced = 0
        self.last = 0.0  # the members' stops: the last control event
        self.zk_sorted = np.empty(0, dtype=np.int64)
        self.reports: list[tuple[int, dict[str, int]]] = []  # broker_request (ts_ns, requests)

    # -- writing events ------------------------------------------------------------------------------
    def ns(self, t: float) -> int:
        return self.start + int(round(t * NS))

    def at(self, t: float | Ns, kind: str, source: str, role: str, **f: Any) -> None:
        """An event at ``t`` seconds from the unit's start, or at :class:`Ns` ``t``."""
        ts = int(t) if isinstance(t, Ns) else self.ns(t)
        self.ev.append({"ts_ns": ts, "source": source, "role": role, "kind": kind, **f})

    def member(self, t: float | Ns, kind: str, m: str, **f: Any) -> None:
        self.at(t, kind, m, "member", **f)

    def harness(self, t: float, kind: str, **f: Any) -> None:
        self.at(t, kind, "nemesis", "harness", **f)

    def nemesis(self, t: float, kind: str, **f: Any) -> None:
        self.at(t, kind, "nemesis", "nemesis", **f)

    def broker(self, t: float, kind: str, **f: Any) -> None:
        self.at(t, kind, BROKER, "broker", group=GROUP, broker_id=0, **f)

    def state(self, t: float, frm: str, to: str, gen: int) -> None:
        self.broker(t, "group_state", from_state=frm, to_state=to, generation=gen)

    def request(self, t: float, api: str, m: str) -> None:
        """One coordination request served by the broker (a ``group_request`` event)."""
        self.broker(t, "group_request", api=api, client=m)
        self.requests.append((self.ns(t), api))

    def zk(self, t: float, m: str, op: str, path: str) -> None:
        self.member(t, "zk_request", m, op=op, path=path)
        self.zk_ns.append(self.ns(t))
        if zk_steady(op, path):
            self.steady_zk_ns.append(self.ns(t))

    def sample(self, t: float, label: str) -> int:
        self.samples.append((self.ns(t), label))
        return self.ns(t)

    def ids(self, m: str) -> dict[str, Any]:
        """The fields a coordinator member adds to its group events (none for legacy_zk)."""
        return {} if self.legacy else {"generation": self.gen, "member": f"{m}-id"}

    def assign(self, t: float, members: list[str]) -> dict[int, str]:
        """Range assignment of the partitions to ``members``: ``assigned`` per partition and
        ``rebalance_end`` ok per member."""
        owners = {p: members[p * len(members) // self.n] for p in range(self.n)}
        for m in members:
            for p in (p for p, o in owners.items() if o == m):
                self.member(t, "assigned", m, topic=TOPIC, partition=p, **self.ids(m))
            self.member(t, "rebalance_end", m, outcome="ok", attempt=0, **self.ids(m))
        return owners

    def revoke(self, t: float | Ns, m: str, owners: dict[int, str], **f: Any) -> None:
        for p in (p for p, o in owners.items() if o == m):
            self.member(t, "revoked", m, topic=TOPIC, partition=p, **self.ids(m), **f)

    def commit(self, t: float, m: str, p: int, gen: int | None = None) -> None:
        """An accepted offset commit of ``m`` for ``p`` (steady state, never coordination); a
        coordinator commit carries ``gen`` (default: the current generation)."""
        offset = int(max(0.0, t - STABLE_S - 0.2) * self.o.rate / self.n)
        if self.legacy:
            self.zk(t, m, "set", f"/consumers/{GROUP}/offsets/{TOPIC}/{p}")
            self.member(t, "commit", m, topic=TOPIC, partition=p, offset=offset)
        else:
            self.broker(
                t,
                "commit",
                member=f"{m}-id",
                generation=self.gen if gen is None else gen,
                topic=TOPIC,
                partition=p,
                offset=offset,
            )
            self.commit_ns.append(self.ns(t))

    # -- the unit -----------------------------------------------------------------------------------
    def build(self) -> tuple[pa.Table, dict[str, Any]]:
        self.startup()
        scale = self.o.duration_s / 60.0
        targets = {"join": ["j0"], "leave": [self.live[1]], "crash": [self.live[2]]}
        for k, (action, rel) in enumerate(PLAN):
            self.trigger(k + 1, action, STABLE_S + rel * scale, targets[action])
        self.windows()
        self.steady_commits()
        rec = self.records()
        last_record = int(rec.ts.max()) if rec.ts.size else self.ns(self.settling_end)
        self.drain((last_record - self.start) / NS)
        self.mntr_samples()
        self.broker_reports()
        control = rows_to_table([{**self.ctx, **e} for e in self.ev])
        return pa.concat_tables([control, *tables(self.ctx, TOPIC, rec)]), self.expected(rec)

    def startup(self) -> None:
        live = self.live
        self.harness(0.0, "unit_start", topic=TOPIC, group=GROUP, partitions=self.n, members=list(live))
        self.sample(0.0, "start")
        for m in live:
            self.member(0.05, "ready", m)
            self.member(0.1, "started", m, name=m)
            self.member(0.2, "rebalance_begin", m, attempt=0, **self.ids(m))
        if self.legacy:
            for m in live:
                self.member(0.12, "registered", m)
                self.zk(0.15, m, "create", f"/consumers/{GROUP}/ids/{m}")
                self.zk(0.2, m, "get_children", f"/consumers/{GROUP}/ids")
        else:
            self.state(0.2, "Empty", "PreparingRebalance", 0)
            self.broker(0.2, "rebalance_begin", generation=0)
            for m in live:
                self.request(0.14, "Metadata", m)
                self.request(0.15, "FindCoordinator", m)
                self.request(0.2, "JoinGroup", m)
                self.request(0.45, "SyncGroup", m)
            self.state(0.44, "PreparingRebalance", "CompletingRebalance", 1)
            self.state(0.46, "CompletingRebalance", "Stable", 1)
        self.owners = self.assign(0.5, live)
        for m in live:
            self.request(0.55, "Metadata" if self.legacy else "OffsetFetch", m)
        self.epochs.append((0.5, dict(self.owners)))
        self.harness(STABLE_S, "stable")
        self.sample(STABLE_S, "stable")

    def trigger(self, aid: int, action: str, inv: float, targets: list[str]) -> None:
        sample = self.sample(inv - 0.001, f"invoke:{aid}")
        pair = {
            "action": action,
            "action_id": aid,
            "targets": targets,
            "target": None,
            "value": None,
            "trigger": True,
        }
        self.nemesis(inv, "invoke", **pair)
        before_live, before = list(self.live), dict(self.owners)
        m = targets[0]
        t0 = inv
        if action == "join":
            t0 = inv + JOIN_STARTUP_S
            self.member(t0, "ready", m)
            self.nemesis(t0, "complete", **pair, ready_ns={m: self.ns(t0)})
            self.member(t0 + 0.05, "started", m, name=m)
            if not self.legacy:
                self.request(t0 + 0.06, "Metadata", m)
                self.request(t0 + 0.07, "FindCoordinator", m)
            self.live = before_live + targets
        elif action == "leave":
            for p in (p for p, o in before.items() if o == m):
                self.commit(inv + 0.015, m, p)
            self.revoke(inv + 0.02, m, before, reason="shutdown")
            if not self.legacy:
                self.request(inv + 0.03, "LeaveGroup", m)
            self.member(inv + 0.04, "stopped", m, clean=True)
            self.nemesis(inv + 0.04, "complete", **pair)
            self.live = [x for x in before_live if x != m]
        else:
            self.nemesis(inv + 0.01, "complete", **pair)
            self.live = [x for x in before_live if x != m]
        stay = [x for x in before_live if x in self.live]
        react = t0 + detection_s(self.ctx["impl"], action)
        t1 = t0 + latency_s(self.ctx["impl"], action, self.n)
        herd = (self.legacy_reaction if self.legacy else self.broker_reaction)(react, t1, stay, before)
        herd["rebalance_attempts"] = len(self.live) + herd["failed_attempts"]
        self.gen += 1
        self.owners = self.assign(t1, self.live)
        if self.legacy and action == "join":
            self.request(t1 + 0.01, "Metadata", m)  # the joiner's fetcher bootstraps
            herd["broker_requests_by_api"] = {"Metadata": 1}
        elif not self.legacy:
            for x in self.live:
                self.request(t1 + 0.005, "OffsetFetch", x)
            by_api = Counter({"JoinGroup": len(self.live), "SyncGroup": len(self.live)})
            by_api["OffsetFetch"] = len(self.live)
            by_api.update({"join": ["Metadata", "FindCoordinator"], "leave": ["LeaveGroup"]}.get(action, []))
            herd["broker_requests_by_api"] = dict(sorted(by_api.items()))
        herd["broker_group_requests"] = sum(herd["broker_requests_by_api"].values())
        herd["coordination_requests"] = herd["zk_requests"] + herd["broker_group_requests"]
        self.epochs.append((t1, dict(self.owners)))
        after = dict(self.owners)
        self.triggers.append(
            _Trigger(
                action, aid, targets, inv, t0, react, t1, before, after, list(self.live), herd, sample=sample
            )
        )

    def legacy_reaction(
        self, react: float, t1: float, stay: list[str], before: dict[int, str]
    ) -> dict[str, Any]:
        """Watches, offset writes (steady), revocations, conflicts and the rebalance's ZooKeeper
        requests of a 0.8 herd; returns its closed-form counts."""
        live = self.live
        for m in stay:
            self.member(react, "watch", m, path=f"/consumers/{GROUP}/ids", type="CHILD")
        for m in live:
            self.member(react, "rebalance_begin", m, attempt=0)
        for m in stay:
            for p in (p for p, o in before.items() if o == m):
                self.commit(react + 0.0002, m, p)
            self.revoke(react + 0.0005, m, before, reason="rebalance")
        conflicts = max(1, len(live) // 5)
        for i in range(conflicts):
            m = live[i % len(live)]
            p = i % self.n
            self.member(
                react + 0.001,
                "conflict",
                m,
                topic=TOPIC,
                partition=p,
                path=f"/consumers/{GROUP}/owners/{TOPIC}/{p}",
            )
            self.member(react + 0.002, "rebalance_end", m, outcome="conflict", attempt=0)
            self.member(react + 0.003, "rebalance_begin", m, attempt=1)
        req = int(1.5 * len(live) ** 2)
        ops: Counter[str] = Counter()
        for i, t in enumerate(np.linspace(react + 0.004, t1 - 0.002, req)):
            m = live[i % len(live)]
            op, path = ZK_REBALANCE_OPS[i % len(ZK_REBALANCE_OPS)]
            self.zk(float(t), m, op, path.format(m=m, p=i % self.n))
            ops[op] += 1
        return {
            "watches": len(stay),
            "zk_requests": req,
            "zk_requests_by_op": dict(sorted(ops.items())),
            "conflicts": conflicts,
            "failed_attempts": conflicts,
            "group_rebalances": 0,
            "broker_requests_by_api": {},
        }

    def broker_reaction(
        self, react: float, t1: float, stay: list[str], before: dict[int, str]
    ) -> dict[str, Any]:
        """The classic coordinator's rebalance: group states, JoinGroup / SyncGroup of every live
        member (the newest member first), revocations; returns its closed-form counts."""
        live = self.live
        self.state(react, "Stable", "PreparingRebalance", self.gen)
        self.broker(react, "rebalance_begin", generation=self.gen)
        order = [m for m in live if m not in stay] + stay
        for i, m in enumerate(order):
            self.request(react + i * 0.2 / len(order), "JoinGroup", m)
        for m in live:
            self.member(react, "rebalance_begin", m, attempt=0, **self.ids(m))
        for m in stay:
            self.revoke(react, m, before, reason="rebalance")
        self.state(t1 - 0.05, "PreparingRebalance", "CompletingRebalance", self.gen + 1)
        for i, m in enumerate(live):
            self.request(t1 - 0.04 + i * 0.02 / len(live), "SyncGroup", m)
        self.state(t1 - 0.01, "CompletingRebalance", "Stable", self.gen + 1)
        return {
            "watches": 0,
            "zk_requests": 0,
            "zk_requests_by_op": {},
            "conflicts": 0,
            "failed_attempts": 0,
            "group_rebalances": 1,
        }

    def windows(self) -> None:
        """Window ends, ``settling_end``; checks that every trigger can show its built-in outcome."""
        w = self.o.settle_window_s
        last = self.triggers[-1]
        self.settling_end = STABLE_S + self.o.duration_s if self.o.settle_last else last.t1 + w / 2
        last.settled = self.o.settle_last
        for t, nxt in zip(self.triggers, [*self.triggers[1:], None], strict=True):
            t.end = min(nxt.t0 if nxt else self.settling_end, self.settling_end)
            if t.settled and t.t1 + w > t.end:
                raise ValueError(
                    f"duration_s={self.o.duration_s:g} leaves the {t.action} of {self.ctx['case']} "
                    f"{self.ctx['impl']} no settle window before its window ends"
                )
            if t.t1 + 0.02 >= t.end:
                raise ValueError(
                    f"duration_s={self.o.duration_s:g}: the {t.action}'s rebalance overruns its window"
                )
        self.sample(self.settling_end, "settling_end")
        self.harness(self.settling_end, "settling_end", settled=self.o.settle_last)

    def steady_commits(self) -> None:
        """Each owner commits its partitions every COMMIT_EVERY_S, outside the triggers' rebalances."""
        t = STABLE_S + COMMIT_EVERY_S / 2
        while t < self.settling_end - 0.1:
            if not any(tr.invoke - 0.01 <= t <= tr.t1 + 0.05 for tr in self.triggers):
                e = max(i for i, (since, _) in enumerate(self.epochs) if since <= t)
                for p, m in sorted(self.epochs[e][1].items()):
                    self.commit(t, m, p, gen=1 + e)
            t += COMMIT_EVERY_S

    # -- the bulk: produced records and their processing ---------------------------------------------
    def records(self) -> Records:
        """The records (:mod:`.synthetic_records`); a zombie replay after each trigger that moved a
        partition away from a member that stays (the first such partition), closed by a second
        ``revoked`` of it so that ownership never changes."""
        o = self.o
        zombies = []
        for k, t in enumerate(self.triggers):
            moved = [p for p in range(self.n) if t.before[p] in t.live and t.after[p] != t.before[p]]
            if o.zombie_s > 0 and moved:
                zombies.append(Zombie(k, moved[0], t.before[moved[0]], t.after[moved[0]], t.end))
        rec = build_records(
            start=self.start,
            n=self.n,
            rate=o.rate,
            produce_from=STABLE_S + 0.2,
            produce_s=o.duration_s + 0.5,
            epochs=self.epochs,
            stops=[(t.t0, t.t1) for t in self.triggers],
            redeliver_s=o.redeliver_s,
            lose=o.lose,
            undrained=o.undrained,
            zombies=zombies,
            zombie_s=o.zombie_s,
            rng=self.rng,
        )
        for z, (first, last) in zip(zombies, rec.zombies, strict=True):
            self.revoke(Ns(last), z.old, {z.p: z.old}, reason="zombie")
            self.triggers[z.k].zombie = (first, last)
        self.produced = rec.produced
        return rec

    # -- after the settling phase --------------------------------------------------------------------
    def drain(self, last_record: float) -> None:
        o = self.o
        self.harness(last_record + 0.05, "drained", all_processed=not (o.lose or o.undrained))
        stop = last_record + 0.15
        for m in self.live:
            self.revoke(stop, m, self.owners, reason="shutdown")
            if not self.legacy:
                self.request(stop, "LeaveGroup", m)
            self.member(stop, "stopped", m, clean=True)
        self.last = stop

    def packets(self, ts: int) -> int:
        """The mntr counter zk_packets_received at ``ts``: see PINGS_PER_S."""
        before = int(np.searchsorted(self.zk_sorted, ts, side="left"))
        return 1000 + before + int(PINGS_PER_S * (ts - self.start) // NS)

    def mntr_samples(self) -> None:
        self.zk_sorted = np.sort(np.array(self.zk_ns, dtype=np.int64))
        for ts, label in self.samples:
            self.at(
                Ns(ts),
                "zk_mntr",
                "nemesis",
                "harness",
                label=label,
                counters={"zk_packets_received": self.packets(ts)},
            )

    def broker_reports(self) -> None:
        """One ``broker_request`` counter report per second: every API the broker served in the
        second before it (coordination ones included, as the real broker counts them)."""
        req_ts = np.array([ts for ts, _ in self.requests], dtype=np.int64)
        req_api = np.array([api for _, api in self.requests])
        commits = np.sort(np.array(self.commit_ns, dtype=np.int64))
        for s in range(1, int(np.ceil(self.last)) + 1):
            lo, hi = self.ns(float(s - 1)), self.ns(float(s))
            counts: Counter[str] = Counter()
            inside = (req_ts >= lo) & (req_ts < hi)
            counts.update(req_api[inside].tolist())
            counts["Fetch"] = 10 * self.n
            counts["Produce"] = max(1, round(self.o.rate / 5))
            if not self.legacy:
                counts["Heartbeat"] = 3 * self.n
                c = int(np.searchsorted(commits, hi) - np.searchsorted(commits, lo))
                if c:
                    counts["OffsetCommit"] = c
            requests = dict(sorted(counts.items()))
            self.broker(
                float(s), "broker_request", interval_s=1.0, requests=requests, total=sum(requests.values())
            )
            self.reports.append((self.ns(float(s)), requests))

    # -- the answers -----------------------------------------------------------------------------------
    def expected(self, rec: Records) -> dict[str, Any]:
        o = self.o
        dup_last = duplicate_last_ts(rec)
        triggers = []
        for k, t in enumerate(self.triggers):
            t0, t1, react, end = self.ns(t.t0), self.ns(t.t1), self.ns(t.react), self.ns(t.end)
            edge = self.triggers[k + 1].sample if k + 1 < len(self.triggers) else self.ns(self.settling_end)
            z = t.zombie
            triggers.append(
                {
                    "action": t.action,
                    "targets": t.targets,
                    "outcome": "settled" if t.settled else "never",
                    "startup_s": _dur(self.ns(t.invoke), t0) if t.action == "join" else None,
                    "latency_s": _dur(t0, t1) if t.settled else None,
                    "detection_s": _dur(t0, react) if t.settled else None,
                    "convergence_s": _dur(react, t1) if t.settled else None,
                    **t.herd,
                    "zk_packets": self.packets(edge) - self.packets(t.sample),
                    "overlap_episodes": 0 if z is None else 1,
                    "overlap_s": 0.0 if z is None else _dur(z[0], z[1]),
                    "duplicates": int(((dup_last >= t0) & (dup_last < end)).sum()),
                }
            )
        stable, send = self.ns(STABLE_S), self.ns(self.settling_end)
        window_ns = send - stable
        steady: Counter[str] = Counter()
        for ts, requests in self.reports:
            if stable <= ts < send:
                steady.update({a: v for a, v in requests.items() if a not in COORDINATION_APIS})
        zk_commits = sum(1 for ts in self.steady_zk_ns if stable <= ts < send)
        lost, undrained = o.lose, min(o.undrained, self.produced)
        return {
            "members": self.n,
            "produced": self.produced,
            "processed": self.produced - lost - undrained,
            "lost": lost,
            "not_drained": undrained,
            "duplicates": int(dup_last.size),
            "overlap_episodes": sum(t["overlap_episodes"] for t in triggers),
            "overlap_s": round(sum(t["overlap_s"] for t in triggers), 6),
            "commits_non_owner": 0,
            "commits_stale_generation": None if self.legacy else 0,
            "steady": {
                "window_s": round(window_ns / NS, 3),
                "zk_commits_per_s": round(zk_commits * NS / window_ns, 3),
                "broker_per_s": {a: round(v * NS / window_ns, 3) for a, v in sorted(steady.items())},
            },
            "triggers": triggers,
        }


def _dur(a: int, b: int) -> float:
    return round((b - a) / NS, 6)
