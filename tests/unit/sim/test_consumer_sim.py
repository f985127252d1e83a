"""The consumer design's simulated group (KIP-848): the real ConsumerGroupCoordinator with simulated librdkafka
consumer-protocol members, through the simulator's own driver.

The counts of each trigger window (:func:`harness.sim.validate.consumer_counts`: ConsumerGroupHeartbeat exchanges
that carry a change, members that moved to a new member epoch, partitions given to another member) are worked
out by hand from the protocol, for a group whose members each own two partitions, with the uniform assignor
(Kafka's ``UniformHomogeneousAssignmentBuilder``): T partitions over M members, ``T // M`` each and one more for
the first ``T % M`` members in member-id order; a member keeps what it has up to its quota, the partitions
above it and those of a member gone are handed, in order, to the members below theirs. The member ids are
given (``member_ids``), so the order is known: the initial members ``m00000`` ... and the joiner either last
(``z-joiner``) or first (``a-joiner``).

What each member's heartbeats carry after a change (the group epoch goes from E to E+1):

* the change's own exchange: a join (epoch 0) or a leave (-1); a crash has none (the session timeout fences
  the member on the broker);
* every member that keeps what it has: one exchange, its next heartbeat, answered with epoch E+1;
* a member that must give partitions up: its next heartbeat is answered with the smaller assignment at epoch
  E (UNREVOKED_PARTITIONS), it commits, revokes and sends the acknowledgement at once (owned partitions), which
  moves it to E+1: two;
* a member given free partitions: its next heartbeat is answered with E+1 and the larger assignment, it
  assigns them and acknowledges at once: two;
* the joiner, when its partitions were still held: its join is answered with E+1 and what is free; it is
  given the rest by the first heartbeat after their release, and acknowledges: two more per pick-up.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.kernel.errors import ConfigError
from harness.kernel.events import Kind
from harness.run.runner import Unit, planned_cases
from harness.scenario.loading import load_scenario
from harness.scenario.model import IMPLEMENTATIONS, Scenario
from harness.sim.driver import SimUnitRunner, group_factory
from harness.sim.model import DEFAULT_PROFILE, load_profile
from harness.sim.session import parse_designs
from harness.sim.validate import ConsumerCounts, consumer_counts, read_unit
from tests.support.sim_units import EPOCH_NS, history_text, unit_events

HEARTBEAT_S = (
    0.5  # [group.consumer] heartbeat_interval_ms's default (the simulator's when the model has none)
)


def _scenario(members: int, partitions: int, action: str) -> Scenario:
    """``herd`` at ``members`` members over ``partitions`` partitions, its timeline one ``action`` at 5 s."""
    step = "{" + f'at = "5s", action = {json.dumps(action)}, count = 1' + "}"
    return load_scenario(
        "herd",
        [
            f"group.members={members}",
            f"topic.partitions={partitions}",
            "repetitions=1",
            f"timeline=[{step}]",
        ],
    )


def _ids(members: int, joiner: str) -> dict[str, str]:
    """Member ids by plan name: ``m<i>`` -> ``m00000`` ... in name order, the joiner ``j0`` -> ``joiner``."""
    return {**{f"m{i}": f"m{i:05d}" for i in range(members)}, "j0": joiner}


def _simulate(tmp_path: Path, members: int, partitions: int, action: str, joiner: str = "z-joiner") -> Path:
    s = _scenario(members, partitions, action)
    unit_dir = tmp_path / f"{action}-{members}-{joiner}"
    unit = Unit(0, planned_cases(s)[0], "consumer", 0, unit_dir)
    runner = SimUnitRunner(
        s,
        unit,
        load_profile(DEFAULT_PROFILE),
        epoch_ns=EPOCH_NS,
        options={"member_ids": _ids(members, joiner)},
    )
    outcome = runner.run()
    assert not outcome.get("failed"), outcome
    return unit_dir


def _window(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events from the step's invoke to the settling's end (the run's end, when every member stops, left
    out)."""
    (t0,) = [e["ts_ns"] for e in events if e["kind"] == Kind.INVOKE] or [None]
    (end,) = [e["ts_ns"] for e in events if e["kind"] == Kind.SETTLING_END] or [None]
    return [e for e in events if (t0 is None or e["ts_ns"] >= t0) and (end is None or e["ts_ns"] < end)]


