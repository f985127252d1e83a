"""The report of a simulated run says so: one banner line, at the top of every form of the report.

Contract
--------
:func:`annotate` copies a simulated run's manifest fields (``simulated``, ``delay_model_text``,
``delay_model``) into ``metrics["run"]["simulation"]`` (so ``metrics.json`` says it too); a real run's
metrics are left as they are. :func:`banner` is the banner's text for a simulated run's metrics, None
for a real run. Markdown, HTML and the terminal print it first.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, cast

from harness.analysis.metrics_model import MetricsDocument

__all__ = ["annotate", "banner"]


def annotate(run_dir: str | Path, metrics: MetricsDocument) -> None:
    """Mark ``metrics`` as a simulation when ``run_dir``'s manifest says it is one."""
    try:
        manifest = json.loads((Path(run_dir) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(manifest, dict) or not manifest.get("simulated"):
        return
    run = cast("MutableMapping[str, Any]", metrics).setdefault("run", {})  # a document read back may lack it
    run["simulation"] = {
        "simulated": True,
        "model": manifest.get("delay_model_text"),
        "delay_model": manifest.get("delay_model"),
        "options": manifest.get("sim_options") or {},
    }


def banner(metrics: MetricsDocument) -> str | None:
    """The banner of a simulated run (None for a real one)."""
    sim = (metrics.get("run") or {}).get("simulation")
    if not sim:
        return None
    return (
        "SIMULATION: this run was not measured on real processes. herdlab's simulator drove the same "
        "pure cores (legacy_zk's rebalance against an in-memory ZooKeeper, the GroupCoordinator state "
        "machine, the consumer protocol's ConsumerGroupCoordinator, the assignors) in virtual time; every delay "
        "comes from its stated model: "
        f"{sim.get('model') or '(model not recorded)'}"
        + (f"; simulator options: {_options(sim['options'])}" if sim.get("options") else "")
        + ". Where the model departs from a real run: docs/simulator.md."
    )


def _options(options: dict[str, Any]) -> str:
    """The options in a line; the fluid server's threshold said in words."""
    text = ", ".join(f"{k}={v}" for k, v in sorted(options.items()))
    if "fluid_from" in options:
        text += (
            f" (from {options['fluid_from']} legacy members ZooKeeper is a fluid server: bursts of reads "
            "processor-shared)"
        )
    return text
