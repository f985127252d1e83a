"""The per-trigger fields of rebalance rounds and partitions that never stopped (their Spark jobs are
tested on hand-made histories in tests/integration/analysis/test_cooperative.py)."""

from __future__ import annotations

from harness.analysis.cooperative import cooperative_fields
from harness.analysis.herd import rebalance_rounds


def test_rounds_are_the_leader_syncs_of_coordinator_units_with_broker_reports() -> None:
    assert rebalance_rounds({"leader_syncs": 2}, "coordinator", True, True) == 2
    assert rebalance_rounds({}, "coordinator", True, True) == 0  # no SyncGroup in the window
    assert rebalance_rounds({"leader_syncs": 2}, "legacy_zk", True, True) is None
    assert rebalance_rounds({"leader_syncs": 2}, "coordinator", False, True) is None  # no broker
    assert rebalance_rounds({"leader_syncs": 2}, "coordinator", True, False) is None  # skipped


def test_rounds_of_consumer_units_are_the_new_epochs_reached() -> None:
    # the consumer protocol has no SyncGroup: its rounds are the distinct new epochs members reached
    assert rebalance_rounds({"leader_syncs": 0, "epochs_reached": 1}, "consumer", True, True) == 1
    assert rebalance_rounds({}, "consumer", True, True) == 0
    assert rebalance_rounds({"epochs_reached": 1}, "consumer", False, True) is None  # no broker


def test_undisturbed_fields_of_settled_and_other_triggers() -> None:
    # 4 of 6 partitions kept, longest gap 250 ms
    assert cooperative_fields(
        "settled", {"partitions_at_t0": 6, "undisturbed": 4, "undisturbed_gap_ns": 2.5e8}
    ) == {
        "undisturbed_partitions": 4,
        "undisturbed_fraction": round(4 / 6, 6),
        "undisturbed_gap_s": 0.25,
    }
    # eager: nothing kept, no gap; nothing owned at t0: no fraction
    assert cooperative_fields("settled", {"partitions_at_t0": 6}) == {
        "undisturbed_partitions": 0,
        "undisturbed_fraction": 0.0,
        "undisturbed_gap_s": None,
    }
    assert cooperative_fields("settled", {})["undisturbed_fraction"] is None
    assert set(cooperative_fields("never", {"undisturbed": 3}).values()) == {None}
