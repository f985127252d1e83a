"""End to end: a scenario run (the runner, real member processes of the coordinator implementation on a real
broker) with a stall, whose history the one trigger definition (:func:`harness.kernel.windows.evaluate`,
which the checker applies per unit) reads as the stall's window, settled while the member was still
stalled.

Two members (kafka-python; and Kafka's Java consumer, whose stall goes through the adapter to the program's
stdin) share four partitions; the oldest is stalled at 1 s for 10 s, with
``max.poll.interval.ms`` 5000 over a 3000 ms session: the first reaction (the other member's rebalance) comes
only once the poll timer fired (no sooner than the session timeout plus a heartbeat after the stall: the
stalled member kept heart-beating), the group is owned once by the other member before the unstall, and
the unstall is not a trigger of its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.history.schema import read_parquet
from harness.kernel.windows import evaluate
from harness.run.clients import build_clients
from harness.run.runner import run_scenario
from harness.scenario import expand, load_scenario
from harness.scenario.processing import MEMBER_POLL_TIMEOUT_MS
from tests.support.runs import FAST, SharedCluster

MS = 1_000_000


@pytest.mark.slow
@pytest.mark.long  # a run of about half a minute: opt-in, as the other long scenario runs
@pytest.mark.parametrize("client", ["kafka-python", pytest.param("java", marks=pytest.mark.clients)])
def test_a_stall_runs_end_to_end_and_its_window_settles_while_the_member_is_stalled(
    tmp_path: Path, shared_cluster: SharedCluster, client: str
) -> None:
    if client == "java":
        build_clients(expand(load_scenario("herd-small", ['group.coordinator.client="java"'])))
    s = load_scenario(
        "herd",
        [
            *FAST,
            f"group.coordinator.client={client!r}".replace("'", '"'),
            'implementations=["coordinator"]',
            "group.members=2",
            "topic.partitions=4",
            "group.coordinator.max_poll_interval_ms=5000",
            'timeline=[{at="1s",action="stall",duration="10s",select="oldest"}]',
        ],
    )
    result = run_scenario(s, shared_cluster.options(tmp_path))
    (unit,) = result.units
    assert "failed" not in unit, unit.get("failed")
    events = read_parquet(result.run_dir / "history.parquet")

    def nemesis(action: str, kind: str) -> dict:
        (e,) = [e for e in events if e["kind"] == kind and e.get("action") == action]
        return e

    stall, unstall = nemesis("stall", "complete"), nemesis("unstall", "complete")
    assert stall["targets"] == ["m0"] and stall["trigger"] and not unstall["trigger"]

    facts = evaluate(events, int(s.settle_window * 1000) * MS)
    (t,) = facts.triggers  # the unstall ends the fault: no window of its own
    assert (t.action, t.targets, t.outcome) == ("stall", ["m0"], "settled")
    assert t.react_ns is not None and t.t1_ns is not None
    c = s.group.coordinator
    # the first reaction is m1's rebalance once m0's poll timer made it leave: not before m0's session
    # would have expired it, had it stopped heart-beating
    assert t.react_ns - t.t0_ns >= (c.session_timeout_ms + c.heartbeat_interval_ms) * MS
    # and its poll timer made it leave in time: the poll timer (from its last poll, at most one poll
    # window before the stall), one heartbeat interval for its heartbeat thread to notice, and the other
    # member's next heartbeat to learn of the rebalance, plus a second for two loaded cores
    slack_ms = 1000
    bound_ms = MEMBER_POLL_TIMEOUT_MS + c.max_poll_interval_ms + 2 * c.heartbeat_interval_ms + slack_ms
    assert t.react_ns - t.t0_ns <= bound_ms * MS
    # settled (m1 owns all four partitions) while m0 was still stalled, a settle window before the unstall
    assert t.t1_ns + int(s.settle_window * 1000) * MS <= unstall["ts_ns"]
    assert t.partitions_at_t1 == 4
    assert ("m0", stall["ts_ns"], unstall["ts_ns"]) in facts.away
    # and m0 rejoined after the unstall: it owns partitions again at the end of the settling phase
    rejoined = [
        e for e in events if e["source"] == "m0" and e["kind"] == "assigned" and e["ts_ns"] > unstall["ts_ns"]
    ]
    assert rejoined, "m0 did not rejoin after the unstall"
    assert unit["settled_at_end"]
