"""JUnit XML for CI: ``herdlab compare --junit`` and ``herdlab run --junit``.

Contract
--------
* :func:`write_junit`: one ``<testsuites>`` with one ``<testsuite>`` (its ``tests``, ``failures``,
  ``errors`` = 0 and ``skipped`` counts, and ``<properties>`` when given) and one ``<testcase>`` per
  :class:`Case`: a ``<failure message type>`` for a failed case, ``<skipped message>`` for a skipped
  one, the message as ``<system-out>`` for a passed one. Parent directories are created.
* Class names hold no dot (CI tools read dots as package separators): :func:`classname` joins its parts
  with spaces and writes a dot inside a part (``group.members=4``) as ``_``. Every ``<testcase>`` has a
  ``time`` (seconds) and the suite the sum of them.
* :func:`run_cases`: a run's results as test cases, one per (implementation, case, trigger key) over
  the repetitions (classname ``herdlab-run IMPL CASE``, name the trigger key, e.g. ``#1 join``): a
  **failure** when the trigger never settled (outcome ``never``) in any repetition, naming them; its
  ``time`` is the sum of its settled repetitions' latencies. Beside them one case per (implementation,
  case) named ``unit`` for what belongs to the unit: a **failure** when a unit failed or lost records
  (``lost`` > 0), every reason in the message; its ``time`` is 0 (a unit's wall time is not recorded).
  From the units of ``metrics.json`` when the run was analysed; from the session's units (which know
  only ``failed``, so only the ``unit`` cases) otherwise, and then the suite's property ``analysed``
  is ``false``: a passed case then says only that the units ran.
* :func:`write_run_junit`: :func:`run_cases` of a run directory written with :func:`write_junit`
  (suite ``herdlab-run``, properties: run id, scenario, analysed).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FAILURE, SKIPPED, PASSED = "failure", "skipped", "passed"


@dataclass
class Case:
    """One JUnit test case: ``status`` is ``failure``, ``skipped`` or ``passed``; ``time`` in seconds."""

    classname: str
    name: str
    status: str
    message: str
    kind: str = ""
    time: float = 0.0


def classname(*parts: str) -> str:
    """A class name without dots (see the contract): ``("herdlab-run", "legacy_zk", "group.members=4")``
    -> ``herdlab-run legacy_zk group_members=4``."""
    return " ".join(p.replace(".", "_") for p in parts if p)


def write_junit(
    path: str | Path, suite: str, cases: list[Case], properties: dict[str, str] | None = None
) -> Path:
    """Write ``cases`` as one JUnit test suite named ``suite`` to ``path`` (see the contract)."""
    root = ET.Element("testsuites")
    ts = ET.SubElement(
        root,
        "testsuite",
        name=suite,
        tests=str(len(cases)),
        failures=str(sum(c.status == FAILURE for c in cases)),
        errors="0",
        skipped=str(sum(c.status == SKIPPED for c in cases)),
        time=_seconds(sum(c.time for c in cases)),
    )
    if properties:
        props = ET.SubElement(ts, "properties")
        for k, v in properties.items():
            ET.SubElement(props, "property", name=k, value=v)
    for c in cases:
        tc = ET.SubElement(ts, "testcase", classname=c.classname, name=c.name, time=_seconds(c.time))
        if c.status == FAILURE:
            f = ET.SubElement(tc, "failure", message=c.message, type=c.kind or "failure")
            f.text = c.message
        elif c.status == SKIPPED:
            ET.SubElement(tc, "skipped", message=c.message)
        else:
            ET.SubElement(tc, "system-out").text = c.message
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(p, encoding="utf-8", xml_declaration=True)
    return p


def _seconds(t: float) -> str:
    return f"{t:.3f}"


def run_cases(units: Sequence[Mapping[str, Any]], analysed: bool, suite: str = "herdlab-run") -> list[Case]:
    """One :class:`Case` per (implementation, case, trigger key) and one ``unit`` case per
    (implementation, case), in the units' order (see the contract)."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for u in units:
        groups.setdefault((str(u["impl"]), str(u["case"])), []).append(u)
    cases = []
    for (impl, case), mine in groups.items():
        cls = classname(suite, impl, case)
        triggers: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
        for u in mine:
            for t in u.get("triggers") or []:
                triggers.setdefault(str(t.get("key", "?")), []).append((int(u["repetition"]), t))
        for key, seen in triggers.items():
            never = [rep for rep, t in seen if t.get("outcome") == "never"]
            took = sum(float(t.get("latency_s") or 0.0) for _, t in seen if t.get("outcome") == "settled")
            head = f"{impl} {case} {key}"
            if never:
                reps = ", ".join(str(r) for r in never)
                msg = f"{head}: never settled in rep {reps} (of {len(seen)})"
                cases.append(Case(cls, key, FAILURE, msg, "never", took))
            else:
                msg = f"{head}: settled or had no effect in all {len(seen)} repetitions"
                cases.append(Case(cls, key, PASSED, msg, time=took))
        problems = []
        for u in mine:
            if u.get("failed"):
                problems.append(f"rep {u['repetition']}: the unit failed: {u['failed']}")
            if u.get("lost"):
                problems.append(
                    f"rep {u['repetition']}: {u['lost']} records lost (acknowledged offsets skipped)"
                )
        if problems:
            cases.append(Case(cls, "unit", FAILURE, f"{impl} {case}: {'; '.join(problems)}"))
        else:
            ok = "no unit failed, no record lost" if analysed else "every unit ran"
            cases.append(Case(cls, "unit", PASSED, f"{impl} {case}: {ok} ({len(mine)} repetitions)"))
    return cases


def write_run_junit(path: str | Path, run_dir: Path, session_units: list[dict[str, Any]]) -> Path:
    """Write the JUnit XML of the run in ``run_dir`` (see the contract); ``session_units`` are the
    session's units (case, impl, repetition, failed) used when the run has no ``metrics.json``."""
    metrics_path = Path(run_dir) / "metrics.json"
    run: dict[str, Any] = {}
    if metrics_path.is_file():
        m = json.loads(metrics_path.read_text(encoding="utf-8"))
        units, analysed, run = list(m.get("units") or []), True, dict(m.get("run") or {})
    else:
        units, analysed = session_units, False
    props = {
        "run_id": str(run.get("run_id") or Path(run_dir).name),
        "scenario": str(run.get("scenario") or ""),
        "analysed": "true" if analysed else "false",
    }
    return write_junit(path, "herdlab-run", run_cases(units, analysed), props)
