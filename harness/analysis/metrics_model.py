# pyright: strict
"""The metrics document's model (``herdlab-metrics/2``): typed dicts of its parts, from which the published
JSON Schema is generated.

Contract
--------
Each part of ``metrics.json`` that scripts may rely on is a :class:`~typing_extensions.TypedDict` here:
:class:`MetricsDocument` (the whole, with its :class:`Verdict`), :class:`RunHeader`, :class:`Spark`,
:class:`Case`, :class:`MetricInfo`, :class:`Series`, :class:`Unit` with its :class:`Trigger` s and
:class:`Overlap` s, :class:`Aggregate`, :class:`Migration`, the failover summary (:class:`FailoverImpl`),
:class:`Coordinators`. :class:`Unit` and :class:`Trigger` declare every key the analysis writes, grouped
by the function that writes them (:class:`UnitRecords`, :class:`UnitSplitBrain`, :class:`UnitHealth`,
:class:`TriggerWindow`, :class:`TriggerHerd`, :class:`TriggerUndisturbed`, :class:`SplitBrain`,
:class:`E2EFlat`), with their sub-objects (:class:`E2E`, :class:`StartUp`, :class:`Steady`,
:class:`UnitFailover`, :class:`UnitMigration`). A key declared here is in the schema, with its JSON type;
a required key (not ``NotRequired``) is a required property. Required are only the keys every document of
this format has carried (a unit's ``case``, ``impl``, ``repetition``; a trigger's ``index``, ``key``,
``action``, ``outcome``; ...): the keys the analysis added since, and the ones it writes only in some
parts (a unit's ``failover`` and ``migration``, a zookeeper fault's ``sessions_lost``, ...), are
``NotRequired`` (the group bases are ``total=False``), so a document written by an earlier analysis of
the same format still validates; a key present must have its declared type, ``| None`` where the
analysis writes null. The document's sections, units and triggers
are open (``extra_items=Any``): later formats of the same major version may add keys, so a script must
ignore keys it does not know; in code such a key reads as ``Any``. The sub-objects are not open: a key
they gain is declared here first. A key typed ``Any`` is required but constrains nothing.
:class:`DocumentDraft` is the document before its verdict is in (:mod:`harness.analysis.document`);
:class:`DocumentSections` what both have.

Schema keywords beyond the types (a pattern, a minimum, a description) ride on ``Annotated`` as
:class:`Json`; the parts the schema names under ``$defs`` are :data:`DEFS`, with their own keywords. The
generator is :func:`harness.analysis.metrics_schema.schema_from_model`; a test checks that the shipped
file is its output. (No ``from __future__ import annotations`` here: a typed dict reads its required keys
from its annotations when the class is made.)
"""

from typing import Annotated, Any, Literal, NotRequired

from typing_extensions import TypedDict

__all__ = [
    "DEFS",
    "E2E",
    "Aggregate",
    "BrokerConfig",
    "Case",
    "CoordinatorRow",
    "CoordinatorVs",
    "Coordinators",
    "Count",
    "DeposedAcceptances",
    "DocumentDraft",
    "DocumentSections",
    "DoubleCoordinator",
    "E2EFlat",
    "FailoverAction",
    "FailoverFault",
    "FailoverImpl",
    "FaultSeconds",
    "Json",
    "MetricInfo",
    "MetricsDocument",
    "Migration",
    "MigrationPartition",
    "MigrationSwitch",
    "Overlap",
    "OverlapMember",
    "ResumedAt",
    "RunHeader",
    "Series",
    "SessionRebalances",
    "Simulation",
    "Spark",
    "SplitBrain",
    "StartUp",
    "Steady",
    "Trigger",
    "TriggerHerd",
    "TriggerUndisturbed",
    "TriggerWindow",
    "Unit",
    "UnitFailover",
    "UnitHealth",
    "UnitSteady",
    "UnitMigration",
    "UnitRecords",
    "UnitSplitBrain",
    "Verdict",
    "VerdictCompleteness",
]


class Json:
    """JSON Schema keywords added to the schema generated for the annotated type."""

    def __init__(self, **keywords: Any) -> None:
        self.keywords: dict[str, Any] = keywords


class Def:
    """Marks an alias as one of the schema's ``$defs`` (by this name), referred to with ``$ref``."""

    def __init__(self, name: str) -> None:
        self.name = name


#: A count: a non-negative integer, null when it was not measured.
Count = Annotated[int | None, Json(minimum=0), Def("count")]
_PAIR = Json(minItems=2, maxItems=2)


