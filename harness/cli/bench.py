"""``herdlab bench ...``: benchmarks that print figures.

The benches live in :mod:`harness.bench`, one module per bench; :mod:`harness.cli` adds each one's
command to this group (``harness.bench.coordinator:coordinator`` is ``herdlab bench coordinator``,
``harness.bench.legacy_zk:legacy_zk`` is ``herdlab bench legacy_zk``, ``harness.bench.size:size`` is
``herdlab bench size``, and so on). Figures are measured
on the machine at hand; nothing is asserted.
"""

from __future__ import annotations

import click


@click.group()
def bench() -> None:
    """Benchmarks: run a measurement and print its figures."""
