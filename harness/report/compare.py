"""``herdlab compare``: a run's metrics against a baseline's, for regressions in CI.

Contract
--------
:func:`compare` returns every check it made as a :class:`Change` with a ``verdict``
(``regression``, ``improvement``, ``pass`` or ``inconclusive``); :attr:`Comparison.verdict` is
``regression`` if any check regressed, else ``inconclusive`` if any check was inconclusive, else
``pass``, and ``herdlab compare`` exits 1, 3 or 0 accordingly (2 on usage and configuration errors).

Hard checks (regressions whatever the statistics say, in both modes):

* ``lost`` / ``not_drained``: any unit of CURRENT with a lost record (a skip) or an undrained tail,
  whatever the baseline says;
* ``failed``: a unit of CURRENT that failed; ``interrupted``: CURRENT was interrupted;
* ``repetitions``: CURRENT ran fewer repetitions than the baseline (``run.repetitions``, else the
  most units of any implementation and case); ``missing_unit``: a (case, implementation, repetition)
  of the baseline, within CURRENT's repetitions, that CURRENT lacks;
* ``never``: per implementation, case and trigger, more repetitions that never settled (or had no
  effect) than in the baseline, whatever the statistics say: a latency statistic can stay finite
  while the never count rises;
* ``missing``: a compared metric of the baseline that CURRENT lacks.

The metric checks (``kind`` ``stat``), for every (implementation, case, trigger key, metric) whose
:class:`~harness.analysis.definitions.Metric` says ``compare`` (lower is better for all); trigger
metrics per trigger key, whole-unit metrics under the trigger ``unit`` as ``unit.NAME``:

* **default: the repetitions, by a two-sided Mann-Whitney U test** (:data:`TEST`,
  ``scipy.stats.mannwhitneyu``, ``alternative="two-sided"``) of CURRENT's per-repetition values
  against BASELINE's, read from the units of ``metrics.json`` (:func:`samples`: the same sample the
  aggregate rows describe, :func:`harness.analysis.samples.trigger_sample`; failed units and
  skipped triggers left out; for latency metrics a repetition that never settled is +infinity, one
  with no effect is left out). +infinity needs no stand-in: the U statistic depends only on ranks,
  and +infinity ranks above every finite value (ties among nevers share their mean rank). A metric
  **regressed** when p < ``alpha`` (default 0.05) AND the median of CURRENT exceeds the median of
  BASELINE by more than the tolerance: ``median_c > median_b * (1 + rel) + abs``; it **improved**
  when p < ``alpha`` AND ``median_c < median_b * (1 - rel) - abs`` (symmetric); a median that reads
  never (+infinity) exceeds any finite one. ``rel`` is ``--tolerance`` (default 0.10, or per metric
  ``latency_s=0.25``), ``abs`` the metric's own slack (0.05 s for times, 0 for counts) unless
  ``--abs-tolerance`` says otherwise. With fewer than ``min_repetitions`` values (default 5) on
  either side the check is **inconclusive**, never a pass (with 5 against 5 the smallest two-sided
  p is 2/252 = 0.008; with 3 against 3 it is 0.1: no test at 0.05 could ever decide). Both samples
  constant and equal (p undefined) is a pass.
* ``--stat P`` (``stat=``): the single-statistic check older herdlab versions made, kept for runs too
  short for a test (one or two repetitions) and for scripts that used it: the chosen statistic of the
  aggregate row (via :func:`harness.analysis.stats.statistic`) against ``baseline * (1 + rel) + abs``; a
  statistic that reads never is +infinity (finite -> never is a regression); ``mean`` reads never
  when its row left any never out. Why kept rather than removed: removing it would break existing
  CI scripts for no gain, and the rule that matters is kept in both modes: **below
  ``min_repetitions`` a metric that did not regress is inconclusive, never a pass**, so the single
  statistic can still flag a regression but can no longer certify a pass from three repetitions.

Two runs of different scenarios or metrics formats, or without a metric in common, are
incompatible: :class:`~harness.kernel.errors.ConfigError`. :func:`junit_xml` writes the result as
JUnit XML (one test case per check, its class name ``herdlab-compare IMPL CASE`` without dots
(:func:`harness.report.junit.classname`), time 0; failure for a regression, skipped for an
inconclusive check, the test and its parameters as suite properties); :func:`to_json` is the ``--json`` document.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.analysis.definitions import TRIGGER_METRICS, UNIT_METRICS, metric
from harness.analysis.metrics_model import MetricsDocument
from harness.analysis.samples import trigger_sample
from harness.analysis.stats import STATISTICS, statistic
from harness.kernel.errors import ConfigError
from harness.report.junit import Case, classname, write_junit
from harness.report.tables import fmt
from harness.scenario.model import duration_text

DEFAULT_TOLERANCE = 0.10
DEFAULT_ALPHA = 0.05
DEFAULT_MIN_REPETITIONS = 5
#: The test of the default mode, as stated in the output, the JUnit properties and ``--json``.
TEST = "Mann-Whitney U, two-sided (scipy.stats.mannwhitneyu)"
#: What a Change is about (``kind``).
KINDS = (
    "stat",
    "never",
    "missing",
    "lost",
    "not_drained",
    "failed",
    "missing_unit",
    "repetitions",
    "interrupted",
)
#: A check's verdict.
REGRESSION, IMPROVEMENT, PASS, INCONCLUSIVE = "regression", "improvement", "pass", "inconclusive"

Key = tuple[str, str, str, str]  # impl, case, trigger key ("unit" for whole-unit metrics), metric


@dataclass
class Change:
    """One check: a metric (``kind`` ``stat`` / ``missing``), a trigger's outcomes (``never``), a
    unit (``lost``, ``not_drained``, ``failed``, ``missing_unit``) or the run (``repetitions``,
    ``interrupted``; impl, case and trigger empty). ``stat`` is the statistic compared (``p50`` ...)
    or ``median`` under the test; ``baseline`` / ``current`` the compared figures (math.inf = never);
    ``p_value``, ``n_baseline`` and ``n_current`` are set by the test."""

    impl: str
    case: str
    trigger: str
    metric: str
    stat: str
    baseline: float | None  # math.inf = never
    current: float | None
    regressed: bool
    message: str
    kind: str = "stat"
    verdict: str = ""
    p_value: float | None = None
    n_baseline: int | None = None
    n_current: int | None = None

    def __post_init__(self) -> None:
        if not self.verdict:
            self.verdict = REGRESSION if self.regressed else PASS

    @property
    def name(self) -> str:
        return " ".join(x for x in (self.impl, self.case, self.trigger, self.metric) if x)


@dataclass
class Comparison:
    """All checks and how they were made; ``verdict`` decides ``herdlab compare``'s exit status."""

    changes: list[Change] = field(default_factory=list)
    new_keys: list[str] = field(default_factory=list)
    test: str = TEST
    alpha: float = DEFAULT_ALPHA
    min_repetitions: int = DEFAULT_MIN_REPETITIONS
    tolerance: float = DEFAULT_TOLERANCE

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.regressed]

    @property
    def inconclusive(self) -> list[Change]:
        return [c for c in self.changes if c.verdict == INCONCLUSIVE]

    @property
    def improvements(self) -> list[Change]:
        return [c for c in self.changes if c.verdict == IMPROVEMENT]

    @property
    def verdict(self) -> str:
        """``regression`` if any check regressed, else ``inconclusive`` if any was, else ``pass``."""
        if self.regressions:
            return REGRESSION
        return INCONCLUSIVE if self.inconclusive else PASS

    @property
    def exit_code(self) -> int:
        """0 pass, 1 regression, 3 inconclusive."""
        return {PASS: 0, REGRESSION: 1, INCONCLUSIVE: 3}[self.verdict]