class Simulation(TypedDict, extra_items=Any):
    """The run header's mark of a simulated run."""

    simulated: Literal[True]


class RunHeader(TypedDict, extra_items=Any):
    """``run``: the run's header, from its manifest."""

    run_id: str | None
    scenario: str | None
    description: NotRequired[str | None]
    settle_window_s: NotRequired[float | None]
    repetitions: NotRequired[Annotated[int | None, Json(minimum=0)]]
    implementations: NotRequired[list[str] | None]
    backend: NotRequired[str | None]
    started: NotRequired[str | float | None]
    finished: NotRequired[str | float | None]
    interrupted: NotRequired[bool | None]
    git_commit: NotRequired[str | None]
    history_rows: NotRequired[Annotated[int | None, Json(minimum=0)]]
    run_dir: NotRequired[str | None]
    simulation: NotRequired[Simulation]


class MetricInfo(TypedDict, extra_items=Any):
    """``metric_info[name]``: how a metric is shown and read."""

    label: str
    unit: str
    family: str
    censored: bool


class Series(TypedDict, extra_items=Any):
    """``series``: the plots' data."""

    rate: list[Any]
    gaps: list[Any]
    timelines: list[Any]


class VerdictCompleteness(TypedDict, extra_items=Any):
    """One row of ``verdict.completeness``: an implementation's units and how many failed."""

    impl: Any
    units: Any
    failed: Any


class Verdict(TypedDict, extra_items=Any):
    """``verdict``: the run's verdict (rules in :mod:`harness.analysis.verdict`)."""

    valid: Literal[True, False, "unknown"]
    reasons: list[Annotated[str, Json(pattern="^[^\\n]+$")]]
    line: Annotated[str, Json(pattern="^(VALID|INVALID|UNKNOWN): ")]
    ratios: NotRequired[list[dict[str, Any]]]
    completeness: NotRequired[list[VerdictCompleteness]]
    method: NotRequired[str]


class SplitBrain(TypedDict, total=False):
    """A phase's split-brain figures (:func:`harness.analysis.split_brain.split_brain`): a unit's ``startup``
    and ``drain``, and part of each trigger."""

    overlap_episodes: Annotated[int, Json(minimum=0)]
    overlap_s: Annotated[float, Json(minimum=0)]
    duplicates: Annotated[int, Json(minimum=0)]
    commits_non_owner: Annotated[int, Json(minimum=0)]
    commits_stale_generation: Annotated[
        int | None, Json(minimum=0, description="null when no accepted commit carried a generation")
    ]


class E2E(TypedDict):
    """``e2e`` of a unit or a trigger (:func:`harness.analysis.e2e.e2e_fields`): end-to-end latency of the
    records processed, quantiles null when none was."""

    count: Annotated[int, Json(minimum=0)]
    p50_s: float | None
    p90_s: float | None
    p99_s: float | None
    p999_s: float | None
    max_s: float | None
    clamped: Annotated[int, Json(minimum=0)]


class E2EFlat(TypedDict, total=False):
    """The flat copies of an :class:`E2E` entry's quantiles (the aggregates' metrics)."""

    e2e_p50_s: float | None
    e2e_p90_s: float | None
    e2e_p99_s: float | None
    e2e_p999_s: float | None
    e2e_max_s: float | None


class TriggerWindow(TypedDict, total=False):
    """A trigger's window and its latency parts (:func:`harness.analysis.latency.window_fields`); times
    (``*_s`` but durations) in seconds since the unit's origin, durations null when not settled."""

    targets: list[Any]
    reason: str | None
    settled: bool
    invoke_s: float | None
    t0_s: float | None
    t1_s: float | None
    window_end_s: float | None
    startup_s: float | None
    latency_s: Annotated[float | None, Json(minimum=0)]
    detection_s: float | None
    convergence_s: float | None
    reaction_s: float | None
    resumed_s: float | None
    gap_s: float | None
    gap: Annotated[list[float | None] | None, _PAIR]


class TriggerHerd(TypedDict, total=False):
    """A trigger's herd counts (:func:`harness.analysis.herd.herd_fields`): null where not measured."""

    watches: Count
    zk_requests: Count
    zk_packets: Count
    zk_packets_minus_idle: int | None
    broker_group_requests: Count
    coordination_requests: Count
    conflicts: Count
    failed_attempts: Count
    gave_up: Count
    rebalance_attempts: Count
    group_rebalances: Count
    rebalance_rounds: Count
    zk_requests_by_op: dict[str, int]
    broker_requests_by_api: dict[str, int]
    owner_writes: Count
    registration_reads: Count
    rebalancing_members: Count
    first_notification_s: float | None
    members_at_invoke: Count
    partitions_at_invoke: Count


