"""Rebalance rounds, partitions that never stopped and the unit columns, on two hand-made units.

Both units: coordinator, P = 3; a owns p0 and p1, b owns p2 (generation 1); stable at 1000; the
broker reports counters at 1500 (so the unit has broker reports). A join of c: invoke 2000, c
ready at 2500 (t0), complete 2510. Settle window 1 s; settling ends at 6000. Times in ms, reported
from the origin (stable, 1000).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.histories import UnitHistory, ns, write_run

pytestmark = pytest.mark.slow


def _common(case: str, broker: str = "broker-0", **ready: Any) -> UnitHistory:
    """``broker``: the source of the broker's events (``tap`` for a third-party broker behind the tap)."""
    u = UnitHistory(case, partitions=3)
    u.unit_start(0, ["a", "b"]).at(0, "ready", "a", **ready).at(0, "ready", "b", **ready)
    u.joined(100, "a", 0, 1, generation=1, member="A").joined(100, "b", 2, generation=1, member="B")
    u.stable(1000)
    u.at(1500, "broker_request", broker, interval_s=1.0, requests={"Heartbeat": 4})
    join = {"action": "join", "action_id": 1, "targets": ["c"], "trigger": True}
    u.at(2000, "invoke", "nemesis", **join)
    u.at(2500, "ready", "c", **ready)
    u.at(2510, "complete", "nemesis", **join, ready_ns={"c": ns(2500)})
    # a heartbeat of the old generation inside the window: a group request, not a round
    u.at(2550, "group_request", broker, api="Heartbeat", member="A", generation=1)
    return u


def _sync(u: UnitHistory, ms: int, generation: int, broker: str = "broker-0") -> None:
    """One round's SyncGroups: the leader A's carries the 3 members' assignments, the followers' none."""
    for m in ("A", "B", "C"):
        n = 3 if m == "A" else 0
        u.at(ms, "group_request", broker, api="SyncGroup", member=m, generation=generation, assignments=n)


def eager() -> UnitHistory:
    """range (eager): one round, generation 2. Every member revokes everything at 2600 (a p0 p1, b
    p2); at 2700 SyncGroup of A, B, C in generation 2 and a gets p0, b p1, c p2 (t1 = 2700)."""
    u = _common("eager")
    u.revoked(2600, "a", 0, 1, generation=1, member="A").revoked(2600, "b", 2, generation=1, member="B")
    _sync(u, 2700, 2)
    u.joined(2700, "a", 0, generation=2, member="A").joined(2700, "b", 1, generation=2, member="B")
    u.joined(2700, "c", 2, generation=2, member="C")
    u.settling_end(6000)
    return u


def cooperative() -> UnitHistory:
    """cooperative-sticky on tansu: two rounds, both numbered generation 0 as tansu 0.6 numbers them (so
    rounds cannot be distinct generations). Round 1 (SyncGroup of A, B, C at 2700): a revokes only p1,
    the partition that moves. Round 2 (at 2900): c gets p1 (t1 = 2900). a processes p0 every 100 ms from 1000 to 3900 (no stop); b processes p2 every 200 ms from
    1000 to 2400, then pauses for the rebalance until 2800, then every 200 ms to 3800. Members write
    ``library`` = librdkafka on their ready."""
    u = _common("coop", broker="tap", library="librdkafka")
    u.records("a", 0, range(30), 1000, 100)
    u.records("b", 2, range(8), 1000, 200).records("b", 2, range(8, 14), 2800, 200)
    _sync(u, 2700, 0, "tap")
    u.revoked(2700, "a", 1, generation=2, member="A")
    _sync(u, 2900, 0, "tap")
    u.joined(2900, "c", 1, generation=3, member="C")
    u.settling_end(6000)
    return u


@pytest.fixture(scope="module")
def analysed(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from harness.analysis.analyze import analyze
    from harness.analysis.load import load_run

    run = write_run(tmp_path_factory.mktemp("cooperative"), [eager(), cooperative()], settle_window_s=1.0)
    manifest_path = Path(run) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    params = {
        "eager": {"cluster.broker": "herdlab", "group.coordinator.client": "kafka-python"},
        "coop": {"cluster.broker": "tansu", "group.assignor": "cooperative-sticky"},
    }
    for c in manifest["cases"]:
        c["params"] = params[c["label"]]
    manifest_path.write_text(json.dumps(manifest))
    return analyze(spark, load_run(run))


def unit(m: dict[str, Any], case: str) -> dict[str, Any]:
    (u,) = [u for u in m["units"] if u["case"] == case]
    return u


def test_rounds_are_the_leader_syncs_and_cooperative_keeps_the_untouched_partitions(
    analysed: dict[str, Any],
) -> None:
    (e,) = unit(analysed, "eager")["triggers"]
    (c,) = unit(analysed, "coop")["triggers"]
    # t0 = c's ready (2500 = 1.5 s after the origin); eager settles at 2700, cooperative at 2900
    assert (e["outcome"], e["t0_s"], e["t1_s"]) == ("settled", 1.5, 1.7)
    assert (c["outcome"], c["t0_s"], c["t1_s"]) == ("settled", 1.5, 1.9)
    # the leader's SyncGroups (with assignments) in [2500, 6000): eager one (2700); cooperative two
    # (2700, 2900; both generation 0); the followers' SyncGroups and the Heartbeat at 2550 are not rounds
    assert e["rebalance_rounds"] == 1 and c["rebalance_rounds"] == 2
    # the broker's own rebalance events: none in the eager unit (0, counted); the tapped unit cannot have
    # them (None: not measured)
    assert e["group_rebalances"] == 0 and c["group_rebalances"] is None
    # at t0 every partition is owned (p0 p1 by a, p2 by b): 3. Eager: all revoked at 2600, 0 kept.
    assert (e["undisturbed_partitions"], e["undisturbed_fraction"], e["undisturbed_gap_s"]) == (0, 0.0, None)
    # cooperative: only p1 moved; p0 (a) and p2 (b) never stopped: 2 of 3. Their longest gap in
    # [2500, 2900]: p0 has a record every 100 ms; p2 from the edge 2500 to b's record at 2800: 0.3 s
    assert (c["undisturbed_partitions"], c["undisturbed_fraction"]) == (2, round(2 / 3, 6))
    assert c["undisturbed_gap_s"] == 0.3


def test_units_carry_their_client_broker_and_assignor(analysed: dict[str, Any]) -> None:
    e, c = unit(analysed, "eager"), unit(analysed, "coop")
    # eager: no library on its events: the case's group.coordinator.client; its assignor: the default
    assert (e["client"], e["broker"], e["assignor"]) == ("kafka-python", "herdlab", "range")
    # coop: the members' library; broker and assignor from the case
    assert (c["client"], c["broker"], c["assignor"]) == ("librdkafka", "tansu", "cooperative-sticky")
    # two brokers: the Coordinators summary is there; each row has one broker (the assignors differ)
    summary = analysed["coordinators"]
    assert summary["brokers"] == ["herdlab", "tansu"]
    rows = {(r["client"], r["assignor"]): r for r in summary["rows"]}
    assert set(rows) == {("kafka-python", "range"), ("librdkafka", "cooperative-sticky")}
    assert rows[("kafka-python", "range")]["latency_s"] == {"herdlab": 0.2, "tansu": None}
    assert rows[("kafka-python", "range")]["vs"]["tansu"]["latency_ratio"] is None
