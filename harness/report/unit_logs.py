"""Where each unit's logs are, for the report's links (Markdown and HTML).

A run directory keeps each unit's files in ``units/c<case index>-<impl>-r<repetition>/`` (the
runner's unit key, :class:`harness.run.runner.Unit`), its process logs in ``logs/`` below it. The
reports live in the run directory, so the links are relative: ``units/c0-legacy_zk-r0/logs/``.
:func:`log_links` lists (unit name, relative path) per unit of the metrics, in their order; none
for a simulation (the simulator runs no process, it writes no logs) and none for a unit whose case
label is not among the metrics' cases (its key cannot be known).
"""

from __future__ import annotations

from harness.analysis.metrics_model import MetricsDocument
from harness.analysis.samples import unit_name


def unit_dir(case_index: int, impl: str, repetition: int) -> str:
    """A unit's directory relative to the run directory (the runner's unit key)."""
    return f"units/c{case_index}-{impl}-r{repetition}"


def log_links(metrics: MetricsDocument) -> list[tuple[str, str]]:
    """(unit name, ``units/<key>/logs/``) per unit (see the module docstring)."""
    if ((metrics.get("run") or {}).get("simulation") or {}).get("simulated"):
        return []
    index = {c.get("label"): c.get("index") for c in metrics.get("cases") or []}
    out = []
    for u in metrics.get("units") or []:
        i = index.get(u.get("case"))
        if i is None:
            continue
        out.append((unit_name(u), f"{unit_dir(int(i), u['impl'], int(u['repetition']))}/logs/"))
    return out