class TriggerUndisturbed(TypedDict, total=False):
    """A trigger's undisturbed partitions (:func:`harness.analysis.cooperative.cooperative_fields`): null
    when not settled."""

    undisturbed_partitions: Count
    undisturbed_fraction: float | None
    undisturbed_gap_s: float | None


class Trigger(TriggerWindow, TriggerHerd, SplitBrain, TriggerUndisturbed, E2EFlat, extra_items=Any):
    """One trigger of a unit (``units[].triggers[]``): its window, herd counts, split-brain figures,
    undisturbed partitions and end-to-end latency."""

    index: Annotated[int, Json(minimum=0)]
    key: str
    action: str
    outcome: Literal["settled", "never", "no_effect", "skipped"]
    e2e: NotRequired[E2E]


class OverlapMember(TypedDict, extra_items=Any):
    """One member's part of an overlap episode."""

    member: str
    records: Annotated[int, Json(minimum=0)]
    offsets: Annotated[list[int] | None, _PAIR]
    duplicates: Annotated[int, Json(minimum=0)]


class Overlap(TypedDict, extra_items=Any):
    """One overlap episode of a unit (``units[].overlaps[]``)."""

    p: Annotated[int, Json(minimum=0)]
    tid: Annotated[int, Json(minimum=-2)]
    start_s: float
    end_s: float
    duration_s: Annotated[float, Json(minimum=0)]
    members: list[OverlapMember]


class BrokerConfig(TypedDict, extra_items=Any):
    """``units[].broker_config``: what the unit's broker ran with."""

    broker: str
    version: NotRequired[str]
    properties: NotRequired[dict[str, str]]


#: Seconds of a failover part, or ``"never"`` when it never happened within the fault's window.
FaultSeconds = Annotated[
    float | str | None, Json(description='seconds, or "never" when it did not happen within the window')
]


class DeposedAcceptances(TypedDict):
    """Requests a deposed leader or coordinator acknowledged, per kind."""

    commit: Annotated[int, Json(minimum=0)]
    produce: Annotated[int, Json(minimum=0)]


class DoubleCoordinator(TypedDict):
    """Time during which two brokers acted as the group's coordinator, and in how many episodes."""

    seconds: Annotated[float, Json(minimum=0)]
    episodes: Annotated[int, Json(minimum=0)]


class SessionRebalances(TypedDict):
    """Members that lost their ZooKeeper session, by whether their rebalance began in the fault's window."""

    in_window: Annotated[int, Json(minimum=0)]
    after_window: Annotated[int, Json(minimum=0)]


class FailoverFault(TypedDict):
    """One fault of ``units[].failover.faults`` (:mod:`harness.analysis.failover_verdict`): a coordinator
    fault (``kind`` coordinator: its broker, offsets partition and failover parts) or a ZooKeeper-leader
    fault (``kind`` zookeeper: its election and lost sessions)."""

    action: str
    action_id: int
    kind: Literal["coordinator", "zookeeper"]
    t0_s: float | None
    broker_id: NotRequired[int | None]
    offsets_partition: NotRequired[int | None]
    group: NotRequired[str | None]
    detection_s: NotRequired[FaultSeconds]
    election_s: NotRequired[FaultSeconds]
    loading_s: NotRequired[FaultSeconds]
    rejoin_s: NotRequired[FaultSeconds]
    failover_s: NotRequired[FaultSeconds]
    new_coordinator: NotRequired[int | None]
    offsets_lost: NotRequired[Count]
    offsets_lost_partitions: NotRequired[list[str]]
    offsets_snapshot: NotRequired[str | None]
    offsets_note: NotRequired[str | None]
    zk_election_s: NotRequired[FaultSeconds]
    sessions_lost: NotRequired[list[str]]
    session_rebalances: NotRequired[SessionRebalances]
    records_lost: Count
    reprocessed: Count
    deposed_acceptances: DeposedAcceptances
    double_coordinator_s: Annotated[float, Json(minimum=0)]
    session_failures: Annotated[int, Json(minimum=0)]


