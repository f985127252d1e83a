"""The stall (the poll timer as a fault) on real clients and herdlab's broker: `herdlab member coordinator
--client C` processes, the stall and its end sent as the nemesis sends them (the stall signals to the member
process itself), read back from the members' and the broker's histories.

Two members share four partitions; m0 is stalled. Settings: ``session.timeout.ms`` 2000,
``heartbeat.interval.ms`` 300, ``max.poll.interval.ms`` 4000 (larger than the session, so that a member
that stopped heart-beating would be expired long before its poll timer fires), polls of 200 ms.

* m0 keeps heart-beating: the broker does not expire it; it is removed by a LeaveGroup (reason ``leave``)
  no sooner than its session timeout plus one heartbeat interval after the stall;
* m1 is given every partition within :data:`BOUND_MS` of the stall. The bound, term by term: the poll
  timer runs from m0's last poll, which began at most one poll (200 ms) after the stall signal (the poll in
  flight when it came); it fires ``max.poll.interval.ms`` (4000) later; the client sees it at its next check
  (kafka-python: its heartbeat thread, one heartbeat interval; aiokafka: its heartbeat routine sleeps
  until the deadline; librdkafka: a timer that checks it twice a second, 500 ms) and leaves; m1 hears of
  the rebalance at its next heartbeat (300 ms) and rejoins; slack for the join/sync round trip and two
  shared cores (2000 ms): 200 + 4000 + 500 + 300 + 2000 = 7000 ms.
* after the unstall m0 polls again: it reports its old partitions revoked (lost) only then, rejoins, and
  the group is balanced over both members again. librdkafka also reports ``_MAX_POLL_EXCEEDED`` as a
  ``heartbeat_error`` on that poll. aiokafka reports the lost partitions at its leave already: its
  rebalance listener runs in its coordinator's task on the member's event loop, which a stall keeps
  running (aiokafka has no callback that waits for the application's poll).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.kernel.actions import STALL_SIGNAL, UNSTALL_SIGNAL
from tests.support.brokers import BrokerFactory
from tests.support.client_members import FAST_BROKER, ClientGroup, create_topic
from tests.support.waiting import wait_until

PARTITIONS = 4
SESSION_MS, HEARTBEAT_MS, MAX_POLL_MS, POLL_MS = 2000, 300, 4000, 200
OPTIONS = (
    "--session-timeout-ms",
    str(SESSION_MS),
    "--heartbeat-interval-ms",
    str(HEARTBEAT_MS),
    "--max-poll-interval-ms",
    str(MAX_POLL_MS),
    "--auto-commit-interval-ms",
    "200",
)
#: m1 owns every partition within this long after the stall (the module docstring works it out)
BOUND_MS = POLL_MS + MAX_POLL_MS + 500 + HEARTBEAT_MS + 2000
MS = 1_000_000


@pytest.fixture
def groups() -> Iterator[list[ClientGroup]]:
    made: list[ClientGroup] = []
    yield made
    for g in made:
        g.stop_all()


def _after(events: list[dict[str, Any]], kind: str, since_ns: int) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == kind and e["ts_ns"] >= since_ns]


@pytest.mark.slow
@pytest.mark.parametrize("client", ["kafka-python", "librdkafka", "aiokafka"])
def test_a_stalled_member_keeps_heart_beating_is_removed_by_its_poll_timer_and_rejoins_after_the_stall(
    broker_factory: BrokerFactory, tmp_path: Path, groups: list[ClientGroup], client: str
) -> None:
    broker = broker_factory(extra_args=FAST_BROKER, persistent=False)
    create_topic(broker, "t", PARTITIONS)
    g = ClientGroup(broker, tmp_path, f"g-stall-{client}", "t", PARTITIONS, client, OPTIONS)
    groups.append(g)
    m0 = g.start("m0")
    g.start("m1")
    before = g.wait_balanced("of two members", timeout=60)
    stalled_parts = before["m0"]
    m0_id = [e for e in g.events("m0") if e["kind"] == "assigned"][-1]["member"]

    stall_ns = time.time_ns()
    m0.signal(STALL_SIGNAL, group=False)

    def m1_owns_everything() -> bool:
        return g.assignments()["m1"] == set(range(PARTITIONS)) and g.stable is not None and g.stable[1] == 1

    wait_until(
        m1_owns_everything, timeout=BOUND_MS / 1000 + 20, what=f"m1 owning every partition: {g.describe()}"
    )
    handed = max(e["ts_ns"] for e in _after(g.events("m1"), "assigned", stall_ns))
    assert handed - stall_ns <= BOUND_MS * MS, (
        f"m1 owned everything {(handed - stall_ns) / MS:.0f} ms after the stall"
    )

    # m0 heart-beat through its stall: never expired, removed by its own LeaveGroup once its poll timer fired
    removed = [e for e in g.broker_events("member_removed") if e["member"] == m0_id]
    assert [e["reason"] for e in removed] == ["leave"]
    assert removed[0]["ts_ns"] - stall_ns >= (SESSION_MS + HEARTBEAT_MS) * MS

    unstall_ns = time.time_ns()
    m0.signal(UNSTALL_SIGNAL, group=False)
    after = g.wait_balanced("after the unstall", timeout=60)
    assert set(after) == {"m0", "m1"}
    m0_events = g.events("m0")
    # its old partitions are reported lost before anything else of it after the stall, and only once it
    # polled again; aiokafka's rebalance listener is a task on the member's event loop, which a stall keeps
    # running, so it reports them at its leave already
    since = removed[0]["ts_ns"] if client == "aiokafka" else unstall_ns
    assert not [e for e in _after(m0_events, "revoked", stall_ns) if e["ts_ns"] < since]
    revoked = [(e["partition"], e["lost"]) for e in _after(m0_events, "revoked", since)]
    assert revoked[: len(stalled_parts)] == [(p, True) for p in sorted(stalled_parts)]
    if client == "aiokafka":
        assert all(e["ts_ns"] < unstall_ns for e in _after(m0_events, "revoked", since)[: len(stalled_parts)])
    # ... then it rejoins (a new member id: it left as a dynamic member)
    rejoined = _after(m0_events, "assigned", unstall_ns)
    assert rejoined and rejoined[0]["member"] != m0_id
    if client == "librdkafka":  # the poll timer's error, delivered on the first poll after the stall
        (error,) = [e["error"] for e in _after(m0_events, "heartbeat_error", stall_ns)]
        assert error.startswith(f"Application maximum poll interval ({MAX_POLL_MS}ms) exceeded")
