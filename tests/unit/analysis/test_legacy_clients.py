"""The legacy fidelity summary on hand-made units: herdlab's member beside Kafka 0.8.2.2's own consumer.
Expected values are worked out by hand in each test."""

from __future__ import annotations

from typing import Any

import pytest

from harness.analysis import legacy_clients
from harness.analysis.legacy_clients import median_interval, summary


def test_the_median_interval_of_five_values_is_their_range_with_its_coverage() -> None:
    # n = 5: [x(1), x(5)] covers the median with 1 - 2 / 2^5 = 0.9375, the best there is, under 95 %
    assert median_interval([3.0, 1.0, 5.0, 2.0, 4.0]) == (1.0, 5.0, 0.9375)


def test_the_median_interval_narrows_once_the_sample_allows_it() -> None:
    # n = 9: j = 2 covers 1 - 2 (1 + 9) / 512 = 0.9609 >= 0.95; j = 3 covers 1 - 2 (1 + 9 + 36) / 512 = 0.8203
    assert median_interval([float(v) for v in range(1, 10)]) == (2.0, 8.0, 0.9609)
    assert median_interval([]) is None
    assert median_interval([7.0]) == (7.0, 7.0, 0.0)


def unit(client: str, case: str, rep: int, **trigger: Any) -> dict[str, Any]:
    t = {"key": "#1 join", "index": 0, "action": "join", "outcome": "settled", **trigger}
    return {"impl": "legacy_zk", "case": case, "repetition": rep, "client": client, "triggers": [t]}


CASES = [
    {"index": 0, "label": "client=python", "params": {"group.legacy_zk.client": "python"}},
    {"index": 1, "label": "client=kafka-0.8.2.2", "params": {"group.legacy_zk.client": "kafka-0.8.2.2"}},
]


def test_two_clients_meet_in_one_row_and_disjoint_intervals_are_a_difference() -> None:
    ours = [
        unit("", "client=python", r, latency_s=v, watches=4, zk_requests=10, zk_requests_by_op={"get": 10})
        for r, v in enumerate((1.0, 1.1, 1.2, 1.3, 1.4))
    ]
    orig = [
        unit(
            "kafka-0.8.2.2",
            "client=kafka-0.8.2.2",
            r,
            latency_s=v,
            watches=4,
            zk_requests=12,
            zk_requests_by_op={"get": 10, "exists": 2},
        )
        for r, v in enumerate((2.0, 2.1, 2.2, 2.3, 2.4))
    ]
    s = summary(ours + orig, CASES)
    assert s is not None and s["clients"] == ["python", "kafka-0.8.2.2"]
    (row,) = s["rows"]
    assert (row["pairing"], row["trigger"], row["action"]) == ("", "#1 join", "join")
    lat = row["metrics"]["latency_s"]
    assert lat["python"] == {"median": 1.2, "ci95": [1.0, 1.4], "coverage": 0.9375, "n": 5}
    assert lat["kafka-0.8.2.2"]["median"] == 2.2
    # [1.0, 1.4] and [2.0, 2.4] do not overlap; watches are equal; our member made no exists: 0 each time
    assert row["metrics"]["zk_requests[exists]"]["python"]["ci95"] == [0.0, 0.0]
    assert "latency_s" in row["differs"] and "zk_requests[exists]" in row["differs"]
    assert "watches" not in row["differs"] and "zk_requests[get]" not in row["differs"]


def test_a_never_settled_repetition_reads_never_and_one_client_alone_has_no_summary() -> None:
    ours = [unit("", "client=python", r, latency_s=1.0) for r in range(3)]
    orig = [unit("kafka-0.8.2.2", "client=kafka-0.8.2.2", 0, outcome="never", latency_s=None)]
    s = summary(ours + orig, CASES)
    assert s is not None
    assert s["rows"][0]["metrics"]["latency_s"]["kafka-0.8.2.2"]["median"] == "never"
    assert summary(ours, CASES) is None


@pytest.mark.parametrize(
    "params", [{"group.members": 4, "group.legacy_zk.client": "python"}, {"group.members": 4}]
)
def test_the_pairing_leaves_the_client_out(params: dict[str, Any]) -> None:
    assert legacy_clients.pairing(params) == "group.members=4"
