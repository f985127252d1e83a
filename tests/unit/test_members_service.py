"""The one history tail (a file or a directory, torn lines kept for the next poll), the one fold of
it (GroupWatch) and the member handle's Service lifecycle (start / ready / stop) on small real child processes."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

from harness.kernel.errors import HerdlabError, Unreachable
from harness.run.launch import MemberService
from harness.run.tail import GroupWatch, HistoryTail


def _line(ts_ns: int, kind: str, source: str = "m0", **kw: object) -> bytes:
    return (
        json.dumps({"ts_ns": ts_ns, "kind": kind, "source": source, "role": "member", **kw}) + "\n"
    ).encode()


def test_tail_returns_only_complete_new_lines_of_a_directory_sorted_by_time(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "sub" / "b.jsonl"
    a.write_bytes(_line(30, "ready", "a") + _line(10, "started", "a")[:-5])  # the second line is torn
    tail = HistoryTail(tmp_path)
    assert [(e["ts_ns"], e["kind"]) for e in tail.poll()] == [(30, "ready")]
    with open(a, "ab") as f:
        f.write(_line(10, "started", "a")[-5:])  # the torn line completes
    b.parent.mkdir()
    b.write_bytes(_line(20, "ready", "b"))  # a file that appears later
    assert [(e["ts_ns"], e["source"]) for e in tail.poll()] == [(10, "a"), (20, "b")]
    assert tail.poll() == []


def test_tail_of_one_file_ignores_its_neighbours(tmp_path: Path) -> None:
    (tmp_path / "m0.jsonl").write_bytes(_line(1, "ready", "m0"))
    (tmp_path / "m1.jsonl").write_bytes(_line(2, "ready", "m1"))
    assert [e["source"] for e in HistoryTail(tmp_path / "m0.jsonl").poll()] == ["m0"]
    assert HistoryTail(tmp_path / "absent.jsonl").poll() == []


def test_group_watch_folds_ready_reactions_and_gave_up(tmp_path: Path) -> None:
    (tmp_path / "m0.jsonl").write_bytes(
        _line(5, "ready")
        + _line(6, "rebalance_begin")
        + _line(7, "rebalance_end", outcome="failed", gave_up=True)
        + _line(9, "watch")
    )
    w = GroupWatch(tmp_path, partitions=1)
    assert w.until(lambda: bool(w.ready), 5)
    assert w.ready == {"m0": 5}
    # reactions: rebalance_begin (6), rebalance_end (7), watch (9); the first at or after 7 by a non-target
    assert w.reactions == [(6, "m0"), (7, "m0"), (9, "m0")]
    assert w.first_reaction(7, targets=["other"]) == 7
    assert w.first_reaction(7, targets=["m0"]) is None
    assert w.gave_up == {"m0"}


class _ManualClock:
    """A clock that moves only when slept on (the sleeps are recorded)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def time_ns(self) -> int:
        return int(self.now * 1e9)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_group_watch_folds_records_and_sessions_of_any_role_and_waits_on_its_clock(tmp_path: Path) -> None:
    (tmp_path / "producer.jsonl").write_bytes(
        _line(1, "produced", "producer", role="producer", partition=0, offset=0)
        + _line(2, "produced", "producer", role="producer", partition=0, offset=1)
    )
    (tmp_path / "m0.jsonl").write_bytes(
        _line(3, "record", partition=0, offset=0)
        + _line(4, "registered", session_id=7, session_password="ab")
    )
    (tmp_path / "m1.jsonl").write_bytes(_line(5, "registered", "m1", session_id=8))  # no password: not kept
    clock = _ManualClock()
    w = GroupWatch(tmp_path, partitions=1, clock=clock)
    reads: list[int] = []
    # a zero timeout reads once, calls `each` once, never sleeps
    assert not w.until(None, 0, each=lambda: reads.append(len(w.produced)))
    assert reads == [2] and clock.slept == []
    assert w.produced == {(0, 0), (0, 1)} and w.processed == {(0, 0)}
    assert w.registrations == {"m0": (7, "ab")}
    # a condition that never holds: polls every POLL_S (0.1 s) on the watch's clock, no further than 0.15 s
    assert not w.until(lambda: False, 0.15)
    assert sum(clock.slept) == pytest.approx(0.15) and max(clock.slept) == pytest.approx(0.1)
    assert w.until(lambda: True, 10) and sum(clock.slept) == pytest.approx(0.15)  # holds: no sleep