def _counts(unit_dir: Path) -> ConsumerCounts:
    (only,) = consumer_counts(read_unit(unit_dir), 3.0)
    assert only.outcome == "settled", only
    return only


@pytest.mark.parametrize("members", [10, 50])
def test_a_join_that_takes_one_partition_from_one_member(tmp_path: Path, members: int) -> None:
    """M members own 2 partitions each (2M); the joiner's id sorts last. M + 1 members: the first M - 1 in
    id order keep a quota of 2, the last two (the M-th initial member and the joiner) get 1: the M-th member
    revokes one partition and the joiner is given it. Heartbeats: the join (1), the M - 1 members that keep
    theirs (M - 1), the revoking member (2), the joiner's pick-up and acknowledgement (2): M + 4. Every member
    reaches the new epoch: M + 1. One partition moves."""
    c = _counts(_simulate(tmp_path, members, 2 * members, "join"))
    assert c.counts() == {
        "change_heartbeats": members + 4,
        "members_reconciled": members + 1,
        "partitions_moved": 1,
    }


def test_a_join_that_takes_from_two_members_is_given_partitions_as_they_are_released(tmp_path: Path) -> None:
    """The joiner's id sorts first: 11 members over 30 partitions, a minimum of 2 and 8 extra slots. The joiner
    owns nothing and gives its extra slot up (Kafka 4.1: the 11 members from it on outnumber the 8 extra
    slots), the next 8 initial members keep their 3, the last two have a quota of 2: each revokes one and the
    joiner gets both. The join
    (1), 8 members that keep theirs (8), two revoking members (2 x 2): 13; the joiner then picks the two up as
    they are released: both at one heartbeat (a pick-up and its acknowledgement: 2), or one, then the other
    answered on that acknowledgement (3), or one at a time (4). The other two counts do not depend on when."""
    unit_dir = _simulate(tmp_path, 10, 30, "join", joiner="a-joiner")
    c = _counts(unit_dir)
    assert (c.members_reconciled, c.partitions_moved) == (11, 2)
    assert c.change_heartbeats in (15, 16, 17)
    events = unit_events(unit_dir)
    (t0,) = [e["ts_ns"] for e in events if e["kind"] == Kind.INVOKE]
    picked = [e for e in events if e["kind"] == Kind.ASSIGNED and e["source"] == "j0"]
    assert len(picked) == 2
    # revocation before assignment: each partition the joiner got was revoked by its owner first
    for a in picked:
        assert any(
            e["kind"] == Kind.REVOKED and e["partition"] == a["partition"] and t0 <= e["ts_ns"] < a["ts_ns"]
            for e in events
        ), a


@pytest.mark.parametrize("members", [10, 50])
def test_a_leave_gives_its_two_partitions_to_the_first_two_members(tmp_path: Path, members: int) -> None:
    """A member owning 2 of 2M partitions leaves: M - 1 members, the first two in id order get a quota of 3
    and take one free partition each. Heartbeats: the leave (1), M - 3 members that keep theirs, the two
    receivers (2 x 2): M + 2. M - 1 members reach the new epoch; two partitions move."""
    c = _counts(_simulate(tmp_path, members, 2 * members, "leave"))
    assert c.counts() == {
        "change_heartbeats": members + 2,
        "members_reconciled": members - 1,
        "partitions_moved": 2,
    }


@pytest.mark.parametrize("members", [10, 50])
def test_a_crash_is_a_leave_without_its_own_heartbeat(tmp_path: Path, members: int) -> None:
    """As the leave, once the session timeout fenced the crashed member on the broker: M + 1 heartbeats."""
    c = _counts(_simulate(tmp_path, members, 2 * members, "crash"))
    assert c.counts() == {
        "change_heartbeats": members + 1,
        "members_reconciled": members - 1,
        "partitions_moved": 2,
    }