class UnitFailover(TypedDict):
    """``units[].failover``: a unit's failover faults (:func:`harness.analysis.failover.failover_units`)."""

    faults: list[FailoverFault]
    double_coordinator: DoubleCoordinator
    fenced: Annotated[dict[str, int], Json(description='"<what>/<error>" -> requests fenced')]
    deposed_acceptances: DeposedAcceptances


class FailoverAction(TypedDict):
    """``failover[impl].faults[action]``: an implementation's faults of one action, summed."""

    n: Annotated[int, Json(minimum=0)]
    never: Annotated[int, Json(minimum=0)]
    failover_s: list[float]
    zk_election_s: list[float]
    offsets_lost: Annotated[int, Json(minimum=0)]
    deposed_acceptances: DeposedAcceptances
    double_coordinator_s: Annotated[float, Json(minimum=0)]


class FailoverImpl(TypedDict):
    """``failover[impl]``: an implementation's failover faults over its units
    (:func:`harness.analysis.failover_verdict.summary`)."""

    faults: dict[str, FailoverAction]
    fenced: dict[str, int]
    double_coordinator: DoubleCoordinator


class ResumedAt(TypedDict):
    """A new owner of a partition after a switch and the first offset it processed there."""

    member: str
    offset: int | None


class MigrationPartition(TypedDict):
    """One partition of a migration switch (:func:`harness.analysis.migration_verdict.partition_entry`)."""

    topic: str | None
    partition: Annotated[int, Json(minimum=0)]
    taken_over_s: float | None
    zookeeper_committed: int | None
    kafka_committed: int | None
    committed: int | None
    processed_last: int | None
    resumed: list[ResumedAt]
    resumed_at: int | None
    window: Annotated[int, Json(minimum=0)]
    reprocessed: Annotated[int, Json(minimum=0)]
    lost: Annotated[int, Json(minimum=0)]
    overlap_episodes: Annotated[int, Json(minimum=0)]
    overlap_s: Annotated[float, Json(minimum=0)]
    verdict: str


#: One switch of ``units[].migration.switches`` (functional form: ``from`` is a keyword).
MigrationSwitch = TypedDict(
    "MigrationSwitch",
    {
        "step": int,
        "action": str,
        "mode": str | None,
        "from": str,
        "to": str,
        "t_s": float | None,
        "partitions": list[MigrationPartition],
        "verdict": str,
    },
)


class UnitMigration(TypedDict):
    """``units[].migration``: a unit's migration switches and the worst verdict
    (:func:`harness.analysis.migration.migration_units`)."""

    switches: list[MigrationSwitch]
    verdict: str


class StartUp(TypedDict):
    """``units[].start_up``: the members' start-up (:func:`harness.analysis.startup.start_up_field`)."""

    members_ready: Annotated[int, Json(minimum=0)]
    first_ready_s: float
    all_ready_s: float
    stable_s: float | None


class Steady(TypedDict):
    """``units[].steady``: steady-state request rates (:func:`harness.analysis.steady.steady_fields`)."""

    window_s: Annotated[float, Json(minimum=0)]
    zk_commits_per_s: float | None
    broker_per_s: Annotated[dict[str, float], Json(description="requests per second by Kafka API")]
    heartbeats: NotRequired[
        Annotated[
            int,
            Json(
                minimum=0,
                description="ConsumerGroupHeartbeat exchanges without a change in the window (consumer units)",
            ),
        ]
    ]
    heartbeats_per_member_s: NotRequired[
        Annotated[
            float | None,
            Json(
                minimum=0, description="steady heartbeats per member-second of live members (consumer units)"
            ),
        ]
    ]


class UnitRecords(TypedDict, total=False):
    """A unit's completeness and duplicates (:func:`harness.analysis.records.records_fields`)."""

    produced: Count
    processed: Count
    lost: Count
    lost_sample: list[list[int]]
    not_drained: Count
    processed_not_produced: Count
    produce_errors: Count
    duplicates: Count
    duplicate_deliveries: Count
    duplicates_cross_member: Count


class UnitSplitBrain(TypedDict, total=False):
    """A unit's split brain: totals over its start-up and trigger windows
    (:func:`harness.analysis.split_brain.unit_totals`), the drain apart, its episodes, rejected commits."""

    overlap_episodes: Count
    overlap_s: Annotated[float | None, Json(minimum=0)]
    commits_non_owner: Annotated[int, Json(minimum=0)]
    commits_stale_generation: Annotated[
        int | None, Json(minimum=0, description="null when no accepted commit carried a generation")
    ]
    commits_rejected: Annotated[int, Json(minimum=0)]
    startup: SplitBrain
    drain: SplitBrain
    overlaps: list[Overlap]


