# pyright: strict
"""The simulator's stated model of delays: what a simulated run assumes about the network and the
processes, written into the run's manifest and printed in its report.

Contract
--------
:class:`DelayModel` is frozen and complete: every delay the simulator applies comes from one of its
fields (never a constant elsewhere), so ``describe()`` is the whole model. Times are seconds of
virtual time. ``seed`` seeds the only random source (:meth:`DelayModel.rng`); with ``jitter`` 0 a
simulation is fully deterministic. The legacy fields model a kazoo client against one ZooKeeper
server; the coordinator fields a kafka-python client against one broker. Defaults are calibrated on
this machine's real runs (the simulator validation records how; see the closing notes of issue 16):
``client_cores`` and ``member_start_spread_s`` on a 10-member herd-small run; ``zk_connect_s`` on the
joiners of two validation runs on 29 Nov;
``watch_wake_spread_s`` (25 ms) on the herd scenario's joins at 10, 50 and 100 members, three real
repetitions on a quiet machine, with the fetcher's poll (``fetch_poll_s``) modelled (the real
watch-to-attempt delays at 10 members were 7 to 22 ms in that run); ``zk_client_s`` (1.0 ms) on the joins
of two later validation runs pooled, made in different hours (26 Nov evening, 27 Nov morning: ``herdlab
bench simulator validate --members 10,50,100 --impl legacy_zk,coordinator --real RUN1 --real RUN2``;
simulated 0.229 / 1.808 / 6.037 s against real 0.167-0.361 / 1.680-2.338 / 4.253-6.946 s), where the
0.75 ms fitted on the quiet run (real joins 0.168-0.192 / 1.318-1.452 / 3.436-4.976 s) fell short of
both: this machine's speed differs between hours by about a third; ``kafka_sync_client_s`` (9 ms) and
``kafka_assign_per_member_s`` (since split, ``kafka_assign_per_member_per_core_s``) on the coordinator's
rounds of the same two runs; the drawn boot, step and heartbeat lateness from their measured real values (each field says how).
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, fields

from harness.members.release import POLL_S as RELEASE_POLL_S
from legacy_zk.fetcher import POLL_MS

__all__ = ["DelayModel"]


@dataclass(frozen=True)
class DelayModel:
    """Delays of a simulated run (seconds of virtual time)."""

    #: One-way network delay on loopback, each direction of every request and notification.
    network_one_way_s: float = 0.00005
    #: ZooKeeper server: service time per request; the server serves requests one at a time (a queue).
    zk_service_s: float = 0.00012
    #: ZooKeeper's ``tickTime`` (the runner's local cluster runs 200 ms): the server expires sessions in
    #: buckets of a tick, at the first tick boundary after the last it heard plus the session timeout
    #: (``ExpiryQueue.roundToNextInterval``); the boundaries' phase is drawn once per unit.
    zk_tick_s: float = 0.2
    #: A legacy member's client-side cost per ZooKeeper request (kazoo, Python), before it is sent
    #: (calibrated on the joins: the module contract).
    zk_client_s: float = 0.001
    #: A legacy member's cost to receive one watch notification and hand it to its listener.
    zk_watch_client_s: float = 0.0005
    #: A legacy member's rebalance thread reacts to a watch after a delay drawn uniformly from
    #: [0, ``watch_wake_spread_s``] (thread wake-up and scheduling of many processes on few cores: 3 to
    #: 65 ms between a watch and the attempt's begin at 10 members on this machine's 2 cores in one run,
    #: 7 to 22 ms in another). 0 = at once (with ``fetch_poll_s`` 0 too, every member in lockstep: every
    #: release precedes every claim, no conflicts).
    watch_wake_spread_s: float = 0.025
    #: A legacy member's fetcher polls kafka-python this long at a time (``legacy_zk.fetcher.POLL_MS``):
    #: stopping it for a rebalance waits until the poll in progress returns (the next multiple of this
    #: after the fetcher went idle, or its partitions' next record). 0 = stops at once (lockstep releases).
    fetch_poll_s: float = POLL_MS / 1000
    #: A legacy member's cost to open its ZooKeeper session (kazoo's start: threads, handshake), before
    #: the connect request's round trip (on the shared client cores). Real runs on this machine's 2 cores
    #: (29 Nov, the two validation runs): a joining member's ``ready`` to ``started`` (kazoo's ``start``
    #: returned) took 7.3-14.0 ms at 10 members (median 8.5); 75 ms, fitted on a 10-member start-up on 28
    #: Nov's machine, put every simulated joiner's registration 77 ms after its ``ready`` and the simulated
    #: 10-member join (0.231 s) above the real range (0.129-0.196 s). At 50 and 100 members the real
    #: joiner's start took 13-71 ms, slowed by the running members' steady work (fetches, records,
    #: pings), which the model does not put on the cores.
    zk_connect_s: float = 0.008
    #: The initial members' processes become ready at times drawn uniformly over this interval, each from
    #: the unit's random source (a real run starts them at once; each boot takes a time of its own, so the
    #: group's first generation, and the heartbeat, poll and ping phases every later step meets, differ
    #: between repetitions; spread evenly in start order, every simulated repetition met the same phases).
    #: 0 = all at the same instant.
    member_start_spread_s: float = 1.0
    #: The producer starts at a time drawn uniformly over this interval, from the unit's random source.
    #: The real producer is a process of its own whose start varies by seconds between repetitions and has
    #: nothing to do with the runner's polls, so where a partition's records fall against a step (a leaving
    #: member's poll returns on its partition's next record) differs between repetitions (real 50-member
    #: leaves: 21-248 ms into the producer's 250 ms round of the partitions); started with the unit, 9 of
    #: 10 simulated repetitions' ``stable`` (on the runner's poll grid) met the records at much the same
    #: phase (127-223 ms into the round). A spread of a round (``partitions / rate``: 250 ms at 50
    #: partitions and 200 records/s) or more makes the phase uniform. 0 = at the unit's start.
    producer_start_spread_s: float = 1.0
    #: A member a ``join`` adds is started with the initial members and held, as the real runner does for
    #: local member processes (not with ``--members-in-containers``)
    #: (:meth:`harness.run.rig.UnitRig.prestart_member`; :mod:`harness.members.release`): the join's step
    #: releases it and it is ready after a time drawn uniformly over ``[0, member_release_poll_s]``, the
    #: held process looking for its release file every :data:`harness.members.release.POLL_S` (real
    #: joins on 2 cores, both implementations at 10 to 100 members, 28 Nov: invoke to ready 0-24 ms,
    #: median 9 ms, in 18 joins). 0 = ready at the invoke.
    member_release_poll_s: float = RELEASE_POLL_S
    #: A member a ``start_member`` step starts (a rolling restart's, a migration's: the real runner starts
    #: its process at the step) becomes ready after its process boots
    #: (interpreter, imports, clients; the real runner's ``invoke`` to the member's ``ready``), a time
    #: drawn per member from a gamma distribution of mean ``member_boot_s`` plus
    #: ``member_boot_per_member_s`` times the live members per client core (the boot competes with their
    #: work; 1 with ``client_cores`` 0) and coefficient of variation ``member_boot_cv``. It moves every
    #: member's heartbeat, poll and ping phases after the step by a random amount, as in a real run, where
    #: the phases met by the following steps differ between repetitions by up to a whole heartbeat
    #: interval. Real 10 / 50 / 100-member herd runs on this machine's 2 cores: 0.37-0.77 / 0.72-1.97 /
    #: 1.18-3.73 s (means 0.55 / 1.18 / 2.18 s, cv 0.3-0.4; both implementations, 18 joins). Like the
    #: other per-member-per-core fields it is calibrated at 10 to 100 members on 2 cores: at 10^3 members
    #: on 2 cores a boot would take 18 s; size runs use ``client_cores`` 0. 0 and 0 = ready at once.
    member_boot_s: float = 0.33
    #: ... (above)
    member_boot_per_member_s: float = 0.036
    #: ... (above; 0: exactly the mean).
    member_boot_cv: float = 0.4
    #: Cores the members' client-side work (``zk_client_s``, ``zk_watch_client_s``, ``zk_connect_s``,
    #: ``member_apply_s``; the coordinator members' ``kafka_*_client_s`` and assignment) shares (a real
    #: run's members share this machine's cores; in which order: ``zk_client_random_order``). 0 =
    #: unlimited: every member has a core of its own.
    client_cores: int = 2
    #: How the client cores serve the legacy members' work when one frees: 1 = a waiting member drawn
    #: at random, 0 = first come first served (the coordinator members' work is always served first come
    #: first served). A legacy member's rebalance is a chain of small requests (``zk_client_s`` each, 10^4
    #: per trigger at 100 members), and served first come first served the members go round the cores
    #: in lockstep: at 50 members every gap between a member's consecutive requests in an attempt was 25
    #: ms (50 members x 1 ms / 2 cores), so every member released before any member claimed and no
    #: conflict happened. The real members' gaps spread (the kernel does not serve runnable processes in
    #: the order they woke): median 11-15 ms, 90th percentile 34-40 ms, 99th 99-124 ms at 50 members
    #: (10 members: 1.4-3.5 / 12-14 / 54-57 ms) in the validation run of 28 Nov 02:00 UTC; drawn at
    #: random, 16 / 54 / 108 ms (10 members: 2.0-2.6 / 6-7 / 37-40 ms), against 25 / 25 / 50 ms (3.0-3.2 /
    #: 4.2-4.9 / 41 ms) first come first served.
    zk_client_random_order: int = 1
    #: In random order, how unevenly the client cores share out among the legacy members' requests: each
    #: member draws a share (lognormal, median 1, this sigma) when a watch wakes it to rebalance (kept
    #: through that wake's attempts), and a core that frees serves a waiting request with the probability
    #: of its share among the waiting ones' shares (0 = equal shares). Real members go at uneven paces
    #: in one attempt (per-member mean gap between registration reads at 50 members, min / 10th / 50th / 90th percentile / max: 0.6-23 / 7-27 /
    #: 17-30 / 22-39 / 23-45 ms in the two validation runs of 28 Nov 02:00 and 02:45 UTC): the fastest
    #: claim 250-500 ms after the first releases while the slowest still release 400-900 ms after them,
    #: and the 50-member leaves and crashes conflict. With equal shares every member went at one pace
    #: (17.6-20.5 ms; the first claim 700-1000 ms after the last release): none of 20 simulated
    #: 50-member leaves and crashes conflicted, against 4 of the 12 real ones. Triggers with a conflict, real
    #: against simulated (20 each) at 10 / 50 / 100 members: 9 / 4 / 0 of 12 real; sigma 0.5: 8 / 1 /
    #: 0, 0.6: 13 / 5 / 0, 0.65: 11 / 9 / 0, 0.8: 14 / 11 / 8 of 20. On 29 Nov's machine (two
    #: validation runs, six real repetitions of each leave and crash): 9 / 5 / 2 of 12 real triggers
    #: conflicted, with up to 2 / 4 / 2 conflicts in one; 0.6 (the fit above, with ``zk_connect_s`` 75
    #: ms) made 108 / 27 / 11 of 200 simulated (at most 3 / 2 / 2 in one, the 2 at 100 members in a leave:
    #: none made the 50-member leave's 4, the 50-member crash's 3 or a 100-member crash's 2), 0.8 made 31 /
    #: 25 / 26 of 60 (52 / 42 / 43 %, against real 75 / 42 / 17 %; 44 % of all real triggers, 46 % of the
    #: simulated), up to 4 / 3 / 4 in one (more than the real 2 at 10 and 100 members), and the 50-member
    #: leave's 4 in 100 repetitions. A share drawn per wake is a model of the outcome, not of the
    #: kernel's scheduler (which gave one member 50 reads in 43 ms in a real crash, two at once on the
    #: two cores).
    zk_client_share_sigma: float = 0.8
    #: The broker: service time per group request (JoinGroup, SyncGroup, Heartbeat, ...).
    broker_service_s: float = 0.0001
    #: The broker's work to send one parked answer when a request or a timer completes a phase (a
    #: round's JoinGroup answers at CompletingRebalance, its SyncGroup answers at the leader's
    #: SyncGroup): herdlab's broker converts every answer in the completing call, then each parked
    #: connection's task wakes, encodes and writes its answer, all in one turn of its one asyncio loop,
    #: before it reads the next request; so the answers leave one after another and a request that
    #: arrives meanwhile is served after the last. This plus ``broker_response_per_member_s`` times the
    #: answers sent together per client core (the members they wake take the cores from the broker),
    #: per answer. Real 100 / 50 / 10-member rounds on 2 cores (29 Nov's two validation runs): the first
    #: SyncGroup reaches the broker 46-68 / 16-22 / 1-2 ms after CompletingRebalance, whatever the
    #: member's own work. 0 = answers leave at once (the model until 29 Nov 10:30 UTC) ...
    broker_response_s: float = 0.0
    #: ... (above).
    broker_response_per_member_s: float = 0.0
    #: A coordinator member's client-side cost per request (kafka-python, Python).
    kafka_client_s: float = 0.0005
    #: A coordinator member's client work once its SyncGroup is answered (kafka-python handling the
    #: answer, decoding the assignment, the listener's callbacks), on the shared client cores; its
    #: heartbeat timer restarts when that is done. Real runs on 2 cores (the validation runs of 28 Nov):
    #: the last member is assigned 1-17 ms after the last SyncGroup reached the broker, 4-9 ms after
    #: it at 10 members, so this is small: most of a round's work comes before the SyncGroup
    #: (``kafka_join_answer_s``). With 9 ms here and none before (the model until 28 Nov) a 10-member
    #: crash ended 46 ms after its last SyncGroup and its latency fell above the real range ...
    kafka_sync_client_s: float = 0.002
    #: ... and the first generation's: its syncs end spread over 13-21 / 466-563 / 819-974 ms at 10 / 50
    #: / 100 members (the first assignment's work as well: about 18 ms a member in all, of which
    #: ``kafka_join_answer_*`` booked 1.5 / 5.5 / 10.5 ms before the SyncGroup then, 1.0 / 3.0 / 5.5 ms
    #: since 29 Nov). This field is the first sync's cost.
    kafka_first_sync_client_s: float = 0.011
    #: How the shared client cores order a SyncGroup answer's work (``kafka_*sync_client_s``) against
    #: the join-answer work waiting for a core: 0 = first come first served, 1 = served first (nothing
    #: running is preempted; Linux's scheduler places a thread woken from a long sleep ahead of the
    #: threads waiting for a core). Real 100-member leaves on 29 Nov's machine (two validation runs): a
    #: member assigned a median 16 / 74 ms after its SyncGroup reached the broker, SyncGroups a median
    #: 79-81 ms after CompletingRebalance. Simulated (100 repetitions): 0 gives 201 ms and 180 ms, 1 gives
    #: 6 ms and 223 ms (the join-answer work waits longer), and with 1 the validation's coordinator rows
    #: equal in counts fall from 7 to 6 of 9 and the 100-member leave's latency leaves the real range
    #: (1.417 s against 1.258-1.380). Neither is the machine: the real one does the round's join-answer
    #: work sooner than the model. Kept at 0.
    kafka_sync_answer_priority: int = 0
    #: A coordinator member's work on its JoinGroup answer before its SyncGroup leaves (kafka-python's IO
    #: thread woken by the answer, decoding it, building the SyncGroup), on the shared client cores: this
    #: plus ``kafka_join_answer_per_member_s`` times the group's live members per client core. The broker
    #: answers a round's JoinGroups at once, so the members' SyncGroups leave spread by this work.
    #: Real runs on 2 cores (the two validation runs of 28 Nov): a round's SyncGroups reach the broker
    #: spread over a median of 9 / 200 / 450 ms at 10 / 50 / 100 members, and the last member is
    #: assigned 1-17 ms after the last SyncGroup (so most of a member's work on a round is here, not
    #: after the SyncGroup's answer); 0.5 ms + 0.2 ms a member per core spread them over 7.5 / 137 / 525
    #: ms and put every coordinator latency of the validation inside the real range (9 of 9, against 7
    #: of 9 with the work after the SyncGroup's answer; 0.7 + 0.15 ms: 8 of 9, the 100-member join just
    #: below). On 29 Nov's machine (two validation runs) a 100-member round's SyncGroups reached the broker
    #: 46-279 ms after CompletingRebalance, against 11-580 ms simulated with 0.2 ms: 0.1 ms a member per
    #: core since (with ``kafka_rejoin_late_*``, which puts the rest of a round's time where those runs
    #: spent it: simulated 6-317 ms). 0 = none ...
    kafka_join_answer_s: float = 0.0005
    #: ... (above).
    kafka_join_answer_per_member_s: float = 0.0001
    #: The group leader's work on its JoinGroup answer, per member in it (kafka-python decoding every
    #: member's subscription, running the assignor, encoding the assignments), on the shared client cores
    #: before its SyncGroup leaves: this plus ``kafka_assign_per_member_per_core_s`` times the live members
    #: per client core, per member in the answer. This field is the work itself: kafka-python 3.0.12's
    #: range assignor with the decoding and encoding takes 16-20 µs a member on 29 Nov's machine at 100,
    #: 1,000 and 10,000 members (timed alone) ...
    kafka_assign_per_member_s: float = 0.00002
    #: ... and this the rest, a fit: the leader's wait for a core, which grows with the members sharing
    #: one. Real runs on 2 cores, the broker's CompletingRebalance to Stable (the leader's SyncGroup):
    #: about 5 / 30-46 / 57-123 ms at 10 / 50 / 100 members (two validation runs of 28 Nov). 0.0156 ms
    #: keeps the 100-member figure of the flat 0.8 ms a member the model had until 29 Nov 08:00 UTC (80
    #: ms; now 1.0 / 20.5 / 80 ms at 10 / 50 / 100, against 8 / 40 / 80), whose 8 s at 10^4 members on
    #: cores of their own outlasted the 6 s session: the leader was expelled in every round and the group
    #: never settled; now 0.36 s. Validation (100 simulated repetitions a row): with 0.02 ms the
    #: 100-member leave fell below the real range (1.245 s against 1.258-1.380), with 0.0156 ms inside.
    kafka_assign_per_member_per_core_s: float = 0.0000156
    #: A coordinator member's main thread between two polls while a join is in flight (kafka-python
    #: returning from ``poll``, herdlab's member loop, entering ``poll`` again): a join that completes
    #: meanwhile is found done by the next poll and a new JoinGroup is sent (kafka-python 3.0.12
    #: ``join_group_async``). The gap is the woken thread's wait for a core, so its mean grows with the
    #: members sharing a core: this field times the group's live members per client core (members /
    #: ``client_cores``; 1 with ``client_cores`` 0). Not queued on the client cores (booked behind the
    #: SyncGroup answers' work, constant gaps of 5 / 10 ms made 0-2 / 29 extra joins at 50 / 100 members).
    #: Real runs on 2 cores, two quiet-machine validation runs: a second JoinGroup and SyncGroup of the
    #: same generation after 0-6 of the 50 members' SyncGroup answers per trigger and 1-23 of the 100
    #: members' (a mean of about 3 at 50 and 13 at 100 in the later run: growing as N², so the chance
    #: per member grows as N); 0.48 ms (12 ms at 50 members, 24 ms at 100, 2.4 ms at 10) gives both.
    #: Calibrated at 10 to 100 members on 2 cores: far beyond (10^4 members on 2 cores: 2.4 s, twelve poll
    #: windows) it describes no machine a real run could have; size runs use ``client_cores`` 0.
    #: 0 = never. This is the gaps' mean ...
    kafka_poll_gap_per_member_s: float = 0.00048
    #: ... and their coefficient of variation (also of the heartbeats' lateness, below: both are a woken
    #: thread's wait): each gap is drawn from a gamma distribution with that mean
    #: and shape 1 / cv² (1 = exponential: a woken thread's wait for a core on a loaded machine; 0 = every
    #: gap exactly the mean), from the unit's random source, so repetitions of different seeds differ as
    #: the real repetitions do.
    kafka_poll_gap_cv: float = 1.0
    #: kafka-python 3.0.12 sends a heartbeat ``heartbeat.interval.ms`` after the last one was *sent*
    #: (``heartbeat.py`` ``time_to_next_heartbeat``), from a coroutine on its IO thread, which wakes late
    #: (its selector's timeout, the GIL, a core): each heartbeat is sent late by a time drawn from a gamma
    #: distribution of mean ``kafka_heartbeat_late_s`` plus ``kafka_heartbeat_late_per_member_s`` times the
    #: live members per client core (1 with ``client_cores`` 0), coefficient of variation
    #: ``kafka_poll_gap_cv``, so the members' heartbeat phases drift, each its own way. Real runs on 2
    #: cores (the expired member's last heartbeat, ``member_removed`` less the session timeout, against its
    #: last rebalance's end): 40-51 / 47-88 / 130-185 ms over 37-39 heartbeats at 10 / 50 / 100 members,
    #: about 1.2 / 1.8 / 4.2 ms a heartbeat. 0 and 0 = exactly on time ...
    kafka_heartbeat_late_s: float = 0.0009
    #: ... (above)
    kafka_heartbeat_late_per_member_s: float = 0.000067
    #: The main thread's check of the heartbeat's flags at a heartbeat's deadline. kafka-python 3.0.12's
    #: ``KafkaConsumer._poll_once`` caps its wait at ``time_to_next_poll`` (auto-commit off: the time to the
    #: next heartbeat), so the main thread wakes at each heartbeat's deadline and checks ``need_rejoin`` in
    #: ``coordinator.poll()``, racing the IO thread that sends that heartbeat: it sees a REBALANCE_IN_PROGRESS
    #: answer there only when its check comes after the answer. Each check is late by a time drawn from a
    #: gamma distribution of mean ``kafka_main_check_late_s`` plus ``kafka_main_check_late_per_member_s``
    #: times the live members per client core, coefficient of variation ``kafka_poll_gap_cv``: by default the
    #: IO thread's lateness (``kafka_heartbeat_late_*``), both threads woken at one deadline on the same
    #: cores. Seen in kafka-python's debug log (29 Nov, herdlab's broker, four and five members on a quiet
    #: machine): the main thread checked 0.9-4.5 ms after the heartbeat's send, after the answer in 4 of 5.
    #: In the real 10-member leaves of the two validation runs of 29 Nov 00:00-01:03 UTC, 22 of the 54
    #: members with a partition began their rejoin 1.4-14.5 ms after their heartbeat's answer with no record
    #: in between (the others on their partition's next record, 0-50 ms later; median 10-11 ms after the
    #: answer): simulated, a median of 12.5 ms (27.9 ms when only a poll window's end or a record woke the
    #: main thread: the model until 29 Nov). 0 and 0: the check comes before the answer ...
    kafka_main_check_late_s: float = 0.0009
    #: ... (above)
    kafka_main_check_late_per_member_s: float = 0.000067
    #: A join found done by the next poll (the join task ended, done or failed, while the main thread was
    #: between two polls, or after its window's timeout was due and before the IO thread ran it): the new
    #: JoinGroup leaves when the IO thread runs the next poll's ``join_group_async``, late by a time drawn
    #: from a gamma distribution (coefficient of variation ``kafka_rejoin_late_cv``) of mean this plus
    #: ``kafka_rejoin_late_per_member_s`` times the live members per client core. Real runs on 29 Nov's
    #: machine (two validation runs): the repeated JoinGroup reached the broker a median 73-86 ms after
    #: its SyncGroup's answer at 50 members and 162-222 ms at 100, never sooner than 19-46 / 72-119 ms,
    #: against 1-3 ms simulated without this; kafka-python's debug log of 50 real members against
    #: herdlab's broker (a leave) showed the mechanism: one member's SyncGroup answered 12 ms after its
    #: window's timeout was due, the window ended 4 ms after the answer (the IO thread ran the due timeout
    #: late), and the IO thread began the next poll's join 20 ms after the main thread entered that poll.
    #: The mean is a fit, not that one observation: 2.5 ms a member per core (62 / 125 ms at 50 / 100
    #: members on 2 cores) puts the coordinator latencies of the validation inside the real range (9 of
    #: 9, 100 simulated repetitions; 2 ms: the 100-member leave below it, 3 ms: above; both with the
    #: model before the failed task and the moved window below). Calibrated at 10 to 100 members on 2
    #: cores: at 10^4 members on 2 cores its mean would be 12.5 s (size runs use ``client_cores`` 0:
    #: 2.5 ms). A join task that failed between two polls is replaced the same way (kafka-python tests
    #: ``is_done``, not success), and the next window starts at the late pickup (kafka-python's window
    #: timer runs on the IO thread). 0 and 0: at the next poll's start.
    kafka_rejoin_late_s: float = 0.0
    #: ... (above)
    kafka_rejoin_late_per_member_s: float = 0.0025
    #: ... (above) and its coefficient of variation (gamma shape 1 / cv²; 0: exactly the mean). With 1
    #: (exponential, as the heartbeats' lateness) the simulated repeats of single-round triggers came a
    #: median 58 / 116 ms after their SyncGroup's answer at 50 / 100 members, 10 % sooner than 18 / 32 ms
    #: (real: medians 74-86 / 162-222, 10 % sooner than 59-61 / 134-145). 0.4 gives 74 / 141 ms (41 / 83
    #: ms), and with a mean of 3 ms a member per core 84 / 166 ms (51 / 100 ms): closer, but with either
    #: the 100-member leave's simulated latency falls below the real range (1.177 and 1.194 s against
    #: 1.258-1.380; 1.356 with 1) and the coordinator rows with equal counts are 7 and 5 of 9 (7 with 1).
    #: The repeats' spread is not the only thing that sets when a round's last member is assigned (see
    #: ``kafka_sync_answer_priority``), so 1 stays until that is modelled too.
    kafka_rejoin_late_cv: float = 1.0
    #: A clean stop's time from the listener's revoke to the LeaveGroup's send: kafka-python 3.0.12's
    #: ``ConsumerCoordinator.close`` runs the revoke (``_on_close_prepare_async``) on its IO thread, then
    #: closes the heartbeat coroutine and hands ``maybe_leave_group`` to the IO thread again: thread
    #: hand-offs (the GIL, a core), not work on the shared cores. Drawn per stop from a gamma distribution
    #: of mean ``kafka_close_leave_s`` and coefficient of variation ``kafka_close_leave_cv``. Real leaves on 2
    #: cores (the leaving member's ``revoked`` to the broker's LeaveGroup, 28 Nov, 15 leaves at 10 / 50 / 100
    #: members): 7.6-46.4 ms, mean 21 ms, standard deviation 11 ms, with no trend in the group's size. 0 =
    #: at once.
    kafka_close_leave_s: float = 0.021
    #: ... (above)
    kafka_close_leave_cv: float = 0.5
    #: A member's cost to apply an assignment (revoke/assign callbacks, fetcher restart).
    member_apply_s: float = 0.001
    #: The runner performs a step late (its process, woken on a loaded machine, tails the history, then
    #: spawns or signals): each step's ``invoke`` is at ``stable + at`` plus a time drawn from a gamma
    #: distribution of mean ``runner_step_late_s`` plus ``runner_step_late_per_member_s`` times the live
    #: members per client core (1 with ``client_cores`` 0) and coefficient of variation
    #: ``runner_step_late_cv``. Real herd runs on 2 cores, two validation runs (54 steps at each size): 16
    #: (8-40) / 52 (14-192) / 95 (14-736) ms at 10 / 50 / 100 members. With the heartbeats' drift it
    #: sets where in the members' heartbeat and poll cycles a step falls, which differs between real
    #: repetitions (a leave met a heartbeat 35 ms later in one, 440 ms in the next). 0 and 0 = on time ...
    runner_step_late_s: float = 0.007
    #: ... (above)
    runner_step_late_per_member_s: float = 0.00176
    #: ... (above; 0: exactly the mean).
    runner_step_late_cv: float = 0.8
    #: Relative jitter applied to every delay: uniform in [1 - jitter, 1 + jitter]. 0 = deterministic.
    jitter: float = 0.0
    #: Seed of the only random source.
    seed: int = 0

    def rng(self) -> random.Random:
        """A fresh random source from ``seed`` (one per simulated unit, so units are independent)."""
        return random.Random(self.seed)

    def per_core(self, members: int) -> float:
        """Members per client core, the load the per-member-per-core fields scale with (``*_per_member_s``):
        ``members / client_cores``, 1 with ``client_cores`` 0 (every member a core of its own)."""
        return members / self.client_cores if self.client_cores > 0 else 1.0

    def as_dict(self) -> dict[str, float | int]:
        """Every field, for the manifest and ``metrics.json``."""
        return asdict(self)

    def describe(self) -> str:
        """The model in one line, for the report (every field, with its unit)."""
        parts = [f"{f.name}={getattr(self, f.name)}" for f in fields(self)]
        return "virtual time; delays in seconds: " + ", ".join(parts)
