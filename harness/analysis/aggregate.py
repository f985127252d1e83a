"""Statistics over repetitions, the verdict and the run's alerts, from the per-unit metrics the
checker computed. Pure Python: k values per row need no Spark.

* ``aggregate(out)`` fills ``out["aggregates"]`` (one row per implementation, case, trigger key and
  metric; ``"unit"`` rows for whole-unit totals) and ``out["verdict"]`` (see
  :mod:`harness.analysis.verdict`);
* ``alerts(out)`` appends one line per problem to ``out["alerts"]``.

An aggregate row: ``impl``, ``case``, ``trigger`` (``"#1 join"`` or ``"unit"``), ``trigger_index``
(-1 for unit rows), ``action``, ``targets``, ``metric``; ``n`` (repetitions with the trigger, failed
units left out), ``never``, ``no_effect``, ``skipped`` (outcome counts; 0 for unit rows); ``m``
(values in the sample), ``k`` (finite ones), ``left_out`` (never ones, left out of the mean);
``value`` (the one value when m == 1: a number or ``"never"``, else None); ``p50``, ``p95``, ``p99``,
``max`` (numbers, ``"never"``, or None for an empty sample); ``mean``, ``ci95`` ([lo, hi] or None)
over the finite values; ``note`` (a short human reading: ``"n=1"``, ``"1 of 5 never"`` ...). The
sample and the rank rule are stated in :mod:`harness.analysis.definitions` ("statistics over
repetitions") and implemented once, in :func:`harness.analysis.stats.describe`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, cast

from harness.analysis.definitions import TRIGGER_METRICS, UNIT_METRICS
from harness.analysis.metrics_model import Aggregate, DocumentDraft, Trigger, Unit
from harness.analysis.migration_verdict import alert_lines as migration_alerts
from harness.analysis.samples import (
    BREAKDOWNS,
    breakdown_metric,
    case_order,
    outcome,
    trigger_sample,
    unit_name,
)
from harness.analysis.stats import describe
from harness.analysis.verdict import verdict
from harness.kernel.events import NEVER, NO_EFFECT, SKIPPED


def _row(
    head: dict[str, Any], metric_name: str, n: int, counts: Counter[str], sample: list[float]
) -> dict[str, Any]:
    s = describe(sample)
    notes = []
    if s.m == 1:
        notes.append("n=1")
    if counts[NEVER]:
        notes.append(f"{counts[NEVER]} of {n} never")
    if s.left_out and s.k:
        notes.append(f"mean of {s.k}, {s.left_out} never left out")
    if counts[NO_EFFECT]:
        notes.append(f"{counts[NO_EFFECT]} no effect")
    if counts[SKIPPED]:
        notes.append(f"{counts[SKIPPED]} skipped")
    return {
        **head,
        "metric": metric_name,
        "n": n,
        "never": counts[NEVER],
        "no_effect": counts[NO_EFFECT],
        "skipped": counts[SKIPPED],
        "m": s.m,
        "k": s.k,
        "left_out": s.left_out,
        "value": s.value,
        **s.quantiles,
        "mean": s.mean,
        "ci95": None if s.ci95 is None else list(s.ci95),
        "note": "; ".join(notes),
    }


def aggregate_units(units: Sequence[Unit], cases: Sequence[Mapping[str, Any]]) -> list[Aggregate]:
    """The aggregate rows of ``units`` (see the module docstring), in scenario order."""
    live = [u for u in units if not u.get("failed")]
    by_trigger: dict[tuple[str, str, str], list[Trigger]] = defaultdict(list)
    by_case: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for u in live:
        by_case[(u["impl"], u["case"])].append(u)
        for t in u.get("triggers") or []:
            by_trigger[(u["impl"], u["case"], t["key"])].append(t)
    rows: list[dict[str, Any]] = []
    for (impl, case, key), ts in by_trigger.items():
        first = ts[0]
        head = {
            "impl": impl,
            "case": case,
            "trigger": key,
            "trigger_index": int(first.get("index") or 0),
            "action": first.get("action"),
            "targets": list(first.get("targets") or []),
        }
        n = len(ts)
        counts = Counter(outcome(t) for t in ts)
        for m in TRIGGER_METRICS:
            sample = trigger_sample(m, ts)
            if sample or (m.censored and n):
                rows.append(_row(head, m.name, n, counts, sample))
        for field, parent in BREAKDOWNS:
            # a repetition that measured the parent but not this operation had 0 of it
            measured = [t for t in ts if outcome(t) != SKIPPED and t.get(parent) is not None]
            names = sorted({op for t in measured for op in (t.get(field) or {})})
            for op in names:
                sample = [float((t.get(field) or {}).get(op) or 0) for t in measured]
                rows.append(_row(head, breakdown_metric(parent, op), n, counts, sample))
    for (impl, case), us in by_case.items():
        head = {"impl": impl, "case": case, "trigger": "unit", "trigger_index": -1, "action": "unit"}
        head["targets"] = []
        for m in UNIT_METRICS:
            sample = [float(u[m.name]) for u in us if u.get(m.name) is not None]
            if sample:
                rows.append(_row(head, m.name, len(us), Counter(), sample))
    rows.sort(
        key=lambda a: (
            case_order(a["case"], cases),
            a["trigger_index"] if a["trigger_index"] >= 0 else 10**6,
            a["metric"],
            a["impl"],
        )
    )
    return cast(list[Aggregate], rows)  # each row has the model's keys (see _row)


def aggregate(out: DocumentDraft) -> None:
    """Fill ``out["aggregates"]`` and ``out["verdict"]`` from ``out["units"]`` (pure Python)."""
    out["aggregates"] = aggregate_units(out.get("units") or [], out.get("cases") or [])
    out["verdict"] = verdict(out)


def alerts(out: DocumentDraft) -> None:
    """Append to ``out["alerts"]`` one line per lost / not-drained unit (``LOST`` / ``NOT DRAINED``
    first, they fail the run), failed unit, partial history, trigger that never settled or had no
    effect, member session trouble, the migration proof's lost partitions and unexpected verdict
    (:func:`harness.analysis.migration_verdict.alert_lines`), and an interrupted run."""
    lines = out.setdefault("alerts", [])
    for u in out.get("units") or []:
        name = unit_name(u)
        if lost := u.get("lost"):
            sample = ", ".join(f"p{p}@{o}" for p, o in (u.get("lost_sample") or [])[:5])
            lines.append(
                f"LOST {lost} records in {name}: acknowledged offsets skipped below a processed offset"
                + (f" (e.g. {sample})" if sample else "")
            )
        if not_drained := u.get("not_drained"):
            lines.append(
                f"NOT DRAINED: {not_drained} acknowledged records in {name} lay above the last "
                "processed offset of their partition when the drain ended"
            )
        if failed := u.get("failed"):
            lines.append(f"unit {name} failed: {failed}")
        elif "unit_started" in u and u.get("events") and not u["unit_started"]:
            lines.append(f"unit {name} has no unit_start event: the history of this unit is partial")
        for t in u.get("triggers") or []:
            o = outcome(t)
            targets = ",".join(t.get("targets") or [])
            if o == NEVER:
                lines.append(f"{name}: trigger {t['key']} {targets} never settled")
            elif o == NO_EFFECT:
                lines.append(f"{name}: trigger {t['key']} {targets} had no effect (nothing reacted)")
        if failures := u.get("session_failures"):
            lines.append(f"{name}: {failures} heartbeat/session failures of members no fault targeted")
    lines += migration_alerts(out)
    if (out.get("run") or {}).get("interrupted"):
        lines.append("the run was interrupted: results cover what was recorded")
    if (out.get("run") or {}).get("stopped"):
        lines.append(
            f"the run stopped before its last unit ({out['run']['stopped']}): results cover what was recorded"
        )
