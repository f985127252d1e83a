"""The clients' repeated joins (kafka-python's second joins) told apart from the protocol's own requests in a
trigger window, from hand-made SyncGroups and hand-made coordinator units: what the validation takes out of
both sides before it compares the protocol's counts."""

from __future__ import annotations

from collections import Counter

from harness.bench.simulator import format_comparison, tally
from harness.sim.validate import Comparison, Sync, repeat_attempts, repeated_joins, unit_counts
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


def test_the_attempts_of_a_leaders_repeated_round_are_those_of_members_that_had_synced_before_it() -> None:
    round5 = [Sync("a", 5, True), Sync("b", 5, False), Sync("c", 5, False)]
    round6 = [Sync("b", 6, False), Sync("a", 6, True), Sync("c", 6, False)]
    # per attempt, its member's last generation synced before it: a, b, c began before syncing (None);
    # then b and c, which had synced in 5, began again in the repeated round 6
    assert repeat_attempts(round5 + round6, [None, None, None, 5, 5]) == 2
    # the same attempts when 6 is a round of the protocol's (another leader): none is a repeat's
    other_leader = [Sync("a", 6, False), Sync("b", 6, True), Sync("c", 6, False)]
    assert repeat_attempts(round5 + other_leader, [None, None, None, 5, 5]) == 0
    # two repeats in a row (5 repeated by 6, 6 by 7): b began again after 5, c after 6
    round7 = [Sync("a", 7, True), Sync("b", 7, False), Sync("c", 7, False)]
    assert repeat_attempts(round5 + round6 + round7, [None, None, None, 5, 6]) == 2


def _leave_unit_with_a_leaders_repeat() -> list[dict[str, object]]:
    """A coordinator unit by hand: a (leader), b and c own p0, p1 and p2; c leaves at 2000 ms (its
    attempt at 2005); a and b begin at 2050 / 2060, join and sync in generation 2 (a with the
    assignments, then its Metadata refresh); b has its assignment at 2250; a's join is sent again at
    2300 (the leader's: a new round, generation 3, a the leader again); b, assigned, begins again at 2320
    and joins; both sync in generation 3 and a refreshes metadata again."""
    h = UnitHistory("c3", partitions=3)
    h.unit_start(0, ["a", "b", "c"])
    for p, m in enumerate("abc"):
        h.joined(100, m, p)
    h.stable(1000).action(2000, "leave", ["c"], complete_ms=2020)
    h.at(2005, "rebalance_begin", "c").revoked(2005, "c", 2)

    def request(ms: int, api: str, name: str, **kw: object) -> None:  # member ids as the broker's: name-uuid
        h.at(ms, "group_request", "broker-0", api=api, client=name, member=f"{name}-1", **kw)

    request(2010, "LeaveGroup", "c")
    h.at(2040, "rebalance_begin", "broker-0", generation=1)  # the broker's: not a member's attempt
    h.at(2050, "rebalance_begin", "a").at(2060, "rebalance_begin", "b")
    request(2100, "JoinGroup", "a")
    request(2110, "JoinGroup", "b")
    request(2200, "SyncGroup", "a", generation=2, assignments=2)
    request(2205, "Metadata", "a")
    request(2210, "SyncGroup", "b", generation=2, assignments=0)
    h.joined(2250, "b", 1)
    request(2300, "JoinGroup", "a")
    h.at(2320, "rebalance_begin", "b")
    request(2330, "JoinGroup", "b")
    request(2400, "SyncGroup", "a", generation=3, assignments=2)
    request(2405, "Metadata", "a")
    request(2410, "SyncGroup", "b", generation=3, assignments=0)
    h.joined(2450, "a", 0, 2).joined(2450, "b", 1)
    return h.settling_end(5000).events


def test_a_leaders_repeated_round_is_left_out_of_the_protocol_counts_attempts_included() -> None:
    (t,) = unit_counts(_leave_unit_with_a_leaders_repeat(), 1.0)
    assert t.outcome == "settled"
    # by hand: attempts c, a, b and b again; 2 JoinGroups and 2 SyncGroups a round, a Metadata after each
    assert t.counts() == {
        "attempts": 4, "api:JoinGroup": 4, "api:LeaveGroup": 1, "api:Metadata": 2, "api:SyncGroup": 4,
    }  # fmt: skip
    assert dict(t.repeats) == {"JoinGroup": 2, "SyncGroup": 2, "Metadata": 1} and t.repeat_attempts == 1
    # the protocol's own: one round, c's, a's and b's first attempts
    assert t.protocol_counts() == {
        "attempts": 3, "api:JoinGroup": 2, "api:LeaveGroup": 1, "api:Metadata": 1, "api:SyncGroup": 2,
    }  # fmt: skip


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