def test_the_revoking_member_acknowledges_at_once_not_at_its_next_interval(tmp_path: Path) -> None:
    """librdkafka expedites the heartbeat that acknowledges a reconciliation: the exchange carrying the owned
    partitions is served a round trip (and the commit's) after the revoke, far inside the interval."""
    unit_dir = _simulate(tmp_path, 10, 20, "join")
    events = _window(unit_events(unit_dir))
    (revoke,) = [e for e in events if e["kind"] == Kind.REVOKED]
    member = next(e["member"] for e in events if e["source"] == revoke["source"] and e.get("member"))
    acks = [
        e
        for e in events
        if e["kind"] == Kind.GROUP_REQUEST
        and e["api"] == "ConsumerGroupHeartbeat"
        and e["member"] == member
        and e["ts_ns"] > revoke["ts_ns"]
    ]
    first = acks[0]
    assert first["change"] is True and first["epoch"] == first["member_epoch"] + 1
    assert first["ts_ns"] - revoke["ts_ns"] < HEARTBEAT_S * 1e9 / 10


def test_every_heartbeat_exchange_is_one_broker_event_with_the_real_brokers_fields(tmp_path: Path) -> None:
    unit_dir = _simulate(tmp_path, 10, 20, "leave")
    events = unit_events(unit_dir)
    hbs = [e for e in events if e["kind"] == Kind.GROUP_REQUEST and e["api"] == "ConsumerGroupHeartbeat"]
    assert hbs and all(e["source"] == "broker-0" and e["impl"] == "consumer" for e in hbs)
    assert all({"group", "member", "member_epoch", "epoch", "change", "client"} <= e.keys() for e in hbs)
    joins = [e for e in hbs if e["member_epoch"] == 0]
    assert len(joins) == 10 and all(e["change"] is True and e["epoch"] > 0 for e in joins)
    # the step's leave (at the run's end every member leaves too)
    (leave,) = [
        e for e in _window(events) if e.get("api") == "ConsumerGroupHeartbeat" and e["member_epoch"] == -1
    ]
    assert leave["change"] is True and leave["epoch"] == -1
    # the machine's own events are written too
    kinds = {e["kind"] for e in events if e["source"] == "broker-0"}
    assert {"target_assignment", "member_epoch", "member_added", "member_removed", "group_state"} <= kinds


def test_two_runs_write_identical_histories(tmp_path: Path) -> None:
    a = _simulate(tmp_path / "a", 10, 20, "leave")
    b = _simulate(tmp_path / "b", 10, 20, "leave")
    assert history_text(a) == history_text(b)


def test_member_ids_are_drawn_from_the_units_seed_as_librdkafka_makes_them(tmp_path: Path) -> None:
    s = _scenario(3, 6, "leave")
    unit = Unit(0, planned_cases(s)[0], "consumer", 0, tmp_path / "u")
    SimUnitRunner(s, unit, load_profile(DEFAULT_PROFILE), epoch_ns=EPOCH_NS).run()
    ids = {e["member"] for e in unit_events(tmp_path / "u") if e.get("api") == "ConsumerGroupHeartbeat"}
    assert len(ids) == 3 and all(len(i) == 22 for i in ids)  # 16 random bytes, base64 without padding


def test_the_designs_option_names_the_simulators_designs() -> None:
    assert parse_designs(None) is None
    assert parse_designs("legacy_zk, coordinator,consumer") == ("legacy_zk", "coordinator", "consumer")
    for bad in ("", "consumer,consumer", "cooperative"):
        with pytest.raises(ConfigError, match="--design expects"):
            parse_designs(bad)
    assert group_factory("consumer") is not None


def test_simulate_with_the_consumer_design_writes_a_run_naming_it(tmp_path: Path) -> None:
    from harness.sim.session import SimOptions, simulate_scenario

    s = _scenario(3, 6, "leave")
    result = simulate_scenario(s, SimOptions(out=tmp_path, designs=("consumer",)))
    manifest: dict[str, Any] = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["designs"] == ["consumer"]
    # the scenario names them where its model knows the design (else the analysis could not read it back)
    known = "consumer" in IMPLEMENTATIONS
    assert (manifest["scenario"]["implementations"] == ["consumer"]) is known
    assert [u["impl"] for u in result.units] == ["consumer"]
    assert not any(u.get("failed") for u in result.units)
