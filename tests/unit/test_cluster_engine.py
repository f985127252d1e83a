"""Pure parts of the containers backend: Box naming and labels, exit reasons, Service conformance.

Nothing here talks to a Docker engine (the engine tests are in tests/integration/containers).
"""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

from harness.cluster.container_services import (
    BrokerContainer,
    MemberContainer,
    ZooKeeperContainer,
)
from harness.cluster.engine import SESSION, Box, box_exited, uid_gid
from harness.cluster.service import Service


class FakeBox:
    def __init__(self, status: str, code: int | None) -> None:
        self._status = status
        self._code = code

    def status(self) -> str:
        return self._status

    def exit_code(self) -> int | None:
        return self._code


def test_box_name_is_sanitized_and_carries_the_session() -> None:
    box = Box("img", role="broker", name="u0 / broker:0")
    assert box.name == f"herdlab-u0-broker-0-{SESSION}"


def test_box_labels_ours_win_over_the_callers() -> None:
    box = Box(
        "img",
        role="member",
        name="m",
        labels={"herdlab.run": "r1", "herdlab.session": "forged", "herdlab.role": "x", "n": 3},  # type: ignore[dict-item]
    )
    assert box.labels == {
        "herdlab": "1",
        "herdlab.run": "r1",
        "n": "3",
        "herdlab.session": SESSION,
        "herdlab.owner": f"{socket.gethostname()}:{os.getpid()}",
        "herdlab.role": "member",
    }
    assert box.status() == "removed" and not box.alive()  # never started: nothing in the engine


def test_box_exited_says_why_only_once_the_container_cannot_serve() -> None:
    for status in ("created", "running", "restarting"):
        assert box_exited(FakeBox(status, None)) is None  # type: ignore[arg-type]
    assert box_exited(FakeBox("exited", 137)) == "is exited (exit code 137)"  # type: ignore[arg-type]
    assert box_exited(FakeBox("removed", None)) == "is removed (exit code None)"  # type: ignore[arg-type]


def test_uid_gid_is_this_process() -> None:
    assert uid_gid() == f"{os.getuid()}:{os.getgid()}"


def test_every_container_service_is_a_service(tmp_path: Path) -> None:
    zk = ZooKeeperContainer("zk-image")
    broker = BrokerContainer("herdlab-image", 0, "127.0.0.1:2181", tmp_path / "broker-0")
    member = MemberContainer(Box("herdlab-image", "member", "m0", log_path=tmp_path / "m0.log"), "m0")
    for s in (zk, broker, member):
        assert isinstance(s, Service)
        assert not s.ready()  # not started
        s.stop()  # idempotent and safe before start
        s.stop()
    assert zk.log_path is None  # no workdir before start
    assert broker.log_path == tmp_path / "broker-0/broker.log"
    assert member.log_path == tmp_path / "m0.log"


class FlakyEngineBox:
    """A box whose engine misreads the status (a timed-out reload reads as ``removed``) and refuses
    the first unpause, as a loaded Docker engine can."""

    def __init__(self) -> None:
        self.state = "running"
        self.reads = ["removed"]  # the next status reads that fail
        self.unpause_failures = 1
        self.calls: list[str] = []

    def status(self) -> str:
        return self.reads.pop(0) if self.reads else self.state

    def pause(self) -> None:
        self.calls.append("pause")
        if self.status() == "running":
            self.state = "paused"

    def unpause(self) -> None:
        self.calls.append("unpause")
        if self.unpause_failures:
            self.unpause_failures -= 1
            raise RuntimeError("engine busy")
        if self.status() == "paused":
            self.state = "running"

    def alive(self) -> bool:
        return self.state in ("running", "paused")


def test_a_member_containers_pause_and_unpause_are_asked_again_until_the_engine_agrees() -> None:
    box = FlakyEngineBox()
    member = MemberContainer.__new__(MemberContainer)
    member.box, member.name = box, "m0"  # type: ignore[assignment]
    member.signal(signal.SIGSTOP)  # the first status read fails: pause skipped, then asked again
    assert box.state == "paused" and box.calls == ["pause", "pause"]
    member.signal(signal.SIGCONT)  # the engine refuses the first unpause
    assert box.state == "running" and box.calls[2:] == ["unpause", "unpause"]
