"""The analytic herd model of ``herdlab bench legacy_zk`` (:mod:`legacy_zk.model`), worked by hand from
its docstring: ``M^2 + (2B+9)M + 3P + (B+1)K`` requests with ``M`` the members after the change and
``K = min(M, P)`` the members that own partitions."""

from __future__ import annotations

import pytest

from legacy_zk.model import HerdModel, herd_model, herd_model_requests


def test_model_counts_the_rebalance_reads_writes_and_two_requests_per_re_arm() -> None:
    # one broker, 10 partitions, 10 members after a leave: per member 2(1+1) + 2 + 1 + 2 = 9 fixed
    # reads + 10 registrations = 19 -> 190; offsets, deletes, creates 3 x 10 = 30; re-arms 2 x 10 = 20;
    # 10 owners' leader finders, 1 + 1 each = 20
    assert herd_model_requests(10, 1, 10) == 190 + 30 + 20 + 20 == 260
    # a join to 11 members over 10 partitions: 11 x (9 + 11) + 30 + 22, and 10 owners (one has none): 20
    assert herd_model_requests(11, 1, 10) == 220 + 30 + 22 + 20 == 292
    # one more member: (M+1)^2 - M^2 = 2M + 1 registration reads, plus 2B + 9 (its fixed reads, re-arm)
    assert herd_model_requests(51, 1, 50) - herd_model_requests(50, 1, 50) == (2 * 50 + 1) + (2 * 1 + 9)
    # two brokers: 2(B+1) = 6 broker reads per member instead of 4; 3 members, 4 partitions:
    # 3 x (6 + 2 + 1 + 2 + 3) + 3 x 4 + 2 x 3, and 3 owners' leader finders of B + 1 = 3 each
    assert herd_model_requests(3, 2, 4) == 42 + 12 + 6 + 9 == 69


def test_a_join_is_watched_by_every_member_before_it_and_rebalanced_by_one_more() -> None:
    # 10 members + the joiner = 11 rebalancing (292, above); registrations 11 x 11 + 2 x 11 = 143
    assert herd_model("join", 10, 1, 10) == HerdModel(
        members_after=11, notifications=10, zk_requests=292, owner_writes=20, registration_reads=143
    )


def test_a_leave_or_crash_is_watched_and_rebalanced_by_the_survivors() -> None:
    # 11 - 1 = 10 survivors: 260 requests (above); registrations 100 + 20
    leave = HerdModel(
        members_after=10, notifications=10, zk_requests=260, owner_writes=20, registration_reads=120
    )
    assert herd_model("leave", 11, 1, 10) == leave
    # 10 - 1 = 9 survivors over 10 partitions: 81 + 11 x 9 + 30 + 9 owners x 2 = 228; registrations 81 + 18
    assert herd_model("crash", 10, 1, 10) == HerdModel(
        members_after=9, notifications=9, zk_requests=228, owner_writes=20, registration_reads=99
    )


def test_unknown_changes_and_removing_from_an_empty_group_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown change 'expire'"):
        herd_model("expire", 3, 1, 3)
    with pytest.raises(ValueError, match="needs a member to remove"):
        herd_model("leave", 0, 1, 3)