def test_a_members_session_without_credentials_is_read_from_the_zookeeper_tap(tmp_path: Path) -> None:
    """A member whose events carry no session credentials (Kafka 0.8.2.2's consumer): its session is the one
    on which the tap saw its ids znode created OK, with the password of that session's connect."""
    ids = "/consumers/g/ids/g_c1"
    tap = dict(source="zk-tap", role="zookeeper")
    (tmp_path / "j0.jsonl").write_bytes(
        _line(1, "started", "j0", impl="legacy_zk", member="g_c1")
        + _line(6, "registered", "j0", impl="legacy_zk", member="g_c1", path=ids)
    )
    (tmp_path / "zk-tap.jsonl").write_bytes(
        _line(2, "zk_session", phase="connect", session="0x2a", password="00ff", member=None, **tap)
        + _line(3, "zk_session", phase="connect", session="0x2b", password="aa11", member=None, **tap)
        # another session's failed create of the same path names no session of j0's
        + _line(4, "zk_request", op="create", path=ids, err="NodeExists", session="0x2a", member=None, **tap)
        + _line(5, "zk_request", op="create", path=ids, err=None, session="0x2b", member="g_c1", **tap)
    )
    (tmp_path / "m0.jsonl").write_bytes(_line(7, "registered", "m0", session_id=7, session_password="ab"))
    w = GroupWatch(tmp_path)
    assert w.registration("j0") is None  # nothing read yet
    w.observe()
    assert w.registration("j0") == (0x2B, "aa11")
    assert w.registration("m0") == (7, "ab")  # its own credentials
    assert w.registration("m9") is None
    assert w.registrations == {"m0": (7, "ab")}


# A member stand-in: writes `ready` (as every member does once booted) unless told not to, then waits
# for SIGTERM and exits 0.
MEMBER = """
import json, signal, sys, time
history, write_ready = sys.argv[1], sys.argv[2] == "1"
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
if write_ready:
    with open(history, "a") as f:
        f.write(json.dumps({"ts_ns": time.time_ns(), "kind": "ready", "source": "m0", "role": "member"}) + "\\n")
while True:
    signal.pause()
"""


def _service(tmp_path: Path, write_ready: bool) -> MemberService:
    history = tmp_path / "m0.jsonl"
    argv = [sys.executable, "-c", MEMBER, str(history), "1" if write_ready else "0"]
    return MemberService("test:m0", argv, history, tmp_path / "m0.log")


def test_member_service_start_waits_until_ready_and_stop_ends_it(tmp_path: Path) -> None:
    m = _service(tmp_path, write_ready=True)
    assert not m.alive()
    m.start(timeout=30)
    try:
        assert m.ready() and m.alive()
        assert m.ready_ns is not None and m.ready_ns >= m.started_ns
        assert m.name == "test:m0" and m.log_path == tmp_path / "m0.log" and m.box is None
        m.signal(signal.SIGTERM, group=False)
        assert m.wait(10) == 0
        assert not m.alive()
    finally:
        m.stop()
    m.stop()  # idempotent


def test_a_ready_of_an_earlier_process_does_not_count(tmp_path: Path) -> None:
    (tmp_path / "m0.jsonl").write_bytes(_line(1, "ready"))  # the previous process under this name
    m = _service(tmp_path, write_ready=False)
    try:
        with pytest.raises(Unreachable, match="not ready after 0.3s"):
            m.start(timeout=0.3)
        assert not m.alive() and not m.ready()  # a failed start leaves nothing running
        m.start()
        assert m.alive() and not m.ready()
        with pytest.raises(HerdlabError, match="already running"):
            m.start()
    finally:
        m.stop()


def test_start_reports_a_member_that_exits_before_it_is_ready(tmp_path: Path) -> None:
    history = tmp_path / "m0.jsonl"
    crash = "import sys; print('boom: no broker'); sys.exit(3)"
    m = MemberService("test:m0", [sys.executable, "-c", crash], history, tmp_path / "m0.log")
    try:
        with pytest.raises(
            Unreachable, match=r"member test:m0 exited before it was ready \(log .*boom: no broker"
        ):
            m.start(timeout=30)
        assert m.wait(5) == 3
    finally:
        m.stop()
