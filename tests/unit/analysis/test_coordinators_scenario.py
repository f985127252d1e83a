"""The built-in ``coordinators`` scenario: the matrix the Coordinators table reads (case params
``cluster.broker``, ``group.coordinator.client``, ``group.assignor``: the unit columns of
:func:`harness.analysis.units.columns`), and triggers spaced for tansu's slower joins."""

from __future__ import annotations

from harness.analysis.units import columns
from harness.scenario import expand, left_out, load_scenario


def test_coordinators_covers_every_client_on_herdlab_and_apache_kafka_and_the_python_ones_on_tansu() -> None:
    s = load_scenario("coordinators")
    assert s.implementations == ["coordinator"] and s.repetitions == 1
    cases = expand(s)
    every = ("kafka-python", "librdkafka", "java", "kafka-go", "franz-go")
    pairs = [(b, c) for b in ("herdlab", "apache-kafka") for c in every]
    pairs += [("tansu", "kafka-python"), ("tansu", "librdkafka")]
    # 12 (broker, client) pairs x 2 assignors, less kafka-go's cooperative-sticky on both brokers
    assert len(cases) == 12 * 2 - 2
    dump = s.model_dump(mode="json")
    cols = {tuple(columns("coordinator", None, c.params, dump).values()) for c in cases}
    assert cols == {
        (client, "apache-kafka 4" if broker == "apache-kafka" else broker, assignor)
        for broker, client in pairs
        for assignor in ("range", "cooperative-sticky")
        if (client, assignor) != ("kafka-go", "cooperative-sticky")
    }
    assert {(o.params["cluster.broker"], o.params["group.coordinator.client"]) for o in left_out(s)} == {
        ("herdlab", "kafka-go"),
        ("apache-kafka", "kafka-go"),
    }
    assert {
        c.scenario.cluster.kafka_version for c in cases if c.params["cluster.broker"] == "apache-kafka"
    } == {"4"}
    # every client fetches alike (500 ms), whatever its own default
    assert {c.scenario.group.coordinator.fetch_max_wait_ms for c in cases} == {500}
    # each case's own scenario has its axis values (what the run starts)
    for c in cases:
        assert c.scenario.cluster.broker == c.params["cluster.broker"]
        assert c.scenario.group.coordinator.client == c.params["group.coordinator.client"]
        assert c.scenario.group.assignor == c.params["group.assignor"]
    assert [a.action for a in s.timeline] == ["join", "leave", "crash"]
    # 15 s apart: a tansu join (about 5 s) or a crash (6 s session) settles before the next trigger
    ats = [a.at for a in s.timeline]
    assert [b - a for a, b in zip(ats, ats[1:], strict=False)] == [15.0, 15.0]
