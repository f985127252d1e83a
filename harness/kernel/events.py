"""The history event contract: who writes which events, and what their fields mean, grouped by role.

Common fields
-------------
Every event is one flat JSON object (one line in a JSON-lines file while a run goes on, one row of
``history.parquet`` after it) with at least:

* ``ts_ns``: wall clock, ``time.time_ns()`` when the event happened (for a nemesis ``complete``: when
  the action was seen to have taken effect);
* ``source``: who wrote it (a member's harness name such as ``m3`` or ``j0``, ``broker-1``,
  ``producer``, ``nemesis``, ``harness``);
* ``role``: one of :data:`ROLES`; set by the writer (a process writes one role), so the analysis never
  guesses from source names;
* ``kind``: one of the kinds of :class:`Kind` (unknown kinds are kept and ignored by the checker).

Member (``role`` member)
------------------------
Kinds: the members' block of :class:`Kind`.

* every member writes ``impl`` (``legacy_zk`` | ``coordinator``, one of :data:`MEMBER_KINDS`) on its
  events, ``ready`` and ``started`` included: the kind of member, so one unit can hold members of both
  kinds (a ``consumer`` unit's members, on KIP-848's consumer group protocol, are of kind ``coordinator``;
  the harness's and nemesis's events carry the unit's implementation, ``consumer``); every coordinator member event carries ``library`` (its client library, one of
  :data:`CLIENTS`; not ``client``, which on broker events is the Kafka client id);
* a legacy member of Kafka 0.8.2.2's own consumer (``group.legacy_zk.client = "kafka-0.8.2.2"``, one of
  :data:`LEGACY_CLIENTS`) writes the legacy kinds with the same fields as herdlab's own, and ``client`` on its
  ``started`` (herdlab's own writes its kazoo ``handler`` there instead); it writes no ``zk_request``,
  ``watch``, ``offset_fetch`` or ``zk_retry`` (its ZooKeeper traffic is seen from outside);
* a member's ``commit`` carries ``store``: ``zookeeper`` or ``kafka`` (:data:`STORES`). A legacy member
  writes one ``commit`` per partition per accepted store write (kafka: the broker answered NONE for that
  partition of its OffsetCommit; zookeeper: the znode write succeeded), so a dual commit is two events; a
  coordinator member's commits are ``store="kafka"``. Older histories have no ``store``: read a missing
  store as ``zookeeper`` for a legacy member and ``kafka`` for a coordinator member
  (:func:`commit_store`);
* ``commit_rejected`` carries ``store`` too and, for kafka, ``error``: Kafka's error name,
  ``UNKNOWN(<code>)`` for a code the client does not know, or, for a shutdown commit given up because no
  offset manager answered, ``NO_OFFSET_MANAGER`` or the exception's class name (with ``reason`` saying
  after how many attempts). A coordinator member's ``commit_rejected`` carries ``partition``, ``offset``
  and ``code`` (the Kafka error code when the client gives one);
* ``offset_fetch`` (legacy member, one event per partition each time a rebalance attempt reads its
  start offsets): ``topic``, ``partition``, ``storage`` (the member's ``offsets.storage``), ``dual``
  (bool: ``dual.commit.enabled``), ``zookeeper_offset`` (int, -1 when there is no znode; null when
  ZooKeeper was not read), ``kafka_offset`` (int, -1 when the broker has none; null when not read),
  ``offset`` (the start offset the 0.8.2.2 fetch rule chose: ZooKeeper's, the broker's, or with dual
  commit the larger of both; -1 = none, ``auto.offset.reset`` applies), plus ``rebalance`` and
  ``attempt``;
* ``rebalance_end`` carries ``outcome`` (:data:`OK_OUTCOMES` are not failed attempts); ``zk_request``
  carries ``op``, ``path`` and possibly ``count`` (see :attr:`Kind.ZK_REQUEST`).

Broker (``role`` broker)
------------------------
Kinds: the brokers' blocks of :class:`Kind`.

* ``group_request``: one coordination request (``api``, one of :data:`COORDINATION_APIS`), with
  ``member`` and ``generation`` when the request has them (JoinGroup, SyncGroup, Heartbeat, LeaveGroup
  v0-2, OffsetCommit): the SyncGroup generations of a window are its rebalance rounds. A
  ``ConsumerGroupHeartbeat`` (KIP-848's consumer protocol) is one event per exchange, written once its answer is
  known: ``group``, ``member`` (the request's member id, or the one the answer gave a v0 member joining without
  one), ``member_epoch`` (the request's), ``epoch`` (the answer's member epoch), ``error`` (Kafka's error name,
  absent when NONE) and ``change`` (bool, :func:`harness.kernel.heartbeats.carries_change`): with
  ``change`` false it is steady traffic (a rate, never counted in a herd), with ``change`` true the change's own
  cost.
  ``broker_request``: counters of all requests over ``interval_s``. With a third-party broker
  (``cluster.broker = "tansu"``, one of :data:`BROKERS`) both come from the harness's Kafka tap in front
  of it (``source`` ``tap``, ``role`` broker, ``observed`` ``"tap"``): the same requests, counted on the
  wire;
* the broker's own ``commit`` events are the kafka store's truth.
* the consumer protocol's group machine (``impl`` ``consumer``): ``group_state`` (``group``, ``state``: Kafka's
  name ``Empty`` | ``Assigning`` | ``Reconciling`` | ``Stable`` | ``Dead``, ``epoch``: the group epoch),
  ``member_added`` / ``member_removed`` (``group``, ``member``, ``epoch``; a removal's ``reason``: ``leave`` |
  ``expired`` | ``fenced`` | ``rebalance_timeout`` | ``static_replaced``), ``target_assignment`` (``group``,
  ``epoch``: the group epoch whose target was computed, ``members``, ``partitions_moved``: partitions whose
  target owner changed), ``member_epoch`` (``group``, ``member``, ``epoch``, ``previous_epoch``, ``state``:
  ``stable`` | ``unrevoked_partitions`` | ``unreleased_partitions``) and ``commit`` / ``commit_rejected`` whose
  ``generation`` is the member epoch.
* the online migration between the group types (herdlab's broker in single-broker mode,
  ``--consumer-migration-policy``): ``group_converted`` (``impl`` ``consumer``): ``group``, ``from_type`` and
  ``to_type`` (``classic`` | ``consumer``), ``epoch`` (the consumer group's epoch: the classic generation it starts
  from on an upgrade, the group epoch it ends at on a downgrade), ``members`` (the classic members converted: on an
  upgrade those carried into the consumer group, on a downgrade those the classic group starts with), ``reason``.
  While a consumer group holds classic-protocol members the consumer machine writes their events too (``impl``
  ``consumer``; a classic member's removal by ``member_removed`` reasons ``join_timeout`` | ``sync_timeout`` beside
  the others).

With several brokers every broker event carries ``broker_id``, and:

* ``controller`` (the broker that won or lost ``/controller``): ``phase`` (``elected`` | ``resigned``),
  ``controller_epoch``;
* ``broker_change`` (the controller saw ``/brokers/ids`` change: the *detection* of a broker failure):
  ``live`` (ids), ``dead`` (ids gone since the last change), ``added`` (ids new), ``controller_epoch``;
* ``partition_state`` (the controller wrote a partition's state znode: an *election*): ``topic``,
  ``partition``, ``leader`` (-1: none), ``leader_epoch``, ``isr`` (ids), ``controller_epoch``,
  ``zk_version`` (after the write), ``reason`` (``new_partition`` | ``offline`` | ``broker_startup`` |
  ``controlled_shutdown`` | ``unclean``);
* ``leadership`` (a broker applied a partition state it learnt): ``topic``, ``partition``,
  ``replica_role`` (``leader`` | ``follower``; it was ``role`` in older histories, which overwrote the event's
  ``role``), ``leader``, ``leader_epoch``, ``controller_epoch``, ``isr``;
* ``isr_change`` (a leader's own conditional ISR write): ``topic``, ``partition``, ``isr``,
  ``leader_epoch``, ``zk_version`` (expected), ``ok`` (false: the write lost on its zkVersion, i.e. the
  leader was deposed: fenced);
* ``coordinator_load`` (the group coordinator of offsets partition ``offsets_partition``): ``phase``
  ``begin`` (elected leader of it: CatchUp, COORDINATOR_LOAD_IN_PROGRESS), ``end`` (Ready; with
  ``groups``, ``offsets`` loaded and ``duration_ms``) or ``unload`` (resigned: its groups are gone,
  parked requests answered NOT_COORDINATOR, its timers stopped); plus ``leader_epoch``;
* ``group_served`` (once per group per load: the first request of ``group`` this coordinator answered
  without error after its load ``end``): ``group``, ``offsets_partition``, ``api``, ``generation``;
* ``produce_ack`` (a leader acknowledged a produce for one partition): ``topic``, ``partition``,
  ``base_offset``, ``count`` (records), ``acks`` (the request's), ``leader_epoch``;
* ``fenced`` (a request or write refused because its sender or this broker is stale): ``what``
  (``produce`` | ``commit`` | ``fetch`` | ``state`` | ``isr_write``), ``error`` (Kafka's error name, e.g.
  ``NOT_LEADER_OR_FOLLOWER``, ``NOT_COORDINATOR``, ``STALE_CONTROLLER_EPOCH``, ``FENCED_LEADER_EPOCH``,
  ``NOT_ENOUGH_REPLICAS``, ``REQUEST_TIMED_OUT``), and where known ``topic``, ``partition``, ``group``;
* the broker's own ``commit`` gains ``offsets_partition`` and ``leader_epoch`` (the coordinator's epoch
  of that partition when it accepted the commit; -1 without replication), and is written only once the
  commit's append was acknowledged (``offsets.commit.required.acks``); the broker's ``commit_rejected`` carries
  the same two fields (its ``error`` is the answer the client got, e.g. NOT_COORDINATOR for a deposed
  coordinator's commit, whose append error is in the matching ``fenced`` event).

Nemesis (``role`` nemesis)
--------------------------
Nemesis actions are pairs (docs/concepts.md): ``invoke`` just before acting, then ``complete`` once the
action took effect (process stopped or killed, container paused, proxy cut, member ready), or
``skipped`` with a ``reason`` when the action does not apply to this implementation. The pair
shares ``action_id`` (a number unique within the unit) and carries ``action`` (one of :data:`ACTIONS`,
from the registry :mod:`harness.kernel.actions`), ``targets``, ``target`` (what a cut separates a member
from), ``value`` and ``trigger`` (whether the analysis measures a trigger window from it). A
``complete`` of a ``join`` / ``start_member`` also carries ``ready_ns`` per target: when the new process
was ready to join (its ``ready`` event).

* ``invoke`` / ``complete`` / ``skipped`` of planned steps carry, when set: ``member_kind``
  (``legacy_zk`` | ``coordinator``: the kind of the members a ``join`` / ``start_member`` starts; null
  = the unit's implementation), ``props`` (object: 0.8 property name -> string value, set on the
  started legacy members on top of the scenario's), ``migration`` (``set_property`` | ``switch`` |
  ``rollback``, one of :data:`MIGRATION_ACTIONS`: the timeline action the step belongs to) and
  ``migration_step`` (1-based index of that action among the unit's migration actions). The action names
  stay ``stop_member`` / ``start_member``, so trigger windows and live members apply unchanged.
* Coordinator-side actions (``kill_coordinator``, ``pause_coordinator``, ``cut_coordinator``: cut
  from ZooKeeper; ended by ``restart_coordinator``, ``resume_coordinator``, ``heal_coordinator``) resolve
  their target when invoked: ``invoke`` / ``complete`` carry ``broker_id`` (the broker that coordinated
  ``group`` then) and ``offsets_partition``; ``targets`` stays empty (no member is hit). They are
  triggers for the coordinator implementation (and the consumer one) and ``skipped`` for legacy_zk (whose
  counterpart is the ZooKeeper leader's fault). A ``skipped`` pair carries ``group`` and ``offsets_partition`` too
  (``broker_id`` null: no target was resolved), and the ``complete`` of a ``restart_coordinator``
  carries ``rejoined_s`` (seconds from the start until the broker served again).
* A degraded-network step (``latency``, ``bandwidth``, ``reset_peer``, ``slow_close``, ``timeout``,
  ``limit_data``: a trigger; ``remove_toxic``: its end) carries ``toxic`` (object: ``kind``, ``stream``
  and the toxic's attributes in toxiproxy's names and units) besides ``targets`` / ``target`` as a cut
  does; its ``complete`` is written once the toxic is on every target's proxy.
* ``restart_zk`` (a trigger) carries ``server`` (0-based index) and ``value`` (the downtime); its
  ``complete``, once the server serves again, ``restarted_s`` (stop to serving). ``cut_broker_zk`` (a
  trigger) and ``heal_broker_zk`` carry ``broker_id``.
* ``stall`` (a trigger; coordinator members only, ``skipped`` for legacy_zk) and ``unstall`` (its end)
  carry ``targets`` and, the stall, ``value`` (its duration); each ``complete`` is written once the
  signal was sent to every target (:mod:`harness.kernel.actions`, "A stall": a stalled member is not live
  until the unstall completes).
* A run with a ``[[nemesis]] kind = "random"`` schedule writes the drawn actions into ``manifest.json``
  (``drawn_timeline``); their steps are ordinary steps.

ZooKeeper (``role`` zookeeper)
------------------------------
What the ZooKeeper server saw of the members' sessions, written by the ZooKeeper tap in front of it
(:mod:`harness.cluster.zk_tap`, scenario setting ``cluster.zookeeper_tap``): ``source`` ``zk-tap``,
``observed`` ``"tap"``. ``session`` is the session id as ``0x``-hex; ``member`` the consumer id that
registered on that session (the first create of ``/consumers/<g>/ids/<id>`` on it answered OK, that create
included), null before that.

* ``zk_request`` (one per client request answered, stamped when the answer passed the tap): ``op`` in the
  Python member's vocabulary (``create``, ``delete``, ``exists``, ``get``, ``set``, ``get_children``,
  ``multi``, ``sync``, ``set_watches``; any other op ``op<code>``; pings, the handshake and closeSession are
  session traffic, not requests), ``path`` (a multi's: its first sub-op's; null for ``set_watches``),
  ``err`` (the Java client's ``KeeperException`` name: ``NodeExists``, ``NoNode``, ``BadVersion``,
  ``NotEmpty``, ``SessionExpired``, ... null when OK; a multi's: its failing sub-op's), ``session``,
  ``member``, ``xid``, and for a multi ``subops`` (``[op, path]`` pairs);
* ``watch`` (one per notification delivered to a client): ``path``, ``type`` (kazoo's ``EventType`` name:
  ``CREATED``, ``DELETED``, ``CHANGED``, ``CHILD``), ``session``, ``member``;
* ``conflict`` (a create of an owner znode ``/consumers/<g>/owners/<topic>/<partition>`` answered
  NodeExists, beside its ``zk_request``; a topic's directory above them is not one): ``path``, ``session``,
  ``member``. A member (0.8.2.2's ``createEphemeralPathExpectConflict``) does not count a NodeExists whose
  stored owner is itself (its own create answered before a connection loss); the tap cannot tell;
* ``zk_session``: ``phase`` (``connect``: the server accepted a handshake, a new session or a resumed one,
  ``reconnect`` true for the latter; ``expired``: it refused a reconnect, the session being gone;
  ``close``: it answered a closeSession), ``session``, ``password`` (hex, connect only), ``timeout_ms`` (the
  negotiated session timeout; 0 for expired, null for close), ``member``.

Producer (``role`` producer)
----------------------------
``produced`` (acknowledged by the broker): ``topic``, ``partition``, ``offset``, ``seq``;
``produce_error`` (a send failed): ``topic``, ``partition``, ``seq``, ``error`` (the exception's repr).

Harness (``role`` harness)
--------------------------
The unit's phases (``unit_start``, ``stable``, ``settling_end``, ``drained``; see :class:`Kind`),
ZooKeeper's counters (``zk_mntr``, ``label`` names the moment), and:

* ``offsets_snapshot`` (what the group's coordinator returns now, read with OffsetFetch by the
  harness with client id ``herdlab-harness`` after each coordinator fault settled and at the unit's end):
  ``group``, ``label`` (``after:<action_id>`` or ``end``), ``broker_id`` (the coordinator that answered),
  ``offsets`` (object ``"<topic>/<partition>"`` -> committed offset, -1 for none), ``error`` (null, or the
  error name when no coordinator answered).

This module is pure data: it imports nothing of ours, so the systems under test may use it.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from harness.kernel import actions


class Role(StrEnum):
    """Who writes an event (the ``role`` column)."""

    MEMBER = "member"
    BROKER = "broker"
    NEMESIS = "nemesis"
    PRODUCER = "producer"
    HARNESS = "harness"
    ZOOKEEPER = "zookeeper"  # the ZooKeeper tap: what the ZooKeeper server saw


ROLES = tuple(r.value for r in Role)


class Kind(StrEnum):
    """The event vocabulary (the ``kind`` column), grouped by the role that writes it."""

    # members (both implementations)
    READY = "ready"  # the process booted and is about to connect: t0 of a join
    STARTED = "started"  # connected (client constructed / ZooKeeper session open)
    REGISTERED = "registered"  # legacy_zk: ids znode created (carries session credentials)
    REBALANCE_BEGIN = "rebalance_begin"
    REBALANCE_END = "rebalance_end"  # ``outcome``: see OK_OUTCOMES
    ASSIGNED = "assigned"  # one event per partition
    REVOKED = "revoked"  # one event per partition
    RECORD = "record"  # one processed record: partition, offset
    COMMIT = "commit"  # an accepted offset commit (member side; broker side for the coordinator)
    COMMIT_REJECTED = "commit_rejected"
    OFFSET_FETCH = "offset_fetch"  # legacy_zk: start offsets read by an attempt (one per partition)
    WATCH = "watch"  # legacy_zk: one watch notification delivered
    # legacy_zk: one ZooKeeper request (op, path); ``count`` (int, default 1) when one event stands for that
    # many requests of ``op`` (the simulator aggregates a member's requests of one op on one path class
    # within one attempt; ``path`` is then the class, ``*`` for the varying last segment, e.g.
    # ``/consumers/g/ids/*``). Real members never write ``count``.
    ZK_REQUEST = "zk_request"
    ZK_STATE = "zk_state"  # legacy_zk: connection state change
    CONFLICT = "conflict"  # legacy_zk: NodeExists on an owner znode
    ZK_RETRY = "zk_retry"  # legacy_zk: a request reissued after a connection loss (retryUntilConnected)
    TAKEOVER_REREAD = "takeover_reread"  # legacy_zk: the takeover delay re-read the group
    HEARTBEAT_ERROR = "heartbeat_error"  # coordinator member: a heartbeat failed
    STOPPED = "stopped"
    # broker
    GROUP_STATE = "group_state"  # a group changed state (from_state, to_state, generation)
    GROUP_REQUEST = "group_request"  # one coordination request (api), counted exactly per window
    MEMBER_ADDED = "member_added"  # a group machine added a member (group, member)
    MEMBER_REMOVED = "member_removed"  # a group machine removed a member (group, member, reason)
    TARGET_ASSIGNMENT = "target_assignment"  # consumer protocol: a new target assignment (group, epoch)
    MEMBER_EPOCH = "member_epoch"  # consumer protocol: a member moved to another epoch or state
    GROUP_CONVERTED = "group_converted"  # online migration: a group changed type (group, from_type, to_type)
    BROKER_REQUEST = "broker_request"  # counters of all requests over interval_s (steady-state rates)
    # broker (replication, controller, coordinator failover; fields in the module docstring)
    CONTROLLER = "controller"
    BROKER_CHANGE = "broker_change"
    PARTITION_STATE = "partition_state"
    LEADERSHIP = "leadership"
    ISR_CHANGE = "isr_change"
    COORDINATOR_LOAD = "coordinator_load"
    GROUP_SERVED = "group_served"
    PRODUCE_ACK = "produce_ack"
    FENCED = "fenced"
    # producer
    PRODUCED = "produced"  # acknowledged by the broker: partition, offset, seq
    PRODUCE_ERROR = "produce_error"
    # nemesis
    INVOKE = "invoke"
    COMPLETE = "complete"
    SKIPPED = "skipped"
    # harness
    UNIT_START = "unit_start"
    STABLE = "stable"  # the group first became stable: the timeline's origin
    SETTLING_END = "settling_end"  # end of the settling phase: nothing later belongs to a trigger
    DRAINED = "drained"  # end of the drain phase (``complete``: every produced record processed)
    ZK_MNTR = "zk_mntr"  # ZooKeeper's mntr counters (``label`` names the moment)
    OFFSETS_SNAPSHOT = "offsets_snapshot"  # what the group's coordinator returns (OffsetFetch)
    # zookeeper (the ZooKeeper tap; it also writes zk_request, watch and conflict)
    ZK_SESSION = "zk_session"  # a session's lifecycle on the wire (phase connect | expired | close)


# --- member ---------------------------------------------------------------------------------------------

#: ``rebalance_end`` outcomes that are not failed attempts (one definition: the analysis, the runner
#: and the benches use this).
OK_OUTCOMES = ("ok", "no_brokers", "shutdown")


def failed_attempt(kind: str | None, outcome: str | None) -> bool:
    """A member's rebalance attempt that failed: a ``rebalance_end`` whose outcome is not OK."""
    return kind == Kind.REBALANCE_END and outcome is not None and outcome not in OK_OUTCOMES


