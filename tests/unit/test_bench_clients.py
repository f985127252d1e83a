"""``herdlab bench clients``'s pure part: when a member's history says the group owns every partition."""

from __future__ import annotations

from harness.bench.clients import owns_all


def test_owns_all_needs_every_member_assigned_and_each_partition_owned_once() -> None:
    assert owns_all({"m0": [0, 1, 2, 3]}, ["m0"], 4)
    assert owns_all({"m0": [0, 1], "m1": [2, 3]}, ["m0", "m1"], 4)
    assert not owns_all({"m0": [0, 1, 2, 3]}, ["m0", "m1"], 4)  # m1 has no assignment yet
    assert not owns_all({"m0": [0, 1, 2], "m1": []}, ["m0", "m1"], 4)  # partition 3 unowned
    assert not owns_all({"m0": [0, 1, 2], "m1": [2, 3]}, ["m0", "m1"], 4)  # 2 owned twice
    assert owns_all({"m0": [0, 1, 2, 3], "m1": []}, ["m0", "m1"], 4)  # an empty share is an assignment
