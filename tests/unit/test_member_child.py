"""The subprocess adapter (harness.members.child) with a Python child that prints the coordinator kind's
JSON lines: the events are the recorder's, field by field (a legacy child's: the legacy member's header, then
its fields); a clean stop is SIGTERM to the child, whose
final lines are recorded; a child that exits by itself or prints a bad line ends the member."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from harness.members.child import (
    ChildExited,
    ChildMember,
    ChildProtocolError,
    ChildSpec,
    CoordinatorSink,
    LegacySink,
)
from harness.members.recorder import MemberConfig, MemberRecorder
from tests.support.recording import RecordingHistory
from tests.support.waiting import wait_until

CHILD = """
import json, os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
def out(**e):
    print(json.dumps(e), flush=True)
out(kind="ready")
out(kind="started", effective={"session.timeout.ms": "6000"})
out(kind="joined", generation=1, member="m-1")
out(kind="assigned", partitions=[1, 0])
out(kind="record", partition=0, offset=0, value='{"seq": 7}')
if sys.argv[1] == "crash":
    sys.exit(3)
if sys.argv[1] == "garbage":
    print("hello", flush=True)
    signal.sigwait({signal.SIGTERM})
    sys.exit(0)
signal.sigwait({signal.SIGTERM})
if sys.argv[1] == "fail-stop":  # a clean stop that fails: no stopped, status 3
    sys.exit(3)
if sys.argv[1] == "die-on-stop":  # a clean stop that ends by a signal: no stopped
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    os.kill(os.getpid(), signal.SIGTERM)
    sys.exit(0)
out(kind="commit", partition=0, offset=1, error=None, code=None)
out(kind="revoked", partitions=[0, 1], lost=False)
out(kind="stopped", clean=True, close_ms=1.5)
"""

HEAD = {"impl": "coordinator", "library": "java", "group": "g"}
JOINED = {**HEAD, "member": "m-1", "generation": 1}


def _member(mode: str) -> tuple[ChildMember, RecordingHistory]:
    history = RecordingHistory()
    config = MemberConfig(bootstrap="127.0.0.1:1", group="g", topic="t", name="m0", client="java")
    sink = CoordinatorSink(MemberRecorder(config, history))  # pyright: ignore[reportArgumentType]
    return ChildMember(ChildSpec([sys.executable, "-c", CHILD, mode]), sink, poll_timeout_s=0.05), history


def _items(history: RecordingHistory) -> list[list[tuple[str, Any]]]:
    return [list(e.items()) for e in history.events]


def _until_record() -> list[list[tuple[str, Any]]]:
    return [
        [("kind", "ready"), *{**HEAD, "member": "", "generation": -1}.items()],
        [
            ("kind", "started"),
            *{**HEAD, "member": "", "generation": -1}.items(),
            *{"name": "m0", "static": False, "assignor": "range"}.items(),
            ("effective", {"session.timeout.ms": "6000"}),
        ],
        [("kind", "assigned"), *JOINED.items(), ("topic", "t"), ("partition", 0)],
        [("kind", "assigned"), *JOINED.items(), ("topic", "t"), ("partition", 1)],
        [("kind", "rebalance_end"), *JOINED.items(), ("outcome", "ok"), ("partitions", [0, 1])],
        [("kind", "record"), *JOINED.items(), ("topic", "t"), ("partition", 0), ("offset", 0), ("seq", 7)],
    ]


def test_a_clean_stop_signals_the_child_and_records_its_last_lines_as_the_recorder_writes_them() -> None:
    member, history = _member("wait")
    t = threading.Thread(target=member.run)
    t.start()
    wait_until(lambda: history.of("record"), timeout=30, what="the child's record")
    member.stop(clean=True)
    t.join(30)
    assert not t.is_alive()
    assert _items(history) == [
        *_until_record(),
        [
            ("kind", "commit"),
            *JOINED.items(),
            *{"topic": "t", "partition": 0, "offset": 1, "store": "kafka"}.items(),
        ],
        [("kind", "rebalance_begin"), *JOINED.items(), ("lost", False)],
        [("kind", "revoked"), *JOINED.items(), ("topic", "t"), ("partition", 0), ("lost", False)],
        [("kind", "revoked"), *JOINED.items(), ("topic", "t"), ("partition", 1), ("lost", False)],
        [("kind", "stopped"), *JOINED.items(), ("clean", True), ("records", 1), ("close_ms", 1.5)],
    ]
    assert member.consumer.returncode == 0


def test_a_child_that_exits_by_itself_ends_the_member_with_its_status() -> None:
    member, history = _member("crash")
    with pytest.raises(ChildExited, match="status 3"):
        member.run()
    assert _items(history) == [
        *_until_record(),
        [("kind", "stopped"), *JOINED.items(), ("clean", False), ("records", 1)],
    ]


@pytest.mark.parametrize(("mode", "status"), [("fail-stop", 3), ("die-on-stop", -15)])
def test_a_child_that_ends_a_clean_stop_badly_without_its_stopped_makes_the_stop_unclean(
    mode: str, status: int
) -> None:
    member, history = _member(mode)
    failed: list[BaseException] = []

    def run() -> None:
        try:
            member.run()
        except ChildExited as e:
            failed.append(e)

    t = threading.Thread(target=run)
    t.start()
    wait_until(lambda: history.of("record"), timeout=30, what="the child's record")
    member.stop(clean=True)
    t.join(30)
    assert not t.is_alive()
    assert [str(e) for e in failed] == [f"the member's child {sys.executable} exited with status {status}"]
    assert _items(history) == [
        *_until_record(),
        [("kind", "stopped"), *JOINED.items(), ("clean", False), ("records", 1)],
    ]
    assert member.consumer.returncode == status


#: A held child (harness.members.release): it prints nothing, says on a file that it is waiting, and on
#: SIGTERM exits 0 at once, printing nothing.
HELD_CHILD = """
import pathlib, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
pathlib.Path(sys.argv[1]).touch()
signal.sigwait({signal.SIGTERM})
"""


@pytest.mark.parametrize("to", ["adapter", "child"])
def test_a_child_stopped_before_it_printed_anything_that_exits_0_leaves_no_event(
    to: str, tmp_path: Path
) -> None:
    history = RecordingHistory()
    config = MemberConfig(bootstrap="127.0.0.1:1", group="g", topic="t", name="m0", client="java")
    sink = CoordinatorSink(MemberRecorder(config, history))  # pyright: ignore[reportArgumentType]
    waiting = tmp_path / "waiting"
    member = ChildMember(
        ChildSpec([sys.executable, "-c", HELD_CHILD, str(waiting)]), sink, poll_timeout_s=0.05
    )
    t = threading.Thread(target=member.run)
    t.start()
    wait_until(waiting.exists, timeout=30, what="the child waiting")
    if to == "adapter":  # the adapter's clean stop: SIGTERM to the child, its end awaited
        member.stop(clean=True)
    else:  # the stop reached the child first (a signal to the process group): the adapter sees it end
        os.kill(member.consumer.pid, signal.SIGTERM)
    t.join(30)
    assert not t.is_alive()
    assert history.events == []
    assert member.consumer.returncode == 0


def test_a_line_that_is_no_event_ends_the_member_and_kills_the_child() -> None:
    member, history = _member("garbage")
    with pytest.raises(ChildProtocolError, match="hello"):
        member.run()
    assert _items(history)[-1] == [("kind", "stopped"), *JOINED.items(), ("clean", False), ("records", 1)]
    assert member.consumer.returncode == -9  # SIGKILL


LEGACY_CHILD = """
import json
for e in ({"kind": "ready", "member": "c-1"}, {"kind": "zk_request", "op": "create", "path": "/x"}):
    print(json.dumps(e), flush=True)
