"""``herdlab bench coordinator``: moved to :mod:`harness.bench_coordinator` (it drives brokers and
members as processes, which is the harness's job; issue 12 keeps ``coordinator/`` free of harness
imports beyond :mod:`harness.kernel`).

This re-export only keeps the CLI's registration (``coordinator.bench:coordinator`` in
:mod:`harness.cli`) working; delete it once that registration names :mod:`harness.bench_coordinator`.
"""

from __future__ import annotations

from harness.bench_coordinator import coordinator

__all__ = ["coordinator"]
