"""The samples over repetitions that the aggregates, the verdict, the comparison and the reports share.

Contract
--------
* :func:`trigger_sample`: the sample of one metric over one trigger's repetitions (the rule of
  :mod:`harness.analysis.definitions`, "statistics over repetitions"): skipped triggers never count;
  for censored (latency) metrics no_effect ones do not either and never counts as +infinity; for the
  others a missing value (not measured) is left out.
* :func:`outcome`: a trigger's outcome, older documents' ``settled`` flag read as one.
* :func:`case_order`: a case's position in the scenario; :func:`unit_name`: a unit's one-line name.
* :data:`BREAKDOWNS`, :func:`breakdown_metric`, :func:`breakdown_op`: the per-operation / per-API
  rows' names.

Pure Python, no Spark.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from harness.analysis.definitions import Metric
from harness.kernel.events import NEVER, NO_EFFECT, SETTLED, SKIPPED

#: Per-operation / per-API maps of a trigger, and the metric whose breakdown each is.
BREAKDOWNS = (("zk_requests_by_op", "zk_requests"), ("broker_requests_by_api", "broker_group_requests"))


def breakdown_metric(parent: str, op: str) -> str:
    """The aggregate row name of one operation of a breakdown: ``broker_group_requests[JoinGroup]``."""
    return f"{parent}[{op}]"


def breakdown_op(name: str, parent: str) -> str | None:
    """The operation of a :func:`breakdown_metric` row name of ``parent``; None for any other name."""
    prefix = parent + "["
    return name[len(prefix) : -1] if name.startswith(prefix) and name.endswith("]") else None


def case_order(label: str, cases: Sequence[Mapping[str, Any]]) -> int:
    """A case's position in the scenario (unknown labels last)."""
    for c in cases:
        if c.get("label") == label:
            return int(c.get("index") or 0)
    return 10**6


def outcome(t: Mapping[str, Any]) -> str:
    """A trigger's outcome (``settled`` | ``never`` | ``no_effect`` | ``skipped``); a trigger dict
    without one (an older checker) is settled when ``settled`` is true, else never."""
    o = t.get("outcome")
    if o in (SETTLED, NEVER, NO_EFFECT, SKIPPED):
        return str(o)
    return SETTLED if t.get("settled") else NEVER


def trigger_sample(m: Metric, triggers: Sequence[Mapping[str, Any]], name: str | None = None) -> list[float]:
    """The sample of metric ``m`` (value under ``name``, default ``m.name``) over one trigger's
    repetitions: skipped triggers never count; for censored (latency) metrics no_effect ones do not
    either, and never (or a missing value) counts as +infinity; for other metrics missing values
    (not measured) are left out."""
    key = name or m.name
    out: list[float] = []
    for t in triggers:
        o = outcome(t)
        if o == SKIPPED:
            continue
        v = t.get(key)
        if m.censored:
            if o == NO_EFFECT:
                continue
            out.append(math.inf if o == NEVER or v is None else float(v))
        elif v is not None:
            out.append(float(v))
    return out


def unit_name(u: Mapping[str, Any]) -> str:
    """``legacy_zk members=4 rep 0``."""
    return f"{u['impl']} {u['case']} rep {u['repetition']}"