#: Offset stores of a ``commit`` / ``commit_rejected`` (``store``), and the member kinds (``impl``).
STORES = ("zookeeper", "kafka")
MEMBER_KINDS = ("legacy_zk", "coordinator")
#: The client libraries of coordinator members (the ``client`` field) and the brokers (``cluster.broker``).
CLIENTS = ("kafka-python", "librdkafka", "aiokafka", "java", "kafka-go", "franz-go")
#: The clients of legacy_zk members other than herdlab's own (``group.legacy_zk.client`` "python"): Kafka
#: 0.8.2.2's own ZooKeeper consumer, whose members write ``client`` on their ``started``.
LEGACY_CLIENTS = ("kafka-0.8.2.2",)
BROKERS = ("herdlab", "tansu", "apache-kafka", "external")


def commit_store(store: str | None, impl: str | None) -> str:
    """The store of a member's ``commit``: its ``store``, or for older histories by the member's kind."""
    if store:
        return store
    return "kafka" if impl == "coordinator" else "zookeeper"


#: A legacy member's ZooKeeper request is steady-state traffic, not the rebalance's, when it is an
#: offset commit: a write (these ops) under an offsets path, as OffsetCommit is on the broker side.
#: Offset reads stay coordination traffic, as OffsetFetch does.
ZK_STEADY_OPS = ("set", "create", "multi")
ZK_STEADY_PATH = "/offsets/"


