"""The Service life cycle helpers of :mod:`harness.cluster.service` (no server involved).

A real child process stands in for a server in the :class:`ProcessService` tests: a Python one-liner
that writes a ready file (the probe), or exits at once (the early failure).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.cluster.service import ProcessService, Service, ServiceStack, await_ready, on_free_port
from harness.kernel.errors import Unreachable
from harness.procs import registry


class Recorder:
    """A Service that records its stop in a shared list (and can fail to stop)."""

    def __init__(self, name: str, stopped: list[str], fail: bool = False) -> None:
        self.name = name
        self.log_path: Path | None = None
        self.stopped = stopped
        self.fail = fail

    def start(self, timeout: float = 1.0) -> Recorder:
        return self

    def ready(self) -> bool:
        return True

    def stop(self) -> None:
        self.stopped.append(self.name)
        if self.fail:
            raise RuntimeError(f"{self.name} would not stop")


def test_await_ready_returns_once_the_probe_holds() -> None:
    answers = iter([False, OSError("refused"), False, True])

    def probe() -> bool:
        a = next(answers)
        if isinstance(a, OSError):
            raise a
        return a

    took = await_ready("svc", probe, lambda: None, lambda: "", timeout=10)
    assert took >= 0
    assert next(answers, "spent") == "spent"  # asked exactly four times


def test_await_ready_fails_early_with_the_reason_and_the_log_tail() -> None:
    with pytest.raises(Unreachable) as e:
        await_ready("svc x", lambda: False, lambda: "exited with status 3", lambda: "last line", timeout=60)
    assert str(e.value) == "svc x exited with status 3 before it was ready; log tail:\nlast line"


def test_await_ready_times_out_with_the_log_tail() -> None:
    with pytest.raises(Unreachable) as e:
        await_ready("svc", lambda: False, lambda: None, lambda: "tail", timeout=0.1)
    assert str(e.value) == "svc not ready after 0s; log tail:\ntail"


def test_on_free_port_retries_a_clash_only() -> None:
    calls: list[int] = []

    def clash_twice() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise Unreachable("bind: Address already in use")
        return "up"

    assert on_free_port(clash_twice, attempts=3) == "up" and len(calls) == 3
    calls.clear()
    with pytest.raises(Unreachable, match="in use"):
        on_free_port(clash_twice, attempts=2)  # the last clash is raised
    assert len(calls) == 2

    other: list[int] = []

    def broken() -> str:
        other.append(1)
        raise Unreachable("exited with status 1")

    with pytest.raises(Unreachable, match="status 1"):
        on_free_port(broken, attempts=3)
    assert len(other) == 1  # not a clash: no retry


def test_stack_stops_newest_first_every_one_and_reraises_the_first_error() -> None:
    stopped: list[str] = []
    stack = ServiceStack()
    for name, fail in (("zookeeper", False), ("broker-0", True), ("broker-1", False), ("member", True)):
        stack.push(Recorder(name, stopped, fail))
    assert [s.name for s in stack] == ["zookeeper", "broker-0", "broker-1", "member"]
    with pytest.raises(RuntimeError, match="member would not stop"):
        stack.stop_all()
    assert stopped == ["member", "broker-1", "broker-0", "zookeeper"]
    stack.stop_all()  # idempotent: nothing held any more
    assert len(stack) == 0 and len(stopped) == 4


def test_stack_stop_all_with_a_custom_stop() -> None:
    stopped: list[str] = []
    stack = ServiceStack()
    stack.push(Recorder("a", stopped))
    stack.push(Recorder("b", stopped))
    stack.stop_all(lambda s: stopped.append(f"custom {s.name}"))
    assert stopped == ["custom b", "custom a"]


class FileReady(ProcessService):
    """A child that writes ``ready`` after start: the smallest ProcessService."""

    def __init__(self, workdir: Path, code: str) -> None:
        self.name = "file-ready"
        self.workdir = workdir
        self.code = code
        self.process = None

    @property
    def log_path(self) -> Path:
        return self.workdir / "child.log"

    def ready(self) -> bool:
        return (self.workdir / "ready").exists()

    def start(self, timeout: float = 10.0) -> FileReady:
        self._spawn_ready([sys.executable, "-c", self.code], "file-ready", timeout)
        return self

    def stop(self) -> None:
        self.stop_process(grace=2.0)


def test_process_service_spawns_waits_and_stops(tmp_path: Path) -> None:
    code = f"import pathlib, time; pathlib.Path({str(tmp_path / 'ready')!r}).touch(); time.sleep(60)"
    svc = FileReady(tmp_path, code)
    assert isinstance(svc, Service)
    svc.start()
    assert svc.alive() and svc.process in registry.children()
    svc.stop()
    svc.stop()  # idempotent
    assert not svc.alive() and svc.process not in registry.children()


def test_process_service_that_exits_first_is_unreachable_with_its_log(tmp_path: Path) -> None:
    svc = FileReady(tmp_path, "import sys; print('no config here'); sys.exit(4)")
    with pytest.raises(Unreachable) as e:
        svc.start()
    assert str(e.value).startswith("file-ready exited with status 4 before it was ready")
    assert "no config here" in str(e.value)
    assert not svc.alive() and svc.process not in registry.children()