"""


def test_a_legacy_child_s_lines_get_the_legacy_member_s_header_and_its_ending_an_unclean_stopped() -> None:
    history = RecordingHistory()
    member = ChildMember(ChildSpec([sys.executable, "-c", LEGACY_CHILD]), LegacySink(history, "m0", "g"))  # pyright: ignore[reportArgumentType]
    member.run()  # the child exits 0 after its lines: the member ends, unclean
    head = [("source", "m0"), ("impl", "legacy_zk"), ("group", "g"), ("member", "c-1")]
    assert _items(history) == [
        [("kind", "ready"), *head],
        [("kind", "zk_request"), *head, ("op", "create"), ("path", "/x")],
        [("kind", "stopped"), *head, ("clean", False)],
    ]


COMMANDS_CHILD = """
import json, signal, sys, threading
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
def out(**e):
    print(json.dumps(e), flush=True)
out(kind="ready")
out(kind="started")
def echo():  # each command line read back as a heartbeat_error naming it: what the child was told
    for line in sys.stdin:
        out(kind="heartbeat_error", error=json.loads(line)["cmd"], code=None)
threading.Thread(target=echo, daemon=True).start()
signal.sigwait({signal.SIGTERM})
out(kind="stopped", clean=True, close_ms=0.5)
"""


def _commands_member() -> tuple[ChildMember, RecordingHistory]:
    history = RecordingHistory()
    config = MemberConfig(bootstrap="127.0.0.1:1", group="g", topic="t", name="m0", client="java")
    sink = CoordinatorSink(MemberRecorder(config, history))  # pyright: ignore[reportArgumentType]
    return ChildMember(ChildSpec([sys.executable, "-c", COMMANDS_CHILD]), sink, poll_timeout_s=0.05), history


def _told(history: RecordingHistory) -> list[str]:
    return [e["error"] for e in history.of("heartbeat_error")]


def test_stall_and_unstall_are_command_lines_on_the_childs_stdin_while_the_adapter_keeps_reading() -> None:
    member, history = _commands_member()
    member.stall(True)  # before the child exists: sent once it started
    t = threading.Thread(target=member.run)
    t.start()
    # the child's echo is a line the adapter read: it reads on while the child is stalled
    wait_until(lambda: _told(history) == ["stall"], timeout=30, what="the child told to stall")
    assert member.stalled
    member.stall(False)
    wait_until(lambda: _told(history) == ["stall", "unstall"], timeout=30, what="the child told to unstall")
    assert not member.stalled
    member.stall(True)
    wait_until(lambda: len(_told(history)) == 3, timeout=30, what="the second stall")
    member.stop(clean=True)  # a stop during a stall: SIGTERM, the child's last lines are read
    t.join(30)
    assert not t.is_alive()
    assert _told(history) == ["stall", "unstall", "stall"]
    assert history.of("stopped")[-1]["clean"] is True and member.consumer.returncode == 0
    member.stall(False)  # the child is gone: nothing to tell, no error
