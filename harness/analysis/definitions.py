"""What every metric means: the definitions the analysis implements and the reports print.

design.md ("Definitions the analysis uses") fixes the ideas; this module fixes the details it leaves
open. :data:`DEFINITIONS` is the text the reports print; :data:`METRICS` names every metric with its
unit and how :mod:`harness.report.compare` treats it. Keep the two in step with
:mod:`harness.analysis.jobs`, which computes them.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Ordered (term, definition) pairs, printed in every report.
DEFINITIONS: list[tuple[str, str]] = [
    (
        "unit",
        "One (case, implementation, repetition): a fresh cluster, one group, one nemesis timeline. "
        "Times in plots are seconds since the unit's `stable` event (the origin of the timeline).",
    ),
    (
        "member identity",
        "The harness's name for a member (the event's `source`, or the `name` its `started` event "
        "carries when that differs). The protocol-level member id is mapped to it for broker-side events.",
    ),
    (
        "claim / tenure",
        "A member claims a partition from its `assigned` event until its `revoked` event for that "
        "partition, its `stopped` event, or a nemesis crash of it (an event listing several partitions, "
        "as legacy_zk members write them, counts once per partition). A member is live from `started` "
        "until `stopped` or crash; it is suspended from a nemesis pause/cut of it until resume/heal "
        "(or crash). Only claims of live, unsuspended members count for ownership.",
    ),
    (
        "trigger t0",
        "A nemesis action with `trigger` set (join, leave, crash, pause, cut, expire, stop/start of a "
        "member, partition growth, broker restart). Its window runs to the next trigger, or the unit's "
        "last event.",
    ),
    (
        "settled t1",
        "The first change point c >= t0 (t0 itself included) at which every partition 0..P-1 (P as "
        "of c) has exactly one counting claimant and no one claims a partition >= P; joiners of the "
        "trigger are live; no change point follows within the settle window; and c + window is no "
        "later than the next trigger (or the unit's last event). Change points are the times of "
        "assigned, revoked, started, stopped events and of crash, pause, cut, resume, heal and "
        "add_partitions actions. A trigger without such a c never settled and is reported as `never`.",
    ),
    ("rebalance latency", "t1 - t0."),
    (
        "detection",
        "t0 to the first reaction in [t0, t1] (to the next trigger if it never settled): a member "
        "other than the trigger's targets writing rebalance_begin, revoked or watch, or the broker "
        "writing a group_state change. `never` when nothing reacted.",
    ),
    ("convergence", "From that first reaction to t1 (latency = detection + convergence)."),
    (
        "resumed",
        "t0 to the time by which every partition 0..P-1 had a record processed at or after t1 "
        "(before the next trigger). `never` if a partition got none.",
    ),
    (
        "consumption gap",
        "The longest time with no record processed on any partition, among the pauses that overlap "
        "[t0, resumed] (the stop-the-world gap of the change; to the next trigger if it never resumed).",
    ),
    (
        "herd window",
        "Herd counts are taken over [t0, t1], or [t0, next trigger] when the trigger never settled.",
    ),
    (
        "herd counts",
        "watches: watch notifications delivered to members; zk_requests: ZooKeeper requests members "
        "sent, also by operation; zk_packets: zk_packets_received from the `mntr` sample taken right "
        "after t0 to the next sample (the next trigger's, or after settling); broker_requests: requests "
        "the broker counted, also by API (a broker report covers its last interval_s; it is attributed "
        "in proportion to the overlap of that interval with the window, so these may be fractional); "
        "broker_group_requests: of those, the group APIs (FindCoordinator, JoinGroup, SyncGroup, "
        "Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch); conflicts: NodeExists on an owner znode; "
        "failed_attempts: member rebalance attempts ending in anything but ok / no_brokers / "
        "shutdown; rebalance_attempts: member rebalance_begin events; group_rebalances: broker-side "
        "group rebalances begun.",
    ),
    (
        "processing interval",
        "A member's processing of a partition, from its first to its last record within one stretch: "
        "a stretch starts at each `assigned` of that partition to the member and at each pause/cut "
        "of the member (a zombie's records after its return form a stretch of their own).",
    ),
    (
        "overlap (split brain)",
        "Per partition, two processing intervals of different members that intersect (closed "
        "intervals; one record inside another member's interval counts, with duration 0). overlaps "
        "counts such pairs; overlap_s is the length of their union. Attributed to the trigger "
        "window in which the overlap starts (before the first trigger: `startup`).",
    ),
    (
        "duplicates",
        "(partition, offset) pairs processed more than once in a unit; duplicate_deliveries counts the "
        "extra deliveries; duplicates_cross_member those processed by two or more members. Attributed "
        "to the window of the pair's last delivery.",
    ),
    (
        "accepted commits",
        "Commits the broker accepted (its `commit` events) when the unit has broker-side commit "
        "events, otherwise the members' `commit` events (legacy_zk writes offsets to ZooKeeper).",
    ),
    (
        "commit from a non-owner",
        "An accepted commit of partition p at time t by a member that was not p's owner at t: the "
        "live member whose current claim of p began most recently (a zombie whose claim was "
        "superseded is not the owner). Commits whose member id maps to no member count here too.",
    ),
    (
        "commit from a stale generation",
        "An accepted commit carrying generation g >= 0 while the group's generation at t (the latest "
        "broker group_state generation, or the latest generation members were assigned in) was "
        "larger. Not applicable to legacy_zk (no generations): n/a.",
    ),
    (
        "lost",
        "Produced and acknowledged (partition, offset) records (`produced` events) that no member "
        "processed although a higher offset of the same partition was processed: a skip. Must be zero "
        "in every scenario; any lost record fails the run (`LOST`), and `herdlab compare` flags it.",
    ),
    (
        "not drained",
        "Produced and acknowledged records above the last processed offset of their partition when the "
        "drain phase ended: an unconsumed tail, not a skip. It also fails the run, with its own "
        "message (`NOT DRAINED`), and `herdlab compare` flags it.",
    ),
    (
        "statistics over repetitions",
        "One row per implementation, case, trigger (by its position in the timeline, e.g. `#1 join`) and "
        "metric; `unit` rows summarise whole units. Units that failed are left out (they are flagged). "
        "n: repetitions with the trigger; never / no_effect / skipped: how many had that outcome. The "
        "sample: for latency metrics (latency, detection, convergence, resumed) every repetition but "
        "the no_effect and skipped ones, a `never` one counting as +infinity; for other metrics every "
        "measured value of a repetition whose trigger was not skipped. p50 / p95 / p99: order the m "
        "values of the sample, x(1) <= ... <= x(m); the q-quantile sits at rank h = 1 + (m - 1) q, "
        "i = floor(h), f = h - i, and is x(i) + f (x(i+1) - x(i)) (x(i) alone when f = 0). It reads "
        "`never` when a rank it touches is never (so with 20 repetitions and one never, p95 is never: "
        "rank 19.05 touches rank 20). max = x(m). With m = 1 the one value is shown (`value`), not four "
        "equal statistics. mean and a t-based 95% confidence interval, mean +- t(0.975, k-1) s / sqrt(k), "
        "over the k finite values; `left_out` says how many were never; with k = 1 there is no interval. "
        "`herdlab compare --stat mean` reads a mean with any never left out as `never`. By-operation "
        "counts (zk_requests[getData], broker_group_requests[JoinGroup]) count a repetition without "
        "that operation as 0. No row pools different triggers.",
    ),
]


@dataclass(frozen=True)
class Metric:
    """One metric: how to label it, its unit, and how comparisons treat it.

    ``censored``: a missing value means "never" (+infinity), not "not measured".
    ``compare``: whether ``herdlab compare`` checks it for regressions (lower is better for all).
    ``abs_tolerance``: the default absolute slack of a comparison, on top of the relative one.
    """

    name: str
    label: str
    unit: str
    family: str
    censored: bool = False
    compare: bool = True
    abs_tolerance: float = 0.0


_S = 0.05  # seconds of slack for time metrics (clock and polling granularity)

TRIGGER_METRICS: list[Metric] = [
    Metric("latency_s", "rebalance latency", "s", "latency", censored=True, abs_tolerance=_S),
    Metric("detection_s", "detection", "s", "latency", censored=True, abs_tolerance=_S),
    Metric("convergence_s", "convergence", "s", "latency", censored=True, abs_tolerance=_S),
    Metric("resumed_s", "resumed after", "s", "latency", censored=True, abs_tolerance=_S),
    Metric("gap_s", "consumption gap", "s", "latency", abs_tolerance=_S),
    Metric("startup_s", "process start-up (joins)", "s", "latency", compare=False),
    Metric("coordination_requests", "coordination requests", "", "herd"),
    Metric("watches", "watch notifications", "", "herd"),
    Metric("zk_requests", "ZooKeeper requests", "", "herd"),
    Metric("zk_packets", "ZooKeeper packets (mntr)", "", "herd"),
    Metric("broker_group_requests", "broker coordination requests", "", "herd"),
    Metric("conflicts", "ownership conflicts", "", "herd"),
    Metric("failed_attempts", "failed rebalance attempts", "", "herd"),
    Metric("rebalance_attempts", "member rebalance attempts", "", "herd"),
    Metric("group_rebalances", "broker group rebalances", "", "herd"),
    Metric("overlap_episodes", "overlap episodes", "", "split_brain"),
    Metric("overlap_s", "overlap duration", "s", "split_brain", abs_tolerance=_S),
    Metric("duplicates", "duplicates", "", "split_brain"),
    Metric("commits_non_owner", "commits from non-owners", "", "split_brain"),
    Metric("commits_stale_generation", "commits from stale generations", "", "split_brain"),
]

#: Whole-unit metrics. ``lost`` and ``not_drained`` are not compared as statistics: any of them in the
#: current run is flagged by ``herdlab compare`` on its own.
UNIT_METRICS: list[Metric] = [
    Metric("produced", "records produced", "", "completeness", compare=False),
    Metric("processed", "distinct records processed", "", "completeness", compare=False),
    Metric("lost", "records lost (skipped)", "", "completeness", compare=False),
    Metric("not_drained", "records not drained", "", "completeness", compare=False),
    Metric("processed_not_produced", "processed but never acknowledged", "", "completeness", compare=False),
    Metric("produce_errors", "produce errors", "", "completeness", compare=False),
    Metric("duplicates", "duplicates", "", "split_brain"),
    Metric("duplicate_deliveries", "duplicate deliveries", "", "split_brain"),
    Metric("duplicates_cross_member", "duplicates across members", "", "split_brain"),
    Metric("overlap_episodes", "overlap episodes", "", "split_brain"),
    Metric("overlap_s", "overlap duration", "s", "split_brain", abs_tolerance=_S),
    Metric("commits_non_owner", "commits from non-owners", "", "split_brain"),
    Metric("commits_stale_generation", "commits from stale generations", "", "split_brain"),
    Metric("commits_rejected", "commits rejected", "", "split_brain", compare=False),
    Metric("session_failures", "session failures of untargeted members", "", "health", compare=False),
]

METRICS: dict[str, Metric] = {m.name: m for m in TRIGGER_METRICS} | {
    f"unit.{m.name}": m for m in UNIT_METRICS
}

#: Broker APIs counted as group coordination (``broker_group_requests``).
GROUP_APIS = (
    "FindCoordinator",
    "JoinGroup",
    "SyncGroup",
    "Heartbeat",
    "LeaveGroup",
    "OffsetCommit",
    "OffsetFetch",
)

#: rebalance_end outcomes that are not failures.
OK_OUTCOMES = ("ok", "no_brokers", "shutdown")

#: Member event kinds that count as a reaction for detection (plus the broker's group_state).
REACTION_KINDS = ("rebalance_begin", "revoked", "watch")

#: Nemesis actions that change ownership state (change points), besides member events.
STATE_ACTIONS = ("crash", "pause", "cut", "resume", "heal", "add_partitions")


def metric(name: str) -> Metric:
    """The :class:`Metric` called ``name``; by-operation metrics (``zk_requests[getData]``) inherit
    from their family metric."""
    if name in METRICS:
        return METRICS[name]
    base = name.split("[", 1)[0]
    if base in METRICS:
        m = METRICS[base]
        return Metric(
            name, f"{m.label} {name[len(base) :]}", m.unit, m.family, m.censored, False, m.abs_tolerance
        )
    return Metric(name, name, "", "other", compare=False)


# The module docstring carries the definitions too (one source: DEFINITIONS).
__doc__ = (
    (__doc__ or "")
    + "\nDefinitions\n-----------\n"
    + "\n".join(f"* **{t}**: {d}" for t, d in DEFINITIONS)
    + "\n"
)
