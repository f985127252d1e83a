# pyright: strict
"""The nemesis's view of a running unit: :class:`UnitContext` implements
:class:`harness.faults.nemesis.NemesisContext` from the unit's rig (members, cluster, proxies) and its
waiter (observing the histories on the unit's clock)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.faults.kafka_probe import find_coordinator
from harness.faults.nemesis import MemberProcess, ProxyControl
from harness.run.observe import Waiter
from harness.run.rig import Rig, RigCluster


@dataclass
class UnitContext:
    """What a nemesis sees of the running unit (:class:`harness.faults.nemesis.NemesisContext`)."""

    rig: Rig
    waiter: Waiter
    impl: str
    unit_key: str
    logs_dir: Path
    stable_timeout: float
    topic: str
    group: str = ""

    @property
    def members(self) -> Mapping[str, MemberProcess]:
        return self.rig.members

    @property
    def cluster(self) -> RigCluster:
        assert self.rig.cluster is not None, "the cluster starts before the timeline"
        return self.rig.cluster

    @property
    def proxies(self) -> ProxyControl | None:
        return self.rig.proxies

    def start_member(
        self, name: str, kind: str | None = None, props: Mapping[str, str] | None = None
    ) -> None:
        self.rig.start_member(name, kind, props)

    def frozen(self, member: MemberProcess) -> bool:
        return self.rig.frozen(member)

    def wait(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        return self.waiter.wait(seconds, until)

    def ready_ns(self, name: str) -> int:
        return self.waiter.watch.ready.get(name, 0)

    def registration(self, name: str) -> tuple[int, str] | None:
        self.waiter.watch.observe()
        return self.waiter.watch.registration(name)

    def time_ns(self) -> int:
        return self.waiter.clock.time_ns()

    def coordinator(self, timeout: float) -> int | None:
        """The broker FindCoordinator names for the unit's group now (None: none within ``timeout``)."""
        return find_coordinator(self.cluster.bootstrap, self.group, timeout)