def parse_tolerances(values: tuple[str, ...] | list[str]) -> tuple[float, dict[str, float]]:
    """``("0.2", "latency_s=0.5")`` -> (0.2, {"latency_s": 0.5}); ConfigError on anything else."""
    default = DEFAULT_TOLERANCE
    per: dict[str, float] = {}
    for v in values:
        name, sep, num = v.rpartition("=")
        try:
            x = float(num)
        except ValueError:
            raise ConfigError(f"--tolerance {v!r}: expected a fraction like 0.1 or METRIC=0.1") from None
        if x < 0:
            raise ConfigError(f"--tolerance {v!r}: a tolerance cannot be negative")
        if sep:
            per[name] = x
        else:
            default = x
    return default, per


def _check(base: Mapping[str, Any], cur: Mapping[str, Any]) -> None:
    for name, m in (("baseline", base), ("current", cur)):
        if not str(m.get("format", "")).startswith("herdlab-metrics/"):
            raise ConfigError(f"incompatible {name}: not a herdlab metrics file")
    if base["format"] != cur["format"]:
        raise ConfigError(f"incompatible baseline: metrics format {base['format']} vs {cur['format']}")
    bs, cs = (base.get("run") or {}).get("scenario"), (cur.get("run") or {}).get("scenario")
    if bs != cs:
        raise ConfigError(f"incompatible baseline: scenario {bs!r} vs {cs!r}")


