"""JUnit XML for CI: ``herdlab compare --junit`` and ``herdlab run --junit``.

Contract
--------
* :func:`write_junit`: one ``<testsuites>`` with one ``<testsuite>`` (its ``tests``, ``failures``,
  ``errors`` = 0 and ``skipped`` counts, and ``<properties>`` when given) and one ``<testcase>`` per
  :class:`Case`: a ``<failure message type>`` for a failed case, ``<skipped message>`` for a skipped
  one, the message as ``<system-out>`` for a passed one. Parent directories are created.
* :func:`run_cases`: a run's units as test cases, one per unit (``classname``
  ``herdlab-run.IMPL.CASE``, name ``rep N``): **failure** when the unit failed, when any of its
  triggers never settled (outcome ``never``), or when it lost records (``lost`` > 0); every reason is
  in the message. From the units of ``metrics.json`` when the run was analysed; from the session's
  units (which know only ``failed``) otherwise, and then the suite's property ``analysed`` is
  ``false``: a passed case then says only that the unit ran.
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
    """One JUnit test case: ``status`` is ``failure``, ``skipped`` or ``passed``."""

    classname: str
    name: str
    status: str
    message: str
    kind: str = ""


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
    )
    if properties:
        props = ET.SubElement(ts, "properties")
        for k, v in properties.items():
            ET.SubElement(props, "property", name=k, value=v)
    for c in cases:
        tc = ET.SubElement(ts, "testcase", classname=c.classname, name=c.name)
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


def run_cases(units: Sequence[Mapping[str, Any]], analysed: bool, suite: str = "herdlab-run") -> list[Case]:
    """One :class:`Case` per unit (see the contract)."""
    cases = []
    for u in units:
        problems = []
        if u.get("failed"):
            problems.append(f"the unit failed: {u['failed']}")
        never = [t.get("key", "?") for t in u.get("triggers") or [] if t.get("outcome") == "never"]
        if never:
            problems.append(f"trigger{'s' if len(never) > 1 else ''} {', '.join(never)} never settled")
        if u.get("lost"):
            problems.append(f"{u['lost']} records lost (acknowledged offsets skipped)")
        name = f"{u['impl']} {u['case']} rep {u['repetition']}"
        classname = f"{suite}.{u['impl']}.{u['case']}"
        if problems:
            cases.append(Case(classname, f"rep {u['repetition']}", FAILURE, f"{name}: {'; '.join(problems)}"))
        else:
            ok = "no failure, every trigger settled or had no effect, no record lost" if analysed else "ran"
            cases.append(Case(classname, f"rep {u['repetition']}", PASSED, f"{name}: {ok}"))
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