class UnitSteady(TypedDict, total=False):
    """A unit's flat steady heartbeat rate (:func:`harness.analysis.steady.steady_fields`), consumer units only."""

    heartbeats_per_member_s: Annotated[float | None, Json(minimum=0)]


class UnitHealth(TypedDict, total=False):
    """A unit's session failures and start-up (:func:`harness.analysis.health.health_fields`)."""

    session_failures: Annotated[int, Json(minimum=0)]
    session_failures_startup: Annotated[int, Json(minimum=0)]
    start_up: StartUp | None
    startup_stable_s: float | None


class Unit(UnitRecords, UnitSplitBrain, UnitHealth, UnitSteady, E2EFlat, extra_items=Any):
    """One unit (``units[]``): a case, an implementation, a repetition."""

    case: str
    impl: str
    repetition: Annotated[int, Json(minimum=0)]
    events: NotRequired[Annotated[int, Json(minimum=0)]]
    partitions: NotRequired[Count]
    members: NotRequired[Count]
    params: NotRequired[dict[str, Any]]
    duration_s: NotRequired[float]
    unit_started: NotRequired[bool]
    failed: NotRequired[str | None]
    client: NotRequired[Annotated[str, Json(description='the members\' client library ("" for legacy_zk)')]]
    broker: NotRequired[
        Annotated[
            str,
            Json(
                description="the unit's broker: herdlab, tansu, external, or apache-kafka with its version"
                " (apache-kafka 3.9.2)"
            ),
        ]
    ]
    assignor: NotRequired[str]
    broker_config: NotRequired[
        Annotated[
            BrokerConfig,
            Json(
                description="what the unit's broker ran with (from the manifest): broker, Apache Kafka's version,"
                " properties by their Kafka names"
            ),
        ]
    ]
    processing_gap_s: NotRequired[
        Annotated[
            float,
            Json(
                description="the longest silence inside a member's processing interval (the definitions'"
                " processing interval)",
                exclusiveMinimum=0,
            ),
        ]
    ]
    triggers: NotRequired[list[Trigger]]
    steady: NotRequired[Steady]
    e2e: NotRequired[E2E]
    failover: NotRequired[UnitFailover]
    migration: NotRequired[UnitMigration]


class Aggregate(TypedDict, extra_items=Any):
    """One aggregate row (``aggregates[]``): a metric over the repetitions of an implementation, case and
    trigger."""

    impl: str
    case: str
    trigger: str
    trigger_index: NotRequired[int]
    action: NotRequired[str | None]
    metric: str
    n: Annotated[int, Json(minimum=0)]
    never: NotRequired[Annotated[int, Json(minimum=0)]]
    mean: NotRequired[float | None]
    ci95: NotRequired[Annotated[list[float] | None, _PAIR]]


class Migration(TypedDict, extra_items=Any):
    """``migration``: the migration proof's verdict against the scenario's expected one."""

    expect: str
    verdict: str
    units: dict[str, str]
    as_expected: bool


class CoordinatorVs(TypedDict, extra_items=Any):
    """``coordinators.rows[].vs[broker]``: a broker against the reference."""

    latency_ratio: float | None
    latency_ci95: Annotated[list[float] | None, _PAIR]
    latency_n: Any
    latency_never: Any
    latency_outside: bool | None
    requests_ratio: float | None
    kinds_differ: list[str]


class CoordinatorRow(TypedDict, extra_items=Any):
    """One row of ``coordinators``: a trigger, client and assignor across the brokers."""

    impl: Any
    trigger: Any
    client: Any
    assignor: Any
    latency_s: Any
    coordination_requests: Any
    requests_by_kind: dict[str, dict[str, Any]]
    vs: dict[str, CoordinatorVs]


class Coordinators(TypedDict, extra_items=Any):
    """``coordinators``: the brokers compared (:mod:`harness.analysis.coordinators`)."""

    brokers: list[str]
    reference: list[str]
    rows: list[CoordinatorRow]


class LegacyClients(TypedDict, extra_items=Any):
    """``legacy_clients``: herdlab's legacy member beside Kafka 0.8.2.2's own consumer
    (:mod:`harness.analysis.legacy_clients`)."""

    clients: list[str]
    rows: list[dict[str, Any]]


