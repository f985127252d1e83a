"""The verdict every report leads with: is the run valid, and how the implementations compare.

``verdict(out) -> dict``, stored as ``metrics["verdict"]`` by
:func:`harness.analysis.aggregate.aggregate`:

* ``valid``: ``True``, ``False`` or ``"unknown"`` (the machine-readable contract of ``metrics.json``,
  read by scripts and by ``herdlab runs list``), ``reasons`` (one line each) and ``line`` (the
  one-line run verdict: ``VALID: ...``, ``INVALID: ...`` or ``UNKNOWN: ...``). The rules, first match:

  1. ``False`` when the run failed what it set out to do; ``reasons`` names every such reason:
     records lost, tails not drained, failed units, a migration proof whose verdict is not the one
     the scenario expects (``metrics["migration"]["as_expected"]`` false), an interrupted run, a run
     that stopped before its last unit on an error (``run.stopped``),
     nothing recorded (no unit at all: the run produced nothing, which is a failure, not a lack of
     things to judge).
  2. ``"unknown"`` when nothing failed but the run has nothing to judge: its units planned triggers
     and every one of them was skipped (an action that applies to no implementation of the run, or
     one the simulator does not model), so no rebalance was measured; ``reasons`` says so.
  3. ``True`` otherwise (``reasons`` empty).

  Not reasons, by decision: split brain (overlap episodes, duplicates, commits by non-owners) is what
  herdlab measures (the legacy design has it by nature) and no scenario key forbids it; the
  migration proof, which does judge overlaps, enters through its expected verdict (rule 1). The
  failover figures (offsets lost, deposed acceptances, double-coordinator time, a coordinator
  fault never recovered) are alerts (:func:`harness.analysis.failover_verdict.alert_lines`), not
  reasons: the run measured what happened. A simulation is judged by the same rules (its report
  says at the top that it is one; ``run.simulation`` in the metrics). ``"unknown"`` does not fail
  ``herdlab run`` / ``report`` (exit 0, as before it existed): scripts read it from
  ``metrics.json`` or ``--json``;
* ``ratios``: per case, pair of implementations and trigger kind (action) both have: ``case``,
  ``action``, ``triggers`` (the numerator's keys, e.g. ``["#2 crash"]``), ``numerator`` (the older design
  of the pair, in the order of :data:`DESIGNS`: ``legacy_zk`` before ``coordinator`` before ``consumer``;
  so ``legacy_zk`` / ``coordinator``, ``legacy_zk`` / ``consumer``, ``coordinator`` / ``consumer``),
  ``denominator``, and for ``latency_s`` and ``coordination_requests``
  a dict ``ratio`` (None when there is none), ``ci95`` ([lo, hi] or None), ``means`` (each side's
  mean over its finite repetition values, or None), ``n`` (finite values on each side), ``never``
  (repetitions that never settled on each side), ``note`` (why a ratio or an interval is missing,
  what was left out);
* ``completeness``: per implementation ``impl``, ``units``, ``failed``, and totals over its units of
  ``lost``, ``not_drained``, ``overlap_episodes``, ``overlap_s``, ``commits_non_owner`` and
  ``commits_stale_generation`` (None: not applicable, legacy_zk has no generations);
* ``method``: how the ratios and intervals are computed (:data:`METHOD`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.analysis.definitions import metric
from harness.analysis.metrics_model import DocumentSections, Unit, Verdict
from harness.analysis.samples import case_order, trigger_sample, unit_name
from harness.analysis.stats import ratio_of_means

LEGACY = "legacy_zk"
#: The designs in the order of their ratios' numerators (an implementation not named here comes after).
DESIGNS = ("legacy_zk", "coordinator", "consumer")
#: ``verdict["valid"]`` of a run with nothing to judge (rule 2).
UNKNOWN = "unknown"
RATIO_METRICS = ("latency_s", "coordination_requests")
METHOD = (
    "Ratio legacy/other of the means over repetitions. A repetition contributes one value per trigger "
    "kind: the mean over its triggers of that kind (a repetition with one of them never settled is never; "
    "no-effect and skipped triggers are left out of latency). Never repetitions are left out of the ratio "
    "and counted. 95% CI by the delta method on the log of the ratio, with Welch-Satterthwaite degrees "
    "of freedom: se^2 = s1^2/(n1 m1^2) + s2^2/(n2 m2^2), ratio x exp(+-t se). With one repetition on "
    "either side: the ratio alone."
)
COMPLETENESS = (
    "lost",
    "not_drained",
    "overlap_episodes",
    "overlap_s",
    "commits_non_owner",
    "commits_stale_generation",
)


def is_true(v: Mapping[str, Any]) -> bool:
    """Whether verdict ``v`` is valid (``True``; not ``False``, not ``"unknown"``)."""
    return v.get("valid") is True


def is_false(v: Mapping[str, Any]) -> bool:
    """Whether verdict ``v`` is invalid (``False``; an old file's falsy value too)."""
    return v.get("valid") is not True and v.get("valid") != UNKNOWN


def implementations(out: DocumentSections) -> list[str]:
    """Implementations in the run, in the scenario's order (then any others found in the units)."""
    named = (out.get("run") or {}).get("implementations") or []
    seen = {u["impl"] for u in out.get("units") or []}
    return [i for i in named if i in seen] + sorted(seen - set(named))


def _pairs(impls: Sequence[str]) -> list[tuple[str, str]]:
    """Every pair of ``impls`` a ratio compares, (older, newer) by :data:`DESIGNS`, numerators in that
    order: with legacy_zk, coordinator and consumer, legacy_zk / coordinator, legacy_zk / consumer, then
    coordinator / consumer. Only designs of :data:`DESIGNS` pair; without legacy_zk, coordinator and
    consumer still do."""
    ranked = sorted((i for i in impls if i in DESIGNS), key=DESIGNS.index)
    return [(a, b) for k, a in enumerate(ranked) for b in ranked[k + 1 :]]


def _unit_values(units: Sequence[Mapping[str, Any]], action: str, name: str) -> tuple[list[float], int, int]:
    """Per repetition one value of metric ``name`` for the triggers of ``action`` (see METHOD):
    (finite values, never repetitions, repetitions with no value)."""
    m = metric(name)
    finite: list[float] = []
    never = missing = 0
    for u in units:
        ts = [t for t in u.get("triggers") or [] if t.get("action") == action]
        sample = trigger_sample(m, ts)
        if not sample:
            missing += 1
        elif any(math.isinf(v) for v in sample):
            never += 1
        else:
            finite.append(math.fsum(sample) / len(sample))
    return finite, never, missing


def _ratio(
    num: Sequence[Mapping[str, Any]],
    den: Sequence[Mapping[str, Any]],
    action: str,
    name: str,
    names: tuple[str, str],
) -> dict[str, Any]:
    a, a_never, a_missing = _unit_values(num, action, name)
    b, b_never, b_missing = _unit_values(den, action, name)
    r = ratio_of_means(a, b)
    notes = []
    for impl, finite, never, missing in (
        (names[0], a, a_never, a_missing),
        (names[1], b, b_never, b_missing),
    ):
        total = len(finite) + never
        if not total:
            notes.append(f"{impl}: not measured" if missing else f"{impl}: no repetition")
        elif never and not finite:
            notes.append(f"{impl}: never settled ({never} of {total})")
        elif never:
            notes.append(f"{impl}: {never} of {total} never settled, left out")
    if r.ratio is None and a and b:
        notes.append(f"{names[1]} mean is 0")
    elif r.ratio is not None and r.ci95 is None:
        notes.append("n=1, no CI" if min(r.n) < 2 else "no CI (numerator mean is 0)")
    return {
        "ratio": r.ratio,
        "ci95": None if r.ci95 is None else list(r.ci95),
        "means": [_mean(a), _mean(b)],
        "n": list(r.n),
        "never": [a_never, b_never],
        "note": "; ".join(notes),
    }


def _mean(values: list[float]) -> float | None:
    return round(math.fsum(values) / len(values), 6) if values else None


def _sum(units: Sequence[Mapping[str, Any]], name: str) -> float | int | None:
    vals = [u[name] for u in units if u.get(name) is not None]
    if not vals:
        return None
    total = math.fsum(float(v) for v in vals)
    return round(total, 6) if any(isinstance(v, float) for v in vals) else int(total)


def _who(units: Sequence[Mapping[str, Any]], pred: Callable[[Mapping[str, Any]], Any]) -> list[str]:
    return [unit_name(u) for u in units if pred(u)]


def _reasons(out: DocumentSections) -> list[str]:
    units = out.get("units") or []
    reasons = []
    if not units:
        reasons.append("no unit was recorded")
    for field, what in (("lost", "records lost"), ("not_drained", "records not drained")):
        hit = [u for u in units if u.get(field)]
        if hit:
            total = sum(int(u[field]) for u in hit)
            reasons.append(
                f"{total} {what} in {len(hit)} unit{'s' if len(hit) > 1 else ''} ({', '.join(unit_name(u) for u in hit)})"
            )
    failed = _who(units, lambda u: u.get("failed"))
    if failed:
        reasons.append(f"{len(failed)} unit{'s' if len(failed) > 1 else ''} failed ({', '.join(failed)})")
    mig = out.get("migration")
    if mig and not mig.get("as_expected"):
        off = sorted(name for name, v in (mig.get("units") or {}).items() if v != mig.get("expect"))
        reasons.append(
            f"migration verdict {mig.get('verdict')}, the scenario expects {mig.get('expect')} ({', '.join(off)})"
        )
    if (out.get("run") or {}).get("interrupted"):
        reasons.append("the run was interrupted")
    if (out.get("run") or {}).get("stopped"):
        reasons.append(f"the run stopped before its last unit: {out['run']['stopped']}")
    return reasons


def _unknown_reasons(out: DocumentSections) -> list[str]:
    """Why a run with no failure has nothing to judge (rule 2 of the module docstring); [] if it has."""
    triggers = [t for u in out.get("units") or [] for t in u.get("triggers") or []]
    if triggers and all(t.get("outcome") == "skipped" for t in triggers):
        return [f"every trigger was skipped ({len(triggers)}): no rebalance was measured"]
    return []


def verdict(out: DocumentSections) -> Verdict:
    """The verdict of a metrics dict (see the module docstring); computes from ``out["units"]``."""
    units = out.get("units") or []
    cases = out.get("cases") or []
    impls = implementations(out)
    reasons = _reasons(out)
    valid: bool | str
    if reasons:
        valid = False
        line = "INVALID: " + "; ".join(reasons)
    elif unknown := _unknown_reasons(out):
        valid, reasons = UNKNOWN, unknown
        line = "UNKNOWN: " + "; ".join(reasons)
    else:
        valid = True
        line = f"VALID: {len(units)} units, no record lost, every tail drained, no unit failed"
    live: dict[tuple[str, str], list[Unit]] = {}
    for u in units:
        if not u.get("failed"):
            live.setdefault((u["impl"], u["case"]), []).append(u)
    ratios = []
    labels = sorted({u["case"] for u in units}, key=lambda c: (case_order(c, cases), c))
    for case in labels:
        for first, other in _pairs(impls):
            num = live.get((first, case), [])
            kinds: dict[str, tuple[int, set[str]]] = {}
            for u in num:
                for t in u.get("triggers") or []:
                    idx, keys = kinds.get(t["action"], (int(t.get("index") or 0), set()))
                    kinds[t["action"]] = (min(idx, int(t.get("index") or 0)), keys | {t["key"]})
            den = live.get((other, case), [])
            present = {t["action"] for u in den for t in u.get("triggers") or []}
            for action in sorted((a for a in kinds if a in present), key=lambda a: kinds[a][0]):
                row: dict[str, Any] = {
                    "case": case,
                    "action": action,
                    "triggers": sorted(kinds[action][1], key=lambda k: (len(k), k)),
                    "numerator": first,
                    "denominator": other,
                }
                for name in RATIO_METRICS:
                    row[name] = _ratio(num, den, action, name, (first, other))
                ratios.append(row)
    completeness = []
    for impl in impls:
        mine = [u for u in units if u["impl"] == impl]
        entry: dict[str, Any] = {
            "impl": impl,
            "units": len(mine),
            "failed": sum(1 for u in mine if u.get("failed")),
        }
        for name in COMPLETENESS:
            entry[name] = _sum(mine, name)
        completeness.append(entry)
    return {
        "valid": valid,
        "reasons": reasons,
        "line": line,
        "ratios": ratios,
        "completeness": completeness,
        "method": METHOD,
    }