def _unit(u: Mapping[str, Any]) -> str:
    return f"{u['impl']} {u['case']} rep {u['repetition']}"


def _repetitions(m: Mapping[str, Any]) -> int:
    """Planned repetitions: ``run.repetitions``, else the most units of any implementation and case."""
    r = (m.get("run") or {}).get("repetitions")
    if isinstance(r, int):
        return r
    per = Counter((u["impl"], u["case"]) for u in m.get("units") or [])
    return max(per.values(), default=0)


def _run_checks(baseline: Mapping[str, Any], current: Mapping[str, Any], out: Comparison) -> None:
    """Completeness of CURRENT and its units against the baseline's."""

    def flag(
        kind: str,
        message: str,
        u: dict[str, Any] | None = None,
        b: float | None = None,
        c: float | None = None,
    ) -> None:
        impl, case = (u["impl"], u["case"]) if u else ("", "")
        trig = f"rep {u['repetition']}" if u else ""
        out.changes.append(Change(impl, case, trig, kind, "", b, c, True, message, kind))

    cur_units = current.get("units") or []
    for u in cur_units:
        if u.get("lost"):
            flag(
                "lost",
                f"{_unit(u)}: {u['lost']} records lost (acknowledged offsets skipped; must be 0)",
                u,
                0,
                u["lost"],
            )
        if u.get("not_drained"):
            flag(
                "not_drained",
                f"{_unit(u)}: {u['not_drained']} records not drained (an unconsumed tail; must be 0)",
                u,
                0,
                u["not_drained"],
            )
        if u.get("failed"):
            flag("failed", f"{_unit(u)}: the unit failed: {u['failed']}", u)
    if (current.get("run") or {}).get("interrupted"):
        flag("interrupted", "the current run was interrupted: it covers only what was recorded")
    rb, rc = _repetitions(baseline), _repetitions(current)
    if rc < rb:
        flag("repetitions", f"fewer repetitions than the baseline: {rc} instead of {rb}", b=rb, c=rc)
    have = {(u["case"], u["impl"], int(u["repetition"])) for u in cur_units}
    for u in baseline.get("units") or []:
        k = (u["case"], u["impl"], int(u["repetition"]))
        if k not in have and k[2] < rc:
            flag("missing_unit", f"{_unit(u)}: in the baseline, missing from the current run", u)


