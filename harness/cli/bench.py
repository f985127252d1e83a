"""``herdlab bench ...``: benchmarks that print figures.

Each part registers its own command here: ``harness.bench_coordinator:coordinator`` (``herdlab bench
coordinator``), ``harness.bench_legacy_zk:legacy_zk`` (``herdlab bench legacy_zk``), ``harness.bench.zookeeper`` (``herdlab
bench zookeeper``). Figures are measured on the machine at hand; nothing is asserted.
"""

from __future__ import annotations

import click


@click.group()
def bench() -> None:
    """Benchmarks: run a measurement and print its figures."""