def zk_steady(op: str | None, path: str | None) -> bool:
    """Whether a ``zk_request`` (op, path) is steady-state traffic (see :data:`ZK_STEADY_OPS`)."""
    return bool(path) and ZK_STEADY_PATH in str(path) and op in ZK_STEADY_OPS


def zk_counter(roles: Iterable[str | None]) -> Role:
    """Whose ``zk_request``, ``watch`` and ``conflict`` events a unit's ZooKeeper figures count, given the roles
    of its events: the ZooKeeper tap's (role ``zookeeper``) when the unit ran with one, so that members of
    every client (herdlab's Python member, the original 0.8.2.2 consumer, which reports none) are counted
    on the wire alike; otherwise the members' own."""
    return Role.ZOOKEEPER if Role.ZOOKEEPER in set(roles) else Role.MEMBER


# --- broker ---------------------------------------------------------------------------------------------

#: Broker APIs that are coordination traffic (the herd); the broker writes one ``group_request``
#: event per request of these. Everything else (Heartbeat, OffsetCommit, Fetch, Produce, ...) is
#: steady-state traffic, reported as a rate from ``broker_request`` counters. ConsumerGroupHeartbeat is both:
#: each exchange is one ``group_request`` event whose ``change`` says which (see the broker section above).
COORDINATION_APIS = (
    "FindCoordinator",
    "JoinGroup",
    "SyncGroup",
    "LeaveGroup",
    "OffsetFetch",
    "Metadata",
    "ConsumerGroupHeartbeat",
)
#: Kafka client ids of the workload and the harness: their requests (the producer's metadata
#: refreshes, the harness's admin calls) are not the group's coordination traffic.
WORKLOAD_CLIENTS = ("herdlab-producer", "herdlab-harness")


