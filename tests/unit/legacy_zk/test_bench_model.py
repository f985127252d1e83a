"""The analytic herd model of ``herdlab bench legacy_zk`` (worked by hand from its docstring)."""

from __future__ import annotations

from legacy_zk.bench import herd_model_requests


def test_model_counts_the_rebalance_reads_writes_and_two_requests_per_re_arm() -> None:
    # one broker, 10 partitions, 10 members after a leave: per member 2(1+1) + 2 + 1 + 2 = 9 fixed
    # reads + 10 registrations = 19 -> 190; offsets, deletes, creates 3 x 10 = 30; re-arms 2 x 10 = 20
    assert herd_model_requests(10, 1, 10) == 190 + 30 + 20 == 240
    # a join to 11 members over 10 partitions: 11 x (9 + 11) + 30 + 22
    assert herd_model_requests(11, 1, 10) == 220 + 30 + 22 == 272
    # one more member: (M+1)^2 - M^2 = 2M + 1 registration reads, plus 2B + 9 (its fixed reads, re-arm)
    assert herd_model_requests(51, 1, 50) - herd_model_requests(50, 1, 50) == (2 * 50 + 1) + (2 * 1 + 9)
