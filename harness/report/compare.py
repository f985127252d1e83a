"""``herdlab compare``: a run's metrics against a baseline's, for regressions in CI.

Contract
--------
:func:`compare` matches the aggregates of two metrics dicts by (implementation, case, trigger key,
metric) for every metric whose :class:`~harness.analysis.definitions.Metric` says ``compare`` (lower
is better for all of them) and reports, per match, the chosen statistic (``p50`` by default) of
both and whether it regressed:

* ``current > baseline * (1 + rel) + abs`` is a regression; ``rel`` is ``--tolerance`` (default
  0.10, or per metric ``latency_s=0.25``), ``abs`` the metric's own slack (0.05 s for times, 1
  request for fractional broker counts, 0 for counts) unless ``--abs-tolerance`` says otherwise;
* a statistic that reads ``never`` (a trigger that did not settle) is +infinity: finite -> never is
  a regression, never -> finite an improvement;
* ``unit.lost`` is checked on its max: any lost record in the current run is a regression, whatever
  the baseline says;
* a key present in the baseline and missing from the current run is a regression ("missing").

Two runs of different scenarios, or without a single key in common, are incompatible:
:class:`~harness.errors.ConfigError`. :func:`junit_xml` writes the result as JUnit XML (one test
case per compared key) for CI.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.analysis.definitions import metric
from harness.errors import ConfigError
from harness.report.tables import fmt

DEFAULT_TOLERANCE = 0.10
STATISTICS = ("p50", "p95", "p99", "max", "mean")


@dataclass
class Change:
    """One compared key."""

    impl: str
    case: str
    trigger: str
    metric: str
    stat: str
    baseline: float | None  # math.inf = never
    current: float | None
    regressed: bool
    message: str

    @property
    def name(self) -> str:
        return f"{self.impl} {self.case} {self.trigger} {self.metric}"


@dataclass
class Comparison:
    """All compared keys; ``regressions`` is what makes ``herdlab compare`` exit non-zero."""

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


def _value(a: dict[str, Any] | None, stat: str) -> float | None:
    """The statistic, +inf for never, None when not measured."""
    if a is None:
        return None
    v = a.get(stat)
    if v is None:
        return math.inf if a.get("never") else None
    return float(v)


def _check(base: dict[str, Any], cur: dict[str, Any]) -> None:
    for name, m in (("baseline", base), ("current", cur)):
        if not str(m.get("format", "")).startswith("herdlab-metrics/"):
            raise ConfigError(f"incompatible {name}: not a herdlab metrics file")
    if base["format"] != cur["format"]:
        raise ConfigError(f"incompatible baseline: metrics format {base['format']} vs {cur['format']}")
    bs, cs = (base.get("run") or {}).get("scenario"), (cur.get("run") or {}).get("scenario")
    if bs != cs:
        raise ConfigError(f"incompatible baseline: scenario {bs!r} vs {cs!r}")


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

    base = {key(a): a for a in baseline.get("aggregates", []) if metric(key(a)[3]).compare}
    cur = {key(a): a for a in current.get("aggregates", []) if metric(key(a)[3]).compare}
    common = set(base) & set(cur)
    if base and cur and not common:
        raise ConfigError("incompatible baseline: no metric in common (different cases or implementations?)")
    out = Comparison()
    for k in sorted(set(base) | set(cur)):
        impl, case, trigger, name = k
        m = metric(name)
        s = "max" if name == "unit.lost" else stat
        if k not in cur:
            b = _value(base[k], s)
            if b is not None:
                out.changes.append(
                    Change(
                        impl,
                        case,
                        trigger,
                        name,
                        s,
                        b,
                        None,
                        True,
                        f"{impl} {case} {trigger} {name}: missing from the current run",
                    )
                )
            continue
        if k not in base:
            out.new_keys.append(f"{impl} {case} {trigger} {name}")
            continue
        b, c = _value(base[k], s), _value(cur[k], s)
        if c is None and b is None:
            continue
        rel = per_metric.get(name, per_metric.get(name.removeprefix("unit."), tolerance))
        slack = m.abs_tolerance if abs_tolerance is None else abs_tolerance
        label = f"{impl} {case} {trigger} {name} {s}"
        if name == "unit.lost":
            bad = bool(c)
            msg = f"{label}: {fmt(c)} records lost" + (" (must be 0)" if bad else "")
        elif c is None:
            bad, msg = True, f"{label}: {_f(b, m.unit)} -> not measured"
        elif b is None:
            bad, msg = False, f"{label}: not measured -> {_f(c, m.unit)}"
        elif math.isinf(c) and not math.isinf(b):
            bad, msg = True, f"{label}: {_f(b, m.unit)} -> never (no longer settles)"
        elif math.isinf(b):
            bad, msg = (
                False,
                f"{label}: never -> {_f(c, m.unit)}" if not math.isinf(c) else f"{label}: never -> never",
            )
        else:
            limit = b * (1 + rel) + slack
            bad = c > limit
            delta = c - b
            pct = f"{delta / b * 100:+.1f}%" if b else ("+inf%" if delta > 0 else "+0%")
            msg = (
                f"{label}: {_f(b, m.unit)} -> {_f(c, m.unit)} ({'+' if delta >= 0 else ''}{_f(delta, m.unit)}, {pct}; "
                f"allowed up to {_f(limit, m.unit)} = +{rel * 100:g}% + {_f(slack, m.unit)})"
            )
        out.changes.append(Change(impl, case, trigger, name, s, b, c, bad, msg))
    return out


def _f(v: float | None, unit: str) -> str:
    if v is None:
        return "—"
    if math.isinf(v):
        return "never"
    return fmt(round(v, 6), unit)


def junit_xml(result: Comparison, path: str | Path, suite: str = "herdlab-compare") -> Path:
    """Write ``result`` as JUnit XML: one testcase per compared key, a failure per regression."""
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
        tc = ET.SubElement(
            ts, "testcase", classname=f"{suite}.{c.impl}.{c.case}", name=f"{c.trigger} {c.metric} {c.stat}"
        )
        if c.regressed:
            f = ET.SubElement(tc, "failure", message=c.message, type="regression")
            f.text = c.message
        else:
            ET.SubElement(tc, "system-out").text = c.message
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(p, encoding="utf-8", xml_declaration=True)
    return p
