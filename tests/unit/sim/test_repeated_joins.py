"""The clients' repeated joins (kafka-python's second joins) told apart from the protocol's own requests in a
trigger window, from hand-made SyncGroups and hand-made coordinator units: what the validation takes out of
both sides before it compares the protocol's counts."""

from __future__ import annotations

from collections import Counter

from harness.bench.simulator import format_comparison, tally
from harness.sim.validate import Comparison, Sync, repeated_joins, unit_counts
from tests.support.histories import UnitHistory


def test_a_round_without_repeats_has_none() -> None:
    # generation 5: a (leader), b, c sync once each
    assert repeated_joins([Sync("a", 5, True), Sync("b", 5, False), Sync("c", 5, False)]) == Counter()


def test_a_followers_second_sync_in_one_generation_is_one_join_and_one_sync_more() -> None:
    # b syncs twice in generation 5 (its JoinGroup answered with the same generation), c three times
    syncs = [Sync("a", 5, True), Sync("b", 5, False), Sync("b", 5, False), Sync("c", 5, False)]
    syncs += [Sync("c", 5, False), Sync("c", 5, False)]
    assert repeated_joins(syncs) == Counter({"JoinGroup": 3, "SyncGroup": 3})


def test_the_leaders_second_join_is_a_whole_round_more() -> None:
    # generation 5: a (leader), b, c; generation 6: the same three, a the leader again -> 3 JoinGroups,
    # 3 SyncGroups and the leader's Metadata refresh after the round
    round5 = [Sync("a", 5, True), Sync("b", 5, False), Sync("c", 5, False)]
    round6 = [Sync("b", 6, False), Sync("a", 6, True), Sync("c", 6, False)]
    assert repeated_joins(round5 + round6) == Counter({"JoinGroup": 3, "SyncGroup": 3, "Metadata": 1})


def test_a_later_round_with_other_members_or_another_leader_is_the_protocols() -> None:
    round5 = [Sync("a", 5, True), Sync("b", 5, False), Sync("c", 5, False)]
    fewer = [Sync("a", 6, True), Sync("b", 6, False)]  # c left: a rebalance of the protocol's
    other_leader = [Sync("a", 6, False), Sync("b", 6, True), Sync("c", 6, False)]
    assert repeated_joins(round5 + fewer) == Counter()
    assert repeated_joins(round5 + other_leader) == Counter()


def _leave_unit(second_join: bool) -> list[dict[str, object]]:
    """A coordinator unit by hand: a (leader), b and c own p0, p1 and p2; c leaves at 2000 ms; generation 2:
    a and b join and sync (a with the assignments), a gets p2 at 2400 ms; with ``second_join`` b's join is
    sent once more and b syncs in generation 2 again."""
    h = UnitHistory("c3", partitions=3)
    h.unit_start(0, ["a", "b", "c"])
    for p, m in enumerate("abc"):
        h.joined(100, m, p)
    h.stable(1000).action(2000, "leave", ["c"], complete_ms=2020).revoked(2005, "c", 2)

    def request(ms: int, api: str, member: str, **kw: object) -> None:
        h.at(ms, "group_request", "broker-0", api=api, client=member, member=member, **kw)

    request(2010, "LeaveGroup", "c")
    request(2100, "JoinGroup", "a")
    request(2110, "JoinGroup", "b")
    request(2200, "SyncGroup", "a", generation=2, assignments=2)
    request(2210, "SyncGroup", "b", generation=2, assignments=0)
    if second_join:
        request(2300, "JoinGroup", "b")
        request(2310, "SyncGroup", "b", generation=2, assignments=0)
    h.joined(2400, "a", 2).joined(2400, "b")
    return h.settling_end(5000).events


def test_unit_counts_keep_every_request_and_the_protocol_counts_leave_the_repeat_out() -> None:
    (plain,) = unit_counts(_leave_unit(False), 1.0)
    (repeated,) = unit_counts(_leave_unit(True), 1.0)
    assert plain.outcome == repeated.outcome == "settled"
    # by hand: LeaveGroup 1, JoinGroup 2, SyncGroup 2; the repeat adds b's JoinGroup and SyncGroup
    assert plain.counts() == {"api:JoinGroup": 2, "api:LeaveGroup": 1, "api:SyncGroup": 2}
    assert repeated.counts() == {"api:JoinGroup": 3, "api:LeaveGroup": 1, "api:SyncGroup": 3}
    assert dict(repeated.repeats) == {"JoinGroup": 1, "SyncGroup": 1}
    assert repeated.protocol_counts() == plain.counts() == plain.protocol_counts()


def test_counts_that_differ_by_repeated_joins_alone_have_equal_protocol_counts() -> None:
    # real: one repetition with b's second join; simulated: two without
    (plain,) = unit_counts(_leave_unit(False), 1.0)
    (repeated,) = unit_counts(_leave_unit(True), 1.0)
    row = Comparison(
        "coordinator", "group.members=3", 3, "#1 leave c", [repeated.counts()], [plain.counts()] * 2,
        [0.4], [0.4, 0.4], [repeated.protocol_counts()], [plain.protocol_counts()] * 2,
    )  # fmt: skip
    assert not row.counts_equal and row.protocol_equal and row.alike == []
    (_, line) = format_comparison([row])
    assert "protocol equal, repeated joins' JoinGroups real 1 sim 0" in line
    assert "0/1 triggers with equal counts" in tally([row]) and "1/1 with equal protocol counts" in tally(
        [row]
    )
    # another protocol count differing is no longer equal: a LeaveGroup more on the real side
    other = Comparison(
        "coordinator", "group.members=3", 3, "#1 leave c", [{**repeated.counts(), "api:LeaveGroup": 2}],
        [plain.counts()], [0.4], [0.4], [{**repeated.protocol_counts(), "api:LeaveGroup": 2}],
        [plain.protocol_counts()],
    )  # fmt: skip
    assert not other.protocol_equal
