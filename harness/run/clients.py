"""The client programs a run's members need: checked before anything starts, built before the first unit.

Contract
--------
* :func:`case_clients`: the (client, version) pairs the coordinator members of ``cases`` run on (those of
  consumer units too), and their legacy members' client other than herdlab's own (``kafka-0.8.2.2``),
  each once, in the cases' order (version None: the client's default).
* :func:`check_clients`: a one-line :class:`ConfigError` naming the client and what this machine lacks to
  run or build it (no JDK, no Go toolchain, no Maven: :func:`~harness.members.clients.registry.missing_for`);
  ``herdlab run`` and ``herdlab scenarios check`` call it before anything starts.
* :func:`build_clients`: builds each needed program that is built at set-up (idempotent: a built version
  costs a file check), progress lines to ``echo``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from harness.kernel.errors import ConfigError
from harness.members.clients.registry import ChildClient, client_spec, missing_for
from harness.scenario.loading import Case


def case_clients(cases: Sequence[Case]) -> list[tuple[str, str | None]]:
    """The (client, version) pairs of the members of ``cases`` that run on a client of their own (see the
    module contract); a consumer unit's members are coordinator members on ``[group.consumer]``'s client
    and version."""
    out: list[tuple[str, str | None]] = []
    for case in cases:
        s = case.scenario
        pairs = []
        if "coordinator" in s.implementations:
            pairs.append((s.group.coordinator.client, s.group.coordinator.client_version))
        if "consumer" in s.implementations:
            pairs.append((s.group.consumer.client, s.group.consumer.effective_version))
        if "legacy_zk" in s.implementations and s.group.legacy_zk.client != "python":
            pairs.append((s.group.legacy_zk.client, None))
        for pair in pairs:
            if pair not in out:
                out.append(pair)
    return out


def check_clients(cases: Sequence[Case]) -> None:
    """ConfigError when this machine cannot run or build a client ``cases`` need."""
    for client, version in case_clients(cases):
        if why := missing_for(client, version):
            raise ConfigError(why)


def build_clients(cases: Sequence[Case], echo: Callable[[str], None] | None = None) -> None:
    """Build every program ``cases`` need that is built at set-up (see the module contract)."""
    for client, version in case_clients(cases):
        spec = client_spec(client)
        if isinstance(spec, ChildClient) and spec.build is not None:
            spec.build(version, echo)
