"""The Coordinators summary against several reference brokers (herdlab / Apache Kafka 3.9 and 4.x): the
latency ratio of the means with its 95 % interval, the fidelity band, request kinds whose medians differ,
the broker column labels with Apache Kafka's version, and the broker-configuration table. Pure:
hand-made units whose expected figures are worked out here."""

from __future__ import annotations

import math
from typing import Any

from harness.analysis.coordinators import summary
from harness.analysis.units import columns
from harness.report.markdown import render_markdown
from harness.report.tables import (
    broker_config_columns,
    broker_config_rows,
    coordinators_columns,
    coordinators_rows,
    request_kind_rows,
)
from tests.support.metrics import build, trigger, unit

AK3, AK4 = "apache-kafka 3.9.2", "apache-kafka 4.1.1"
#: broker -> per repetition (join latency or None = never, join requests)
JOINS: dict[str, list[tuple[float | None, int]]] = {
    "herdlab": [(1.0, 12), (2.0, 12), (3.0, 13)],
    AK3: [(2.0, 12), (2.0, 12), (2.0, 12)],
    AK4: [(1.0, 12), (1.0, 12), (None, 12)],
}


def _run(joins: dict[str, list[tuple[float | None, int]]] = JOINS) -> dict[str, Any]:
    units = []
    for broker, reps in joins.items():
        for rep, (latency, requests) in enumerate(reps):
            t = (
                trigger(0, "join", latency=latency, requests=requests, impl="coordinator")
                if latency is not None
                else trigger(0, "join", outcome="never", latency=None, requests=requests, impl="coordinator")
            )
            cfg: dict[str, Any] = {
                "broker": broker.split()[0],
                "properties": {"group.initial.rebalance.delay.ms": "0"},
            }
            if broker != "herdlab":
                cfg["version"] = broker.split()[1]
                cfg["properties"]["log.dirs"] = f"/tmp/unit-{rep}"
                cfg["properties"]["offsets.topic.replication.factor"] = "1"
            units.append(
                unit(
                    "coordinator",
                    broker,
                    rep,
                    [t],
                    client="kafka-python",
                    broker=broker,
                    assignor="range",
                    broker_config=cfg,
                )
            )
    m = build(units, repetitions=3)
    m["coordinators"] = summary(m["units"], m["aggregates"])
    return m


def test_herdlab_is_compared_with_each_reference_broker_with_a_95_percent_interval() -> None:
    c = _run()["coordinators"]
    assert c["brokers"] == ["herdlab", AK3, AK4] and c["reference"] == [AK3, AK4]
    (row,) = c["rows"]
    v3, v4 = row["vs"][AK3], row["vs"][AK4]
    # herdlab 1, 2, 3 (mean 2, s^2 = 1) over 2, 2, 2 (mean 2, s^2 = 0): R = 1; on the log scale
    # se^2 = 1 / (3 * 2^2) = 1/12 and nu = 2 (only herdlab varies), t(0.975, 2) = 4.302653,
    # so the interval is exp(-+ 4.302653 * sqrt(1/12)) = exp(-+ 1.242069) = [0.288786, 3.462770]
    assert v3["latency_ratio"] == 1.0
    lo, hi = v3["latency_ci95"]
    assert math.isclose(lo, 0.288786, abs_tol=2e-6) and math.isclose(hi, 3.462770, abs_tol=2e-6)
    assert v3["latency_n"] == [3, 3] and v3["latency_never"] == [0, 0]
    assert v3["latency_outside"] is False  # [0.29, 3.46] overlaps [0.9, 1.1]
    # 4.x: one repetition never settled, left out and counted; 1.0, 1.0 do not vary: R = 2 / 1 = 2, and
    # with se^2 = 1/12 + 0 the same half-width: [2 exp(-1.242069), 2 exp(1.242069)] = [0.577572, 6.925540]
    assert v4["latency_ratio"] == 2.0 and v4["latency_n"] == [3, 2] and v4["latency_never"] == [0, 1]
    lo, hi = v4["latency_ci95"]
    assert math.isclose(lo, 0.577572, abs_tol=4e-6) and math.isclose(hi, 6.925540, abs_tol=4e-6)
    # medians: herdlab 12, 12, 13 -> 12; the references 12
    assert row["coordination_requests"] == {"herdlab": 12, AK3: 12, AK4: 12}
    assert v3["requests_ratio"] == 1.0
    # by kind (JoinGroup = requests // 2, SyncGroup the rest): herdlab JoinGroup 6, 6, 6 and SyncGroup
    # 6, 6, 7 -> medians 6 and 6, as on both references: no kind differs
    assert row["requests_by_kind"] == {
        "JoinGroup": {"herdlab": 6, AK3: 6, AK4: 6},
        "SyncGroup": {"herdlab": 6, AK3: 6, AK4: 6},
    }
    assert v3["kinds_differ"] == [] and v4["kinds_differ"] == []


def test_an_interval_wholly_outside_the_band_and_a_differing_kind_are_marked() -> None:
    # herdlab 4.0 three times with 14 requests: twice 3.9's 2.0, no spread: the interval [2, 2]
    m = _run({**JOINS, "herdlab": [(4.0, 14), (4.0, 14), (4.0, 14)]})
    (row,) = m["coordinators"]["rows"]
    v3 = row["vs"][AK3]
    assert v3["latency_ratio"] == 2.0 and v3["latency_ci95"] == [2.0, 2.0] and v3["latency_outside"] is True
    # 14 requests: JoinGroup 7, SyncGroup 7 against 6 and 6
    assert v3["kinds_differ"] == ["JoinGroup", "SyncGroup"]
    assert coordinators_rows(m)[0][6] == "2.00 [2.00, 2.00] *"
    assert coordinators_columns(m)[3:8] == [
        "latency herdlab",
        f"latency {AK3}",
        f"latency {AK4}",
        f"latency herdlab/{AK3}",
        f"latency herdlab/{AK4}",
    ]
    kinds = request_kind_rows(m)
    assert kinds[0] == ["#1 join", "kafka-python", "range", "JoinGroup", "7", "6", "6", f"{AK3}, {AK4}"]


def test_the_broker_configuration_table_lists_each_brokers_settings_without_per_unit_ones() -> None:
    m = _run()
    assert broker_config_columns(m) == ["setting", "herdlab", AK3, AK4]
    assert broker_config_rows(m) == [
        ["group.initial.rebalance.delay.ms", "0", "0", "0"],
        ["offsets.topic.replication.factor", "—", "1", "1"],
    ]
    md = render_markdown(m, [])
    assert "## Broker configuration" in md and "### Requests by kind" in md
    assert "/tmp/unit-" not in md  # log.dirs differs per unit: left out


def test_apache_kafkas_column_label_carries_the_version_it_ran() -> None:
    # the version the unit's broker reported wins; else the case's kafka_version, else the scenario's
    assert columns("coordinator", None, {"cluster.broker": "apache-kafka"}, {}, "3.9.2")["broker"] == AK3
    params = {"cluster.broker": "apache-kafka", "cluster.kafka_version": "4"}
    assert columns("coordinator", None, params, {})["broker"] == "apache-kafka 4"
    scenario = {"cluster": {"broker": "apache-kafka", "kafka_version": "4.1.1"}}
    assert columns("coordinator", None, {}, scenario)["broker"] == AK4
    assert columns("coordinator", None, {"cluster.broker": "herdlab"}, {}, None)["broker"] == "herdlab"
