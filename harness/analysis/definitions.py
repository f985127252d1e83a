"""What every metric means: the definitions the analysis implements and the reports print.

docs/concepts.md ("Definitions the analysis uses") fixes the ideas; this module fixes the details it leaves
open. :data:`DEFINITIONS` is the text the reports print; :data:`METRICS` names every metric with its
unit and how :mod:`harness.report.compare` treats it. Keep the two in step with
the modules of :mod:`harness.analysis` that compute them (one per family: latency, herd, steady,
split_brain, records, commits, health).
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
        "history contract",
        "Every event has ts_ns, source, role (member, broker, nemesis, producer, harness) and kind "
        "(harness.kernel.events). A member's identity is its source: the harness's name for it. "
        "Nemesis actions are pairs: `invoke` just before acting, `complete` once the action took "
        "effect (process stopped or killed, container paused, proxy cut, new member ready), or "
        "`skipped` with a reason.",
    ),
    (
        "live member",
        "From its first completed rebalance (rebalance_end ok) until it is stopped (its own `stopped`), "
        "killed or made to leave (`complete` of crash / leave / stop_member) or paused, stalled or cut "
        "(`complete` of pause / stall / cut); live again from the `complete` of its resume / unstall / "
        "heal. A stalled member processes nothing and reports the end of its ownership only when it "
        "polls again, so it does not count while stalled. A new process of a member (its `ready`) "
        "starts afresh. Consumer protocol (impl consumer): the same events, read the same way: a "
        "member's first completed rebalance is its first completed reconciliation, the first "
        "`assigned` callback after its `joined` (its first member epoch with an assignment applied, "
        "possibly empty), which writes its `rebalance_end` ok.",
    ),
    (
        "claim / owned once",
        "A member claims a partition from its `assigned` to its `revoked` event or its stop; only "
        "live members' claims count. The group is owned once when every partition 0..P-1 has "
        "exactly one live claimant and nothing >= P is claimed (P from unit_start, then "
        "add_partitions). A change point is an event that changes the live set, a live member's "
        "claims or P. Claims are read incrementally for every implementation: an eager member revokes "
        "everything and is then assigned its new set, while cooperative-sticky and the consumer "
        "protocol revoke and assign only what moves; one fold reads all of them, so settled means the "
        "same for the three designs.",
    ),
    (
        "trigger t0",
        "A nemesis `invoke` with `trigger` set (join, leave, crash, pause, stall, cut, expire, stop of a "
        "member, partition growth, broker restart). For a join, t0 is when the new process was "
        "ready to join (its `ready` event); the time from invoke to ready is reported as startup.",
    ),
    (
        "trigger window",
        "[t0, min(next trigger's t0, settling_end)). Nothing after the unit's `settling_end` marker "
        "(drain, teardown) belongs to any trigger; it is reported as the drain phase.",
    ),
    (
        "reaction",
        "In the window: a broker group_state or rebalance_begin, or a member's watch, "
        "rebalance_begin, revoked, assigned or rebalance_end, by a member that is not a target of "
        "the trigger (or by a target after its own restart was ready).",
    ),
    (
        "settled t1 and outcomes",
        "t1 is the first instant c at or after the first reaction (that reaction, or a later change "
        "point) at which the group is owned once, every member the trigger starts or restarts is "
        "live, no change point follows within the settle window, and c + window lies in the "
        "trigger window. Outcomes: settled; never (a reaction, but no such c); no_effect (no "
        "reaction in the window although one was due); skipped (the action does not apply to the "
        "implementation). Only settled has a latency. One definition (harness.kernel.windows) "
        "serves the checker, the runner's live waits and the benches.",
    ),
    (
        "compound window",
        "A rolling restart has one trigger per member: its stop. The restart is not a trigger; the "
        "window settles only once the restarted member is live again.",
    ),
    ("rebalance latency", "t1 - t0."),
    ("detection", "t0 to the first reaction."),
    (
        "resumed",
        "t0 to the time by which every partition 0..P-1 had a record processed at or after t1 "
        "(within the window). `never` if a partition got none.",
    ),
    (
        "consumption gap",
        "The longest time with no record processed on any partition, among the pauses that overlap "
        "[t0, resumed] (the stop-the-world gap of the change; to the window's end if it never resumed).",
    ),
    (
        "herd counts",
        "Exact counts of coordination traffic in the trigger window: watches (notifications "
        "delivered to members); zk_requests (members' ZooKeeper requests of the rebalance, also by "
        "operation; offset writes are steady state); zk_packets (server-side zk_packets_received "
        "from the mntr sample taken just before the invoke to the next window edge, pings "
        "included); broker_group_requests (one broker `group_request` event per FindCoordinator, "
        "JoinGroup, SyncGroup, LeaveGroup, OffsetFetch or Metadata request, also by API; a member's "
        "periodic metadata refresh in the window counts too, so members refresh at Kafka's "
        "metadata.max.age.ms of 5 minutes unless a scenario shortens it); "
        "ConsumerGroupHeartbeat, the consumer protocol's one request, is a `group_request` event per "
        "exchange and counts here (and by API) only when its `change` is true (the request joins or "
        "leaves or reports its owned partitions, or the response carries a new member epoch, an "
        "assignment or an error: harness.kernel.heartbeats.carries_change, which herdlab's broker and "
        "the Kafka tap both apply); an exchange whose change is false or absent is steady traffic (see "
        "steady heartbeats), never in a herd; "
        "coordination_requests = zk_requests + broker_group_requests; conflicts (NodeExists on an "
        "owner znode); in a unit run with the ZooKeeper tap (cluster.zookeeper_tap) watches, zk_requests "
        "and conflicts are the tap's, what the ZooKeeper server delivered and answered, for members of "
        "every client alike, and the members' own reports are not counted; failed_attempts (rebalance_end with an outcome other than ok / no_brokers / "
        "shutdown); gave_up (a member's last failed attempt: it stays registered with no partitions, "
        "the 0.8 ConsumerRebalanceFailedException); rebalance_attempts (member rebalance_begin); "
        "group_rebalances (broker "
        "rebalance_begin; consumer units: the broker's `target_assignment` events, one per group "
        "epoch it computed a target for, None behind the Kafka tap, which cannot see them). Skipped "
        "triggers have none.",
    ),
    (
        "rebalance rounds",
        "Per trigger window (coordinator and consumer units with broker reports). Classic protocol: the "
        "number of the leader's SyncGroup requests in the window (the broker's `group_request` events "
        "of SyncGroup that carry assignments; with a third-party broker, the tap's, role broker: "
        "counted on the wire, whatever the broker does with generation numbers). Eager rebalancing: 1 per change; "
        "cooperative-sticky: 2 when partitions move (the revoke round, then the assign round). "
        "Consumer units (no SyncGroup): the distinct new epochs members reached in the window: the "
        "distinct response `epoch` values of its ConsumerGroupHeartbeat exchanges with change true and "
        "no error that exceed the window's starting epoch (the highest response epoch of the unit's "
        "exchanges without error before t0; 0 without one). Read from the exchanges because "
        "herdlab's broker and the Kafka tap both write them; the broker's `target_assignment` events "
        "are not used (the tap has none), so a group epoch no member reached before the target moved "
        "on is not a round. A change whose partitions move after revocations is still 1: members reach the new epoch as they reconcile.",
    ),
    (
        "partitions that never stopped",
        "Per settled trigger window [t0, t1]: the partitions owned by a live member at t0 whose "
        "claim lasted past t1 (never revoked or lost, and the owner stayed live): their count "
        "(undisturbed_partitions), its fraction of the partitions owned at t0, and the longest "
        "processing gap of those partitions inside [t0, t1] (t0 and t1 count as edges). One "
        "definition for every implementation, from the members' incremental claims: legacy_zk and eager "
        "assignors revoke everything, so 0 by construction; cooperative-sticky and the consumer protocol "
        "keep the partitions they do not move (the consumer protocol's promise, measured here, not "
        "assumed).",
    ),
    (
        "steady-state traffic",
        "Per unit, from `stable` to `settling_end`, as a rate per second: the broker's requests of "
        "the other APIs (Heartbeat, OffsetCommit, Fetch, Produce ...) from its counter reports, and "
        "legacy members' offset writes to ZooKeeper. Never part of the herd.",
    ),
    (
        "steady heartbeats",
        "Consumer protocol: per unit, over the steady phase [stable, settling_end), the "
        "ConsumerGroupHeartbeat exchanges whose change is false or absent (see herd counts), counted from "
        "the broker's `group_request` events (herdlab's broker, or the Kafka tap in front of another), "
        "and their rate per member per second: that count over the phase's member-seconds (the sum over "
        "members of the time each was live in it, by the live member definition). Units without "
        "ConsumerGroupHeartbeat exchanges have none (not measured, never 0). Never part of the herd.",
    ),
    (
        "session failures",
        "Harness health, not a protocol metric: heartbeat errors and ZooKeeper SUSPENDED / LOST "
        "states of members that no nemesis action targeted, after the group first became stable "
        "(and, apart, before it: start-up starvation), until settling_end. Trouble inside the trigger "
        "window of a coordinator or ZooKeeper-leader fault is that fault's effect (its row of the "
        "coordinator failover table), not counted here.",
    ),
    (
        "processing interval",
        "A member's processing of a partition: a run of its records of it in which no two "
        "consecutive records lie further apart than the unit's processing gap bound "
        "(`processing_gap_s`). It ends at its last record, or at the close that follows it within "
        "the bound (the member's revocation of the partition, its stop, or the `complete` of a "
        "crash, leave, stop, pause, stall or cut of it); after a close the next record opens a new one. "
        "An isolated record is an interval of 0 s: silence is never processing. The bound is the "
        "scenario's `split_brain_gap`, else the larger of 10 intervals between two records of one "
        "partition (partitions / workload rate) and one fetch wait plus one poll window of the "
        "members' client (legacy_zk: 100 + 100 ms; coordinator members: the client's fetch wait, "
        "500 ms by default, + 200 ms).",
    ),
    (
        "overlap episodes (split brain)",
        "Per partition, maximal intervals in which processing intervals of two different members "
        "intersect (one record inside another member's interval counts, with duration 0). Reported "
        "as episodes and total seconds, attributed to the phase in which an episode starts: before "
        "the first trigger (startup), a trigger window, or the drain (after settling_end). Unit "
        "totals cover startup and the trigger windows. Each episode lists its members (those whose "
        "interval intersects it) with the records each processed inside it (count, first and last "
        "offset) and how many of those another member of the episode processed at any time "
        "(duplicates). The consumer protocol reads the same: a member that loses its coordinator (a "
        "coordinator pause or cut) keeps fetching and processing until it gives its partitions up "
        "(revoked or lost) or stops, while the broker may fence it after its session timeout and "
        "assign its partitions to others; whatever overlap that causes is measured from the records, "
        "not assumed.",
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
        "superseded is not the owner). Commits whose member id maps to no member count here too. The "
        "same for every implementation (consumer protocol included: ownership from the members' "
        "incremental claims).",
    ),
    (
        "commit from a stale generation",
        "An accepted commit carrying generation g >= 0 while the group's generation at t (the latest "
        "broker group_state generation, or the latest generation members were assigned in) was "
        "larger. Not applicable to legacy_zk (no generations): n/a. Consumer protocol (member epochs; "
        "OffsetCommit v9 carries the member epoch as the commit's generation): an accepted commit "
        "whose epoch g >= 0 is lower than its member's current epoch at t, the response epoch of that "
        "member's latest ConsumerGroupHeartbeat exchange without error at or before t (the member by "
        "its member id; herdlab's broker and the Kafka tap both write the exchanges). This reading "
        "applies to every commit whose member id had such an exchange before it; other commits keep "
        "the group-generation rule.",
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
        "end-to-end latency",
        "Per record (partition, offset) of a unit: its first processing minus its `produced` event "
        "(when the producer saw the acknowledgement); a record processed twice counts once, at its "
        "first processing; a record never processed (lost, not drained) or never acknowledged has "
        "none; below 0 counts as 0 (`clamped`). Kept in microseconds floored to 3 significant digits "
        "(under 1 % error). p50, p90, p99, p99.9: nearest rank (the smallest value whose cumulative "
        "count reaches ceil(q N)); max. Per unit, per trigger window and per 1 s bucket, each by the "
        "processing time. Consumer lag per bucket: records acknowledged before the bucket's end "
        "minus those of them processed before it. The buckets' histograms are written as "
        "HdrHistogram logs, hdr/<impl>-<case>-r<repetition>.hlog beside the report.",
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

#: The migration proof's terms (:mod:`harness.analysis.migration`), added to a document's
#: definitions when some unit switched its members between kinds.
MIGRATION_DEFINITIONS: list[tuple[str, str]] = [
    (
        "member kind",
        "legacy_zk (the ZooKeeper-era consumer) or coordinator (a kafka-python member of the broker's "
        "group coordinator): the `impl` a member wrote on its `ready` event, else the kind of the step "
        "that started it (`member_kind`), else the unit's implementation.",
    ),
    (
        "switch",
        "The nemesis steps of one migration action (same `migration_step`) labelled `switch` "
        "(legacy_zk members replaced by coordinator members of the same group) or `rollback` (the "
        "reverse). t_S: its first invoke. Mode: all_at_once (every old member stopped in one step, "
        "then the new ones started) or rolling (one member after the other: both kinds run at once, "
        "KIP-125's mixed group, each protocol ignoring the other).",
    ),
    (
        "taken over",
        "Per switch and partition: the first `assigned` of the partition to a member of the new kind "
        "after t_S. A partition no new member ever got is `not_taken_over`.",
    ),
    (
        "committed (ZooKeeper / Kafka)",
        "The last offset committed on the partition before it was taken over: in ZooKeeper, the last "
        "legacy member's `commit` with store zookeeper; in Kafka, the last commit the broker accepted "
        "(the broker's own `commit` events, or, without broker events, the members' commits with store "
        "kafka). A commit event without a store is ZooKeeper's for a legacy member, Kafka's for a "
        "coordinator member. committed = the larger of the two: where the group's progress was "
        "recorded last. An offset is the next record to consume.",
    ),
    (
        "resumed",
        "Per new owner of the partition after t_S (in time order): the first offset it processed "
        "after its first assignment of the partition; `resumed at` is the first owner's.",
    ),
    (
        "uncommitted window",
        "processed_last + 1 - committed, at least 0: the records an old-kind member processed "
        "(processed_last: the largest offset before the takeover) beyond the last commit. A new "
        "owner resuming at the committed offset reprocesses exactly these (at-least-once delivery); "
        "nothing committed: processed_last + 1; nothing processed: 0.",
    ),
    (
        "reprocessed",
        "Distinct offsets of the partition processed by a new-kind member from t_S on that an "
        "old-kind member processed too. Bounded by the uncommitted window when the offsets were "
        "carried across the switch; more means the new owners started before the committed offset "
        "(replay).",
    ),
    (
        "migration verdict",
        "Per partition: lost if a record of it was lost (the definition of lost), else overlap if a "
        "legacy and a coordinator member processed it at the same time (an overlap episode between "
        "members of different kinds; same-kind episodes are the unit's split brain), else "
        "not_taken_over, else replay if reprocessed > window, else clean. A switch's, a unit's and the "
        "run's verdict is the worst of theirs (lost > overlap > not_taken_over > replay > clean), "
        "compared with the scenario's expected one ([migration].expect).",
    ),
]


#: The failover figures' terms (:mod:`harness.analysis.failover_verdict` states them once), added to a
#: document's definitions when some unit had a coordinator or ZooKeeper-leader fault.
FAILOVER_DEFINITIONS: list[tuple[str, str]] = [
    (
        "coordinator fault",
        "kill_coordinator, pause_coordinator (a zombie) or cut_coordinator (cut from ZooKeeper) of the "
        "broker B that coordinated the group g (the leader of g's offsets partition p) when invoked; "
        "t0 is the action's `complete`. Ended by restart / resume / heal of B.",
    ),
    (
        "failover time and its parts",
        "detection: t0 to the first `broker_change` with B dead (the controller saw B's registration "
        "go); election: to the first `partition_state` of (__consumer_offsets, p) with a leader L other "
        "than B; loading: to L's `coordinator_load` end of p (CatchUp -> Ready); rejoin: to L's first "
        "`group_served` of g. failover = t0 to that group_served (the sum). A missing step reads "
        "`never`, the parts after it are empty, and so is the failover, unless nobody was elected and B "
        "itself served g again (it came back before the controller saw it gone): then the failover is "
        "the time to that `group_served`. Steps are looked for before the next fault's t0.",
    ),
    (
        "offsets lost",
        "Per partition, the last commit of g acknowledged before t0 (the broker's `commit` events, else "
        "coordinator members' commits with store kafka) against the group's `offsets_snapshot` read "
        "after the fault ended (OffsetFetch by the harness): a partition the snapshot returns lower, "
        "-1 or not at all is lost. Empty when no coordinator answered the snapshot.",
    ),
    (
        "records lost / reprocessed in a fault",
        "The unit's lost records (see lost) whose `produced` event lies in the fault's trigger window, "
        "and the window's duplicates (see duplicates).",
    ),
    (
        "deposed acceptances",
        "A broker `commit` or `produce_ack` carrying leader epoch e at a time when a `partition_state` "
        "of that partition with a leader epoch above e had already been written: acknowledged by a "
        "deposed leader or coordinator. Per kind, attributed to the last fault before it. Must be 0 "
        "with fencing.",
    ),
    (
        "double-coordinator time",
        "A broker acts as coordinator of p from its `coordinator_load` end of p until its unload of p "
        "or its kill, not while paused. Seconds during which two or more brokers act at once, and the "
        "episodes; per fault, the part from its t0 to the next fault's.",
    ),
    (
        "fenced refusals",
        "`fenced` events by what was refused (produce, commit, fetch, state, isr_write) and error: "
        "fencing at work, not a failure.",
    ),
    (
        "ZooKeeper-leader fault",
        "kill_zk_leader / pause_zk_leader. ZooKeeper election = its complete (a new leader serves) minus "
        "its invoke. Sessions lost: members whose ZooKeeper session expired (legacy_zk `zk_state` LOST) "
        "or brokers reported dead (`broker_change`) in the fault's trigger window; session rebalances: "
        "whether each such member's next rebalance began inside that window. Members' session trouble "
        "in a coordinator or ZooKeeper-leader fault's window is the fault's effect (its row), not a "
        "session failure of an untargeted member.",
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

_E2E_S = 0.005  # seconds of slack for end-to-end latencies (a poll interval of the members)

#: End-to-end latency (:mod:`harness.analysis.e2e`), per trigger window and per unit. p99.9 and max
#: are single records at the sizes of a run: shown, not compared.
E2E_METRICS: list[Metric] = [
    Metric("e2e_p50_s", "end-to-end latency p50", "s", "e2e", abs_tolerance=_E2E_S),
    Metric("e2e_p90_s", "end-to-end latency p90", "s", "e2e", abs_tolerance=_E2E_S),
    Metric("e2e_p99_s", "end-to-end latency p99", "s", "e2e", abs_tolerance=_E2E_S),
    Metric("e2e_p999_s", "end-to-end latency p99.9", "s", "e2e", compare=False),
    Metric("e2e_max_s", "end-to-end latency max", "s", "e2e", compare=False),
]

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
    Metric("gave_up", "rebalances given up", "", "herd"),
    Metric("rebalance_attempts", "member rebalance attempts", "", "herd"),
    Metric("group_rebalances", "broker group rebalances", "", "herd"),
    Metric("rebalance_rounds", "rebalance rounds", "", "herd"),
    Metric("undisturbed_partitions", "partitions that never stopped", "", "cooperative", compare=False),
    Metric(
        "undisturbed_fraction", "fraction of partitions that never stopped", "", "cooperative", compare=False
    ),
    Metric("undisturbed_gap_s", "longest gap of undisturbed partitions", "s", "cooperative", compare=False),
    Metric("overlap_episodes", "overlap episodes", "", "split_brain"),
    Metric("overlap_s", "overlap duration", "s", "split_brain", abs_tolerance=_S),
    Metric("duplicates", "duplicates", "", "split_brain"),
    Metric("commits_non_owner", "commits from non-owners", "", "split_brain"),
    Metric("commits_stale_generation", "commits from stale generations", "", "split_brain"),
    *E2E_METRICS,
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
    # consumer protocol: ConsumerGroupHeartbeat exchanges without a change per live member-second
    Metric("heartbeats_per_member_s", "steady heartbeats per member", "1/s", "steady", compare=False),
    Metric("session_failures", "session failures of untargeted members", "", "health", compare=False),
    # group formation: from unit_start to the first stable group (member boot, joins, the broker's
    # group.initial.rebalance.delay.ms, the legacy herd of the initial registrations); compared, with a
    # second of slack for process start-up noise
    Metric("startup_stable_s", "time to the first stable group", "s", "startup", abs_tolerance=1.0),
    *E2E_METRICS,
]

METRICS: dict[str, Metric] = {m.name: m for m in TRIGGER_METRICS} | {
    f"unit.{m.name}": m for m in UNIT_METRICS
}


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