class Spark(TypedDict, extra_items=Any):
    """``spark``: the Spark session the analysis ran on and how long it took."""

    master: str
    version: str
    session_s: NotRequired[float]
    shuffle_partitions: NotRequired[int]
    small_shuffle_partitions: NotRequired[int]
    analysis_s: NotRequired[float]


class Case(TypedDict, extra_items=Any):
    """One case of ``cases`` (from the manifest): its label, parameters and group size."""

    index: Annotated[int, Json(minimum=0)]
    label: str
    params: NotRequired[dict[str, Any]]
    members: NotRequired[Count]
    partitions: NotRequired[Count]
    processing_gap_s: NotRequired[Annotated[dict[str, float], Json(description="per implementation")]]


class LeftOutCase(TypedDict, extra_items=Any):
    """One matrix case of ``left_out`` (from the manifest): a combination the scenario's client cannot run
    (:func:`harness.scenario.loading.left_out`), not run; the report says so among its alerts."""

    label: str
    params: dict[str, Any]
    reason: str


class DocumentSections(TypedDict):
    """The document's sections but the verdict, which :class:`DocumentDraft` and :class:`MetricsDocument`
    share: what a function that reads the document before or after its verdict takes."""

    format: Annotated[str, Json(pattern="^herdlab-metrics/2$")]
    run: RunHeader
    spark: Spark
    definitions: list[
        Annotated[list[Any], Json(prefixItems=[{"type": "string"}, {"type": "string"}], **_PAIR.keywords)]
    ]
    metric_info: dict[str, MetricInfo]
    cases: list[Case]
    units: list[Unit]
    aggregates: list[Aggregate]
    series: Series
    alerts: list[str]
    left_out: NotRequired[
        Annotated[list[LeftOutCase], Json(description="matrix cases left out: their client cannot run them")]
    ]
    migration: NotRequired[Migration]
    failover: NotRequired[
        Annotated[dict[str, FailoverImpl], Json(description="per implementation, its failover faults summed")]
    ]
    coordinators: NotRequired[
        Annotated[
            Coordinators,
            Json(
                description="the Coordinators summary (harness.analysis.coordinators), when the units ran on"
                " more than one broker"
            ),
        ]
    ]
    legacy_clients: NotRequired[
        Annotated[
            LegacyClients,
            Json(
                description="the legacy fidelity summary (harness.analysis.legacy_clients), when legacy_zk units"
                " ran on more than one legacy client"
            ),
        ]
    ]


class DocumentDraft(DocumentSections, extra_items=Any):
    """The document before its verdict is in: what :func:`harness.analysis.document.new_document` returns."""


class MetricsDocument(DocumentSections, extra_items=Any):
    """``metrics.json``: the whole document (see :mod:`harness.analysis.analyze` for every section)."""

    verdict: Verdict


#: The parts the schema keeps under ``$defs`` (referred to with ``$ref``), with their own keywords.
DEFS: dict[Any, tuple[str, dict[str, Any]]] = {
    Verdict: (
        "verdict",
        {
            "description": "Rules in harness/analysis/verdict.py: false when the run failed (records lost, tails"
            " not drained, failed units, an unexpected migration verdict, interrupted, nothing recorded),"
            ' "unknown" when nothing failed but nothing could be judged (every trigger skipped), true'
            " otherwise. reasons: one line each, empty when true.",
            "allOf": [
                {
                    "if": {"properties": {"valid": {"const": True}}},
                    "then": {"properties": {"reasons": {"maxItems": 0}, "line": {"pattern": "^VALID: "}}},
                },
                {
                    "if": {"properties": {"valid": {"const": False}}},
                    "then": {"properties": {"reasons": {"minItems": 1}, "line": {"pattern": "^INVALID: "}}},
                },
                {
                    "if": {"properties": {"valid": {"const": "unknown"}}},
                    "then": {"properties": {"reasons": {"minItems": 1}, "line": {"pattern": "^UNKNOWN: "}}},
                },
            ],
        },
    ),
    Trigger: ("trigger", {}),
    Unit: ("unit", {}),
    Overlap: (
        "overlap",
        {
            "description": "one overlap episode: its partition, phase (tid: a trigger's index, -1 startup, -2"
            " drain), times since the unit's origin, and per member the records it processed inside the"
            " episode"
        },
    ),
    Aggregate: ("aggregate", {}),
    SplitBrain: ("split-brain", {}),
    E2E: ("e2e", {}),
    DeposedAcceptances: ("deposed-acceptances", {}),
    DoubleCoordinator: ("double-coordinator", {}),
}
