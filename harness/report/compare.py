"""``herdlab compare``: a run's metrics against a baseline's, for regressions in CI.

Contract
--------
:func:`compare` returns every check it made as a :class:`Change`; each regression has its own
``kind`` and message, and any regression makes ``herdlab compare`` exit 1:

* ``lost`` / ``not_drained``: any unit of CURRENT with a lost record (a skip) or an undrained tail,
  whatever the baseline says;
* ``failed``: a unit of CURRENT that failed; ``interrupted``: CURRENT was interrupted;
* ``repetitions``: CURRENT ran fewer repetitions than the baseline (``run.repetitions``, else the
  most units of any implementation and case); ``missing_unit``: a (case, implementation, repetition)
  of the baseline, within CURRENT's repetitions, that CURRENT lacks;
* ``never``: per implementation, case and trigger, more repetitions that never settled (or had no
  effect) than in the baseline, whatever the statistics say: a latency statistic can stay finite
  while the never count rises;
* ``stat``: per aggregate row (implementation, case, trigger key, metric) of every metric whose
  :class:`~harness.analysis.definitions.Metric` says ``compare`` (lower is better for all), the chosen
  statistic (``p50`` by default, via :func:`harness.analysis.stats.statistic`): ``current > baseline
  * (1 + rel) + abs`` is a regression; ``rel`` is ``--tolerance`` (default 0.10, or per metric
  ``latency_s=0.25``), ``abs`` the metric's own slack (0.05 s for times, 0 for counts) unless
  ``--abs-tolerance`` says otherwise. A statistic that reads never is +infinity (finite -> never is a
  regression, never -> finite an improvement); ``mean`` reads never when its row left any never
  out, so ``--stat mean`` cannot hide a repetition that never settled;
* ``missing``: an aggregate row of the baseline that CURRENT lacks.

Two runs of different scenarios or metrics formats, or without an aggregate row in common, are
incompatible: :class:`~harness.kernel.errors.ConfigError`. :func:`junit_xml` writes the result as JUnit XML
(one test case per check) for CI.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.analysis.definitions import metric
from harness.analysis.stats import STATISTICS, statistic
from harness.kernel.errors import ConfigError
from harness.report.tables import fmt

DEFAULT_TOLERANCE = 0.10
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


@dataclass
class Change:
    """One check: an aggregate row (``kind`` ``stat`` / ``missing``), a trigger's outcomes
    (``never``), a unit (``lost``, ``not_drained``, ``failed``, ``missing_unit``) or the run
    (``repetitions``, ``interrupted``; impl, case and trigger empty)."""

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

    @property
    def name(self) -> str:
        return " ".join(x for x in (self.impl, self.case, self.trigger, self.metric) if x)


@dataclass
class Comparison:
    """All checks; ``regressions`` is what makes ``herdlab compare`` exit non-zero."""

    changes: list[Change] = field(default_factory=list)
    new_keys: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.regressed]


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


def _check(base: dict[str, Any], cur: dict[str, Any]) -> None:
    for name, m in (("baseline", base), ("current", cur)):
        if not str(m.get("format", "")).startswith("herdlab-metrics/"):
            raise ConfigError(f"incompatible {name}: not a herdlab metrics file")
    if base["format"] != cur["format"]:
        raise ConfigError(f"incompatible baseline: metrics format {base['format']} vs {cur['format']}")
    bs, cs = (base.get("run") or {}).get("scenario"), (cur.get("run") or {}).get("scenario")
    if bs != cs:
        raise ConfigError(f"incompatible baseline: scenario {bs!r} vs {cs!r}")


def _unit(u: dict[str, Any]) -> str:
    return f"{u['impl']} {u['case']} rep {u['repetition']}"


def _repetitions(m: dict[str, Any]) -> int:
    """Planned repetitions: ``run.repetitions``, else the most units of any implementation and case."""
    r = (m.get("run") or {}).get("repetitions")
    if isinstance(r, int):
        return r
    per = Counter((u["impl"], u["case"]) for u in m.get("units") or [])
    return max(per.values(), default=0)


def _run_checks(baseline: dict[str, Any], current: dict[str, Any], out: Comparison) -> None:
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
    base: dict[tuple[str, ...], dict[str, Any]], cur: dict[tuple[str, ...], dict[str, Any]], out: Comparison
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


def compare(
    baseline: dict[str, Any],
    current: dict[str, Any],
    tolerance: float = DEFAULT_TOLERANCE,
    per_metric: dict[str, float] | None = None,
    stat: str = "p50",
    abs_tolerance: float | None = None,
) -> Comparison:
    """Compare ``current`` against ``baseline`` (see the module contract)."""
    if stat not in STATISTICS:
        raise ConfigError(f"unknown statistic {stat!r} (known: {', '.join(STATISTICS)})")
    _check(baseline, current)
    per_metric = per_metric or {}

    def key(a: dict[str, Any]) -> tuple[str, str, str, str]:
        name = f"unit.{a['metric']}" if a["trigger"] == "unit" else a["metric"]
        return (a["impl"], a["case"], a["trigger"], name)

    base_all = {key(a): a for a in baseline.get("aggregates", [])}
    cur_all = {key(a): a for a in current.get("aggregates", [])}
    if base_all and cur_all and not set(base_all) & set(cur_all):
        raise ConfigError("incompatible baseline: no metric in common (different cases or implementations?)")
    out = Comparison()
    _run_checks(baseline, current, out)
    _outcome_checks(base_all, cur_all, out)
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
        rel = per_metric.get(name, per_metric.get(name.removeprefix("unit."), tolerance))
        slack = m.abs_tolerance if abs_tolerance is None else abs_tolerance
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
        out.changes.append(Change(impl, case, trigger, name, stat, b, c, bad, msg))
    return out


def _never_reason(a: dict[str, Any], stat: str) -> str:
    if stat == "mean":
        return f"no longer settles: {a.get('left_out')} of {a.get('m')} never, a mean cannot leave them out"
    return f"no longer settles: {a.get('never') or a.get('left_out')} of {a.get('n')} never"


def _f(v: float | None, unit: str) -> str:
    if v is None:
        return "—"
    if math.isinf(v):
        return "never"
    return fmt(round(v, 6), unit)


def junit_xml(result: Comparison, path: str | Path, suite: str = "herdlab-compare") -> Path:
    """Write ``result`` as JUnit XML: one testcase per check, a failure per regression."""
    root = ET.Element("testsuites")
    ts = ET.SubElement(
        root,
        "testsuite",
        name=suite,
        tests=str(len(result.changes)),
        failures=str(len(result.regressions)),
        errors="0",
        skipped="0",
    )
    for c in result.changes:
        classname = ".".join(x for x in (suite, c.impl, c.case) if x)
        name = " ".join(x for x in (c.trigger, c.metric, c.stat) if x)
        tc = ET.SubElement(ts, "testcase", classname=classname, name=name)
        if c.regressed:
            f = ET.SubElement(tc, "failure", message=c.message, type=c.kind)
            f.text = c.message
        else:
            ET.SubElement(tc, "system-out").text = c.message
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(p, encoding="utf-8", xml_declaration=True)
    return p
