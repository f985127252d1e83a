"""The metrics document (``herdlab-metrics/2``): its frame, and how it is completed once units are in.

Contract
--------
:func:`new_document` returns the document with ``format`` (:data:`FORMAT`), ``run`` (from the
manifest: run id, scenario, description, settle window, repetitions, implementations, backend,
start and finish, interrupted, git commit, versions, machine; and the history's row count and the
run directory), ``spark`` (master and version), ``definitions`` ([term, text] pairs of
:data:`~harness.analysis.definitions.DEFINITIONS`), ``cases`` (the manifest's) and empty
``metric_info``, ``units``, ``aggregates``, ``series`` (rate, gaps, timelines, e2e) and ``alerts``.

:func:`finish` puts the units in (by case order of the scenario, implementation, repetition, their
internal fields :data:`INTERNAL` left out) and, when some unit switched member kinds, the migration
proof's summary ``migration`` (:func:`harness.analysis.migration_verdict.summary`, with the
scenario's ``[migration].expect``) and its terms
(:data:`~harness.analysis.definitions.MIGRATION_DEFINITIONS`) after the definitions; when some unit
had a coordinator or ZooKeeper-leader fault, the failover summary ``failover``
(:func:`harness.analysis.failover_verdict.summary`) and its terms
(:data:`~harness.analysis.definitions.FAILOVER_DEFINITIONS`), and its alert lines after the others
(:func:`harness.analysis.failover_verdict.alert_lines`); when some unit has a ``start_up`` entry, the
start-up term (:data:`harness.analysis.startup.DEFINITION`); when the units have more than one broker,
``coordinators`` (:func:`harness.analysis.coordinators.summary`); when legacy_zk units ran on more than
one legacy client, ``legacy_clients`` (:func:`harness.analysis.legacy_clients.summary`); it computes
the aggregates, verdict and alerts
(:mod:`harness.analysis.aggregate`) and ``metric_info`` (label, unit, family, censored) of every
metric of :data:`~harness.analysis.definitions.METRICS` and of every aggregated one.

The document's whole shape is described in :mod:`harness.analysis.analyze`; its typed model is
:mod:`harness.analysis.metrics_model` (:class:`~harness.analysis.metrics_model.DocumentDraft` before the
verdict, :class:`~harness.analysis.metrics_model.MetricsDocument` after), from which its published JSON
Schema ``metrics.schema.json`` beside this module is generated (:mod:`harness.analysis.metrics_schema`), whose
``verdict.valid`` is true, false or "unknown" (rules in :mod:`harness.analysis.verdict`). This
module does not import pyspark.
"""

from __future__ import annotations

from typing import Any, cast

from harness.analysis.aggregate import aggregate, alerts
from harness.analysis.coordinators import summary as coordinators_summary
from harness.analysis.definitions import (
    DEFINITIONS,
    FAILOVER_DEFINITIONS,
    METRICS,
    MIGRATION_DEFINITIONS,
    metric,
)
from harness.analysis.failover_verdict import alert_lines as failover_alerts
from harness.analysis.failover_verdict import summary as failover_summary
from harness.analysis.legacy_clients import summary as legacy_clients_summary
from harness.analysis.load import RunInputs
from harness.analysis.metrics_model import DocumentDraft, LegacyClients, MetricsDocument, Unit
from harness.analysis.migration_verdict import summary as migration_summary
from harness.analysis.samples import case_order
from harness.analysis.startup import DEFINITION as STARTUP_DEFINITION

FORMAT = "herdlab-metrics/2"
#: A unit's fields used while analysing, not part of the document (ns: first, last event, origin).
INTERNAL = ("t_first", "t_last", "origin", "topic")


def new_document(inputs: RunInputs, spark_master: str, spark_version: str) -> DocumentDraft:
    """The document of the run ``inputs`` before any unit is analysed."""
    man = inputs.manifest
    scenario = man.get("scenario") or {}
    doc: DocumentDraft = {
        "format": FORMAT,
        "run": {
            "run_id": man.get("run_id"),
            "scenario": scenario.get("name"),
            "description": scenario.get("description"),
            "settle_window_s": inputs.settle_window_s,
            "repetitions": man.get("repetitions"),
            "implementations": scenario.get("implementations"),
            "backend": man.get("backend"),
            "started": man.get("started"),
            "finished": man.get("finished"),
            "interrupted": man.get("interrupted"),
            "stopped": man.get("stopped"),
            "git_commit": man.get("git_commit"),
            "versions": man.get("versions"),
            "machine": man.get("machine"),
            "history_rows": inputs.rows,
            "run_dir": str(inputs.run_dir),
        },
        "spark": {"master": spark_master, "version": spark_version},
        "definitions": [list(d) for d in DEFINITIONS],
        "metric_info": {},
        "cases": list(man.get("cases") or []),
        "units": [],
        "aggregates": [],
        "series": {"rate": [], "gaps": [], "timelines": [], "e2e": []},
        "alerts": [f"LEFT OUT case {c.get('label')}: {c.get('reason')}" for c in man.get("left_out") or []],
    }
    if man.get("left_out"):  # only a run that left cases out has the section
        doc["left_out"] = list(man["left_out"])
    return doc


def public_unit(u: dict[str, Any]) -> Unit:
    """A unit's entry of the metrics document (its internal times left out). The analysis builds a unit
    as a plain dict; here it becomes the model's :class:`~harness.analysis.metrics_model.Unit` (the
    regression fixture's documents validate against the schema generated from that model)."""
    return cast(Unit, {k: v for k, v in u.items() if k not in INTERNAL})


def finish(
    out: DocumentDraft, units: dict[tuple[str, str, int], dict[str, Any]], migration_expect: str = "clean"
) -> MetricsDocument:
    """Put ``units`` into the document ``out`` and derive what depends on them (see the contract); returns
    ``out``, now with its verdict."""
    cases = out["cases"]
    out["units"] = [
        public_unit(units[k]) for k in sorted(units, key=lambda k: (case_order(k[0], cases), k[1], k[2]))
    ]
    moved = migration_summary(out["units"], migration_expect)
    if moved is not None:
        out["migration"] = moved
        out["definitions"] += [list(d) for d in MIGRATION_DEFINITIONS]
    failed_over = failover_summary(out["units"])
    if failed_over is not None:
        out["failover"] = failed_over
        out["definitions"] += [list(d) for d in FAILOVER_DEFINITIONS]
    if any(u.get("start_up") for u in out["units"]):
        out["definitions"].append(list(STARTUP_DEFINITION))
    aggregate(out)
    coordinators = coordinators_summary(out["units"], out["aggregates"])
    if coordinators is not None:
        out["coordinators"] = coordinators
    legacy_clients = legacy_clients_summary(out["units"], cases)
    if legacy_clients is not None:
        out["legacy_clients"] = cast(LegacyClients, legacy_clients)
    alerts(out)
    out["alerts"] += failover_alerts(out)  # alerts, not reasons: the run measured what happened
    names = {a["metric"] for a in out["aggregates"]} | set(METRICS)
    out["metric_info"] = {
        n: {
            "label": metric(n).label,
            "unit": metric(n).unit,
            "family": metric(n).family,
            "censored": metric(n).censored,
        }
        for n in sorted(names)
    }
    return cast(MetricsDocument, out)  # aggregate() put the verdict in