def _outcome_checks(
    base: Mapping[tuple[str, ...], Mapping[str, Any]],
    cur: Mapping[tuple[str, ...], Mapping[str, Any]],
    out: Comparison,
) -> None:
    """A rising count of never-settled (or no-effect) repetitions, per implementation, case and trigger
    (read from its ``latency_s`` row)."""
    for k in sorted(set(base) & set(cur)):
        impl, case, trigger, name = k
        if name != "latency_s":
            continue
        b, c = base[k], cur[k]
        for count, what in (("never", "never settled"), ("no_effect", "had no effect")):
            nb, nc = int(b.get(count) or 0), int(c.get(count) or 0)
            if nc > nb:
                msg = (
                    f"{impl} {case} {trigger}: repetitions that {what} rose from {nb} of {b.get('n')} "
                    f"to {nc} of {c.get('n')}"
                )
                out.changes.append(Change(impl, case, trigger, count, "count", nb, nc, True, msg, "never"))


def samples(m: MetricsDocument) -> dict[Key, list[float]]:
    """Per (impl, case, trigger key, metric) of every compared metric, the per-repetition values of
    ``m``'s units (never = +infinity; see the module contract). Whole-unit metrics are keyed
    (impl, case, ``"unit"``, ``"unit.NAME"``). Failed units are left out, as in the aggregate rows."""
    by_trigger: dict[tuple[str, str, str], list[Mapping[str, Any]]] = defaultdict(list)
    by_case: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for u in m.get("units") or []:
        if u.get("failed"):
            continue
        by_case[(u["impl"], u["case"])].append(u)
        for t in u.get("triggers") or []:
            by_trigger[(u["impl"], u["case"], t["key"])].append(t)
    out: dict[Key, list[float]] = {}
    for (impl, case, key), ts in by_trigger.items():
        for d in TRIGGER_METRICS:
            if d.compare:
                s = trigger_sample(d, ts)
                if s:
                    out[(impl, case, key, d.name)] = s
    for (impl, case), us in by_case.items():
        for d in UNIT_METRICS:
            if d.compare:
                s = [float(u[d.name]) for u in us if u.get(d.name) is not None]
                if s:
                    out[(impl, case, "unit", f"unit.{d.name}")] = s
    return out