# --- nemesis --------------------------------------------------------------------------------------------

#: Nemesis actions (``action`` of invoke / complete / skipped) and their groups: the registry
#: :mod:`harness.kernel.actions` (membership and topic changes are triggers; resume / heal end a fault).
ACTIONS = actions.ACTIONS
COORDINATOR_FAULT_ACTIONS = actions.COORDINATOR_FAULT_ACTIONS
COORDINATOR_END_ACTIONS = actions.COORDINATOR_END_ACTIONS
#: What a step's ``complete`` does to its targets (the registry's ``effect`` of each action): they
#: join (t0 is the new process's ``ready``), go down (not live), or are suspended (not live) until the
#: step that ends the fault completes.
JOIN_ACTIONS = actions.JOIN_ACTIONS
DOWN_ACTIONS = actions.DOWN_ACTIONS
SUSPEND_ACTIONS = actions.SUSPEND_ACTIONS
UNSUSPEND_ACTIONS = actions.UNSUSPEND_ACTIONS
#: Timeline actions of a migration (the ``migration`` field of nemesis events).
MIGRATION_ACTIONS = actions.MIGRATION_ACTIONS

#: Trigger outcomes (docs/concepts.md): never a latency of 0 for anything but ``settled``.
SETTLED, NEVER, NO_EFFECT, SKIPPED = "settled", "never", "no_effect", "skipped"
OUTCOMES = (SETTLED, NEVER, NO_EFFECT, SKIPPED)
