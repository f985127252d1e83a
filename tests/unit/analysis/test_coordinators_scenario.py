"""The built-in ``coordinators`` scenario: the matrix the Coordinators table reads (case params
``cluster.broker``, ``group.coordinator.client``, ``group.assignor``: the unit columns of
:func:`harness.analysis.units.columns`), and triggers spaced for tansu's slower joins."""

from __future__ import annotations

from harness.analysis.units import columns
from harness.scenario import expand, load_scenario


def test_coordinators_covers_two_brokers_two_clients_two_assignors_with_three_triggers() -> None:
    s = load_scenario("coordinators")
    assert s.implementations == ["coordinator"] and s.repetitions == 1
    cases = expand(s)
    assert len(cases) == 8  # 2 brokers x 2 clients x 2 assignors
    cols = {tuple(columns("coordinator", None, c.params, {}).values()) for c in cases}
    assert cols == {
        (client, broker, assignor)
        for client in ("kafka-python", "librdkafka")
        for broker in ("herdlab", "tansu")
        for assignor in ("range", "cooperative-sticky")
    }
    # each case's own scenario has its axis values (what the run starts)
    for c in cases:
        assert c.scenario.cluster.broker == c.params["cluster.broker"]
        assert c.scenario.group.coordinator.client == c.params["group.coordinator.client"]
        assert c.scenario.group.assignor == c.params["group.assignor"]
    assert [a.action for a in s.timeline] == ["join", "leave", "crash"]
    # 15 s apart: a tansu join (about 5 s) or a crash (6 s session) settles before the next trigger
    ats = [a.at for a in s.timeline]
    assert [b - a for a, b in zip(ats, ats[1:], strict=False)] == [15.0, 15.0]
