# pyright: strict
"""The metrics document's model (``herdlab-metrics/2``): typed dicts of its parts, from which the published
JSON Schema is generated.

Contract
--------
Each part of ``metrics.json`` that scripts may rely on is a :class:`~typing_extensions.TypedDict` here:
:class:`MetricsDocument` (the whole, with its :class:`Verdict`), :class:`RunHeader`, :class:`MetricInfo`,
:class:`Series`, :class:`Unit` with its :class:`Trigger` s and :class:`Overlap` s, :class:`Aggregate`,
:class:`Migration`, :class:`Coordinators`. A key declared here is in the schema, with its JSON type; a
required key (not ``NotRequired``) is a required property. Every part is open
(``extra_items=Any``): the analysis writes more keys than these (a unit's latency parts, herd counts,
...) and later formats of the same major version may add sections, so a script must ignore keys it does
not know; in code such a key reads as ``Any``. A key typed ``Any`` is required but constrains nothing.
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
    "Aggregate",
    "BrokerConfig",
    "CoordinatorRow",
    "CoordinatorVs",
    "Coordinators",
    "Count",
    "DocumentDraft",
    "DocumentSections",
    "Json",
    "MetricInfo",
    "MetricsDocument",
    "Migration",
    "Overlap",
    "OverlapMember",
    "RunHeader",
    "Series",
    "Simulation",
    "Trigger",
    "Unit",
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


class Trigger(TypedDict, extra_items=Any):
    """One trigger of a unit (``units[].triggers[]``)."""

    index: Annotated[int, Json(minimum=0)]
    key: str
    action: str
    targets: NotRequired[list[Any] | None]
    outcome: Literal["settled", "never", "no_effect", "skipped"]
    settled: NotRequired[bool | None]
    t0_s: NotRequired[float | None]
    t1_s: NotRequired[float | None]
    latency_s: NotRequired[Annotated[float | None, Json(minimum=0)]]
    coordination_requests: NotRequired[Count]


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


class Unit(TypedDict, extra_items=Any):
    """One unit (``units[]``): a case, an implementation, a repetition."""

    case: str
    impl: str
    repetition: Annotated[int, Json(minimum=0)]
    failed: NotRequired[str | None]
    produced: NotRequired[Count]
    processed: NotRequired[Count]
    lost: NotRequired[Count]
    not_drained: NotRequired[Count]
    duplicates: NotRequired[Count]
    overlap_episodes: NotRequired[Count]
    overlap_s: NotRequired[Annotated[float | None, Json(minimum=0)]]
    broker: NotRequired[
        Annotated[
            str,
            Json(
                description="the unit's broker: herdlab, tansu, external, or apache-kafka with its version"
                " (apache-kafka 3.9.2)"
            ),
        ]
    ]
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
    overlaps: NotRequired[list[Overlap]]
    triggers: NotRequired[list[Trigger]]


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


class DocumentSections(TypedDict):
    """The document's sections but the verdict, which :class:`DocumentDraft` and :class:`MetricsDocument`
    share: what a function that reads the document before or after its verdict takes."""

    format: Annotated[str, Json(pattern="^herdlab-metrics/2$")]
    run: RunHeader
    spark: dict[str, Any]
    definitions: list[
        Annotated[list[Any], Json(prefixItems=[{"type": "string"}, {"type": "string"}], **_PAIR.keywords)]
    ]
    metric_info: dict[str, MetricInfo]
    cases: list[dict[str, Any]]
    units: list[Unit]
    aggregates: list[Aggregate]
    series: Series
    alerts: list[str]
    migration: NotRequired[Migration]
    failover: NotRequired[dict[str, Any]]
    coordinators: NotRequired[
        Annotated[
            Coordinators,
            Json(
                description="the Coordinators summary (harness.analysis.coordinators), when the units ran on"
                " more than one broker"
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
}