def mann_whitney_p(current: list[float], baseline: list[float]) -> float:
    """The two-sided Mann-Whitney U p-value of ``current`` against ``baseline`` (+infinity allowed:
    ranks only). 1.0 when it is undefined (both samples one and the same constant)."""
    from scipy.stats import mannwhitneyu

    if len(set(current) | set(baseline)) == 1:
        return 1.0
    # scipy ranks the pooled sample: +inf takes the top ranks (tied nevers share their mean rank);
    # with ties it uses the normal approximation with the tie correction, else the exact distribution
    p = float(mannwhitneyu(current, baseline, alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else p


def _median(xs: list[float]) -> float:
    """The median; +infinity when the middle touches a never."""
    s = sorted(xs)
    n = len(s)
    mid = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    return float(mid) if not math.isinf(mid) else math.inf


def _tolerances(
    name: str, tolerance: float, per_metric: dict[str, float], abs_tolerance: float | None
) -> tuple[float, float]:
    rel = per_metric.get(name, per_metric.get(name.removeprefix("unit."), tolerance))
    slack = metric(name).abs_tolerance if abs_tolerance is None else abs_tolerance
    return rel, slack


def compare(
    baseline: MetricsDocument,
    current: MetricsDocument,
    tolerance: float = DEFAULT_TOLERANCE,
    per_metric: dict[str, float] | None = None,
    stat: str | None = None,
    abs_tolerance: float | None = None,
    alpha: float = DEFAULT_ALPHA,
    min_repetitions: int = DEFAULT_MIN_REPETITIONS,
) -> Comparison:
    """Compare ``current`` against ``baseline`` (see the module contract): by the Mann-Whitney U test
    of the repetitions, or, when ``stat`` is given, by that single statistic."""
    if stat is not None and stat not in STATISTICS:
        raise ConfigError(f"unknown statistic {stat!r} (known: {', '.join(STATISTICS)})")
    if not 0 < alpha < 1:
        raise ConfigError(f"--alpha {alpha:g}: a significance level lies strictly between 0 and 1")
    if min_repetitions < 1:
        raise ConfigError(f"--min-repetitions {min_repetitions}: at least 1")
    _check(baseline, current)
    per_metric = per_metric or {}

    def key(a: Mapping[str, Any]) -> Key:
        name = f"unit.{a['metric']}" if a["trigger"] == "unit" else a["metric"]
        return (a["impl"], a["case"], a["trigger"], name)

    base_all = {key(a): a for a in baseline.get("aggregates", [])}
    cur_all = {key(a): a for a in current.get("aggregates", [])}
    if base_all and cur_all and not set(base_all) & set(cur_all):
        raise ConfigError("incompatible baseline: no metric in common (different cases or implementations?)")
    test = TEST if stat is None else f"single statistic {stat} (no significance test)"
    out = Comparison(test=test, alpha=alpha, min_repetitions=min_repetitions, tolerance=tolerance)
    _run_checks(baseline, current, out)
    _outcome_checks(base_all, cur_all, out)
    if stat is None:
        _test_checks(samples(baseline), samples(current), out, tolerance, per_metric, abs_tolerance)
    else:
        _stat_checks(base_all, cur_all, out, stat, tolerance, per_metric, abs_tolerance)
    return out


def _test_checks(
    base: dict[Key, list[float]],
    cur: dict[Key, list[float]],
    out: Comparison,
    tolerance: float,
    per_metric: dict[str, float],
    abs_tolerance: float | None,
) -> None:
    """The metric checks by the Mann-Whitney U test of the repetitions."""
    for k in sorted(set(base) | set(cur)):
        impl, case, trigger, name = k
        unit = metric(name).unit
        if k not in cur:
            msg = f"{impl} {case} {trigger} {name}: missing from the current run"
            out.changes.append(
                Change(impl, case, trigger, name, "median", _median(base[k]), None, True, msg, "missing")
            )
            continue
        if k not in base:
            out.new_keys.append(f"{impl} {case} {trigger} {name}")
            continue
        b, c = base[k], cur[k]
        mb, mc = _median(b), _median(c)
        rel, slack = _tolerances(name, tolerance, per_metric, abs_tolerance)
        head = f"{impl} {case} {trigger} {name} median: {_f(mb, unit)} -> {_f(mc, unit)}"
        ch = Change(
            impl, case, trigger, name, "median", mb, mc, False, "", n_baseline=len(b), n_current=len(c)
        )
        if min(len(b), len(c)) < out.min_repetitions:
            ch.verdict = INCONCLUSIVE
            ch.message = (
                f"{head}: inconclusive, too few repetitions ({len(b)} vs {len(c)}; "
                f"at least {out.min_repetitions} each)"
            )
            out.changes.append(ch)
            continue
        p = mann_whitney_p(c, b)
        ch.p_value = p
        up = math.inf if math.isinf(mb) else mb * (1 + rel) + slack
        down = mb * (1 - rel) - slack
        if math.isinf(mb):
            worse, better = False, not math.isinf(mc)
        else:
            worse, better = mc > up, mc < down
        significant = p < out.alpha
        band = f"tolerance +-{rel * 100:g}% + {_f(slack, unit)}"
        if significant and worse:
            ch.regressed, ch.verdict = True, REGRESSION
            ch.message = f"{head} ({_pct(mb, mc)}): regression, p = {p:.3g} < {out.alpha:g} and beyond {band}"
        elif significant and better:
            ch.verdict = IMPROVEMENT
            ch.message = (
                f"{head} ({_pct(mb, mc)}): improvement, p = {p:.3g} < {out.alpha:g} and beyond {band}"
            )
        else:
            why = f"p = {p:.3g} >= {out.alpha:g}" if not significant else f"within {band}"
            ch.message = f"{head} ({_pct(mb, mc)}): pass, {why}"
        out.changes.append(ch)


def _pct(b: float, c: float) -> str:
    if math.isinf(b) or math.isinf(c):
        return "never" if math.isinf(c) and not math.isinf(b) else ("from never" if math.isinf(b) else "+0%")
    d = c - b
    return f"{d / b * 100:+.1f}%" if b else ("+inf%" if d > 0 else "+0%")


def _stat_checks(
    base_all: Mapping[Key, Mapping[str, Any]],
    cur_all: Mapping[Key, Mapping[str, Any]],
    out: Comparison,
    stat: str,
    tolerance: float,
    per_metric: dict[str, float],
    abs_tolerance: float | None,
) -> None:
    """The metric checks by one statistic of the aggregate rows (``--stat``)."""
    base = {k: a for k, a in base_all.items() if metric(k[3]).compare}
    cur = {k: a for k, a in cur_all.items() if metric(k[3]).compare}
    for k in sorted(set(base) | set(cur)):
        impl, case, trigger, name = k
        m = metric(name)
        label = f"{impl} {case} {trigger} {name} {stat}"
        if k not in cur:
            b = statistic(base[k], stat)
            if b is not None:
                msg = f"{impl} {case} {trigger} {name}: missing from the current run"
                out.changes.append(Change(impl, case, trigger, name, stat, b, None, True, msg, "missing"))
            continue
        if k not in base:
            out.new_keys.append(f"{impl} {case} {trigger} {name}")
            continue
        b, c = statistic(base[k], stat), statistic(cur[k], stat)
        if c is None and b is None:
            continue
        rel, slack = _tolerances(name, tolerance, per_metric, abs_tolerance)
        if c is None:
            bad, msg = True, f"{label}: {_f(b, m.unit)} -> not measured"
        elif b is None:
            bad, msg = False, f"{label}: not measured -> {_f(c, m.unit)}"
        elif math.isinf(c) and not math.isinf(b):
            why = _never_reason(cur[k], stat)
            bad, msg = True, f"{label}: {_f(b, m.unit)} -> never ({why})"
        elif math.isinf(b):
            bad, msg = False, f"{label}: never -> {_f(c, m.unit)}"
        else:
            limit = b * (1 + rel) + slack
            bad = c > limit
            delta = c - b
            pct = f"{delta / b * 100:+.1f}%" if b else ("+inf%" if delta > 0 else "+0%")
            msg = (
                f"{label}: {_f(b, m.unit)} -> {_f(c, m.unit)} ({'+' if delta >= 0 else ''}{_f(delta, m.unit)}, "
                f"{pct}; allowed up to {_f(limit, m.unit)} = +{rel * 100:g}% + {_f(slack, m.unit)})"
            )
        nb, nc = int(base[k].get("m") or 0), int(cur[k].get("m") or 0)
        ch = Change(impl, case, trigger, name, stat, b, c, bad, msg, n_baseline=nb, n_current=nc)
        if not bad and min(nb, nc) < out.min_repetitions:
            ch.verdict = INCONCLUSIVE
            ch.message += (
                f"; inconclusive, too few repetitions ({nb} vs {nc}; at least {out.min_repetitions} each)"
            )
        out.changes.append(ch)


def _never_reason(a: Mapping[str, Any], stat: str) -> str:
    if stat == "mean":
        return f"no longer settles: {a.get('left_out')} of {a.get('m')} never, a mean cannot leave them out"
    return f"no longer settles: {a.get('never') or a.get('left_out')} of {a.get('n')} never"


def _f(v: float | None, unit: str) -> str:
    if v is None:
        return "—"
    if math.isinf(v):
        return "never"
    return fmt(round(v, 6), unit)


def _num(v: float | None) -> float | str | None:
    """A figure for JSON: ``"never"`` for +infinity (JSON has no infinity)."""
    if v is None:
        return None
    return "never" if math.isinf(v) else v


def run_seconds(m: Mapping[str, Any]) -> float | None:
    """How long the run of ``m`` took (``run.finished - run.started``: ISO times, or seconds in a
    simulated run), None when it does not say."""
    run = m.get("run") or {}
    started, finished = run.get("started"), run.get("finished")
    try:
        if isinstance(started, int | float) and isinstance(finished, int | float):
            seconds = float(finished) - float(started)
        elif isinstance(started, str) and isinstance(finished, str):
            seconds = (datetime.fromisoformat(finished) - datetime.fromisoformat(started)).total_seconds()
        else:
            return None
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def next_step(result: Comparison, baseline: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    """What to do after an inconclusive comparison, None when it was not inconclusive: which side had
    too few repetitions (the fewest usable ones among its inconclusive checks), the command that runs
    it again with ``min_repetitions``, and about how long that takes (the run's duration per planned
    repetition times ``min_repetitions``; the analysis included, as it was in the run's time)."""
    if result.verdict != INCONCLUSIVE:
        return None
    need = result.min_repetitions
    short = result.inconclusive
    sides = []
    for label, doc, counts in (
        ("the current run", current, [c.n_current for c in short]),
        ("the baseline", baseline, [c.n_baseline for c in short]),
    ):
        usable = min((n for n in counts if n is not None), default=None)
        if usable is None or usable >= need:
            continue
        planned = _repetitions(doc)
        seconds = run_seconds(doc)
        took = ""
        if seconds is not None and planned > 0:
            took = f", about {duration_text(seconds / planned * need)} with {need}"
        sides.append(f"{label} had {usable} usable of {planned}{took}")
    scenario = (current.get("run") or {}).get("scenario") or "SCENARIO"
    return (
        f"next: run again with at least {need} repetitions each (herdlab run {scenario} --set "
        f"repetitions={need}): " + "; ".join(sides or ["both sides had too few"]) + "; then compare again, "
        "or pass --inconclusive-ok to accept an inconclusive result"
    )


def properties(result: Comparison) -> dict[str, str]:
    """How the comparison was made: the test and its parameters, and the verdict."""
    return {
        "test": result.test,
        "alpha": f"{result.alpha:g}",
        "min_repetitions": str(result.min_repetitions),
        "tolerance": f"{result.tolerance:g}",
        "verdict": result.verdict,
    }


def to_json(result: Comparison) -> dict[str, Any]:
    """The ``--json`` document: the verdict, how it was reached and every check."""
    return {
        "verdict": result.verdict,
        "exit_code": result.exit_code,
        "test": result.test,
        "alpha": result.alpha,
        "min_repetitions": result.min_repetitions,
        "tolerance": result.tolerance,
        "counts": dict(Counter(c.verdict for c in result.changes)),
        "checks": [
            {
                "kind": c.kind,
                "verdict": c.verdict,
                "impl": c.impl,
                "case": c.case,
                "trigger": c.trigger,
                "metric": c.metric,
                "stat": c.stat,
                "baseline": _num(c.baseline),
                "current": _num(c.current),
                "p_value": c.p_value,
                "n_baseline": c.n_baseline,
                "n_current": c.n_current,
                "message": c.message,
            }
            for c in result.changes
        ],
        "new_metrics": list(result.new_keys),
    }


def junit_xml(result: Comparison, path: str | Path, suite: str = "herdlab-compare") -> Path:
    """Write ``result`` as JUnit XML: one testcase per check, a failure per regression, skipped per
    inconclusive check; the test, its parameters and the verdict as suite properties."""
    cases = []
    for c in result.changes:
        name = " ".join(x for x in (c.trigger, c.metric, c.stat) if x)
        status = {REGRESSION: "failure", INCONCLUSIVE: "skipped"}.get(c.verdict, "passed")
        cases.append(Case(classname(suite, c.impl, c.case), name, status, c.message, c.kind))
    return write_junit(path, suite, cases, properties(result))
