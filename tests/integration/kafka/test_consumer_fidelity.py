"""The consumer design's fidelity at a test's size: the built-in ``consumer-fidelity-small`` (librdkafka members
on KIP-848's consumer group protocol, uniform assignor, a group of 2 on 6 partitions; a join, the leave of the
newest, the crash of the oldest) on herdlab's broker and on Apache Kafka 4. What must hold whatever the timing:
both units VALID, every trigger settled, and the heartbeats that carry each change (the herd) as the protocol
fixes them, the same on both brokers.

Marked ``kafka`` (CI runs them in .ci/run): the first fetch needs Maven Central; later ones find the version in
herdlab's cache.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cluster.kafka_dist import fetch
from harness.run.runner import RunOptions, run_scenario
from harness.run.session import analyse, is_valid
from harness.scenario import load_scenario

pytestmark = [pytest.mark.slow, pytest.mark.kafka]

HEARTBEAT = "ConsumerGroupHeartbeat"


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _joiner_reconciliations(events_dir: Path) -> int:
    """How many assignments the joiner (j0) reconciled before it left: its completed reconciliations that
    gave it partitions, up to its first revocation (the leave)."""
    count = 0
    for e in _events(events_dir / "j0.jsonl"):
        if e["kind"] == "revoked":
            break
        if e["kind"] == "rebalance_end" and e["outcome"] == "ok" and e["partitions"]:
            count += 1
    return count


def _expected_herd(joiner_reconciliations: int) -> dict[str, set[int]]:
    """The ConsumerGroupHeartbeat exchanges that carry each change, worked out from the protocol (each member
    heartbeats on its own timer; an exchange carries a change when it joins or leaves, reports owned
    partitions, or is answered with a new epoch or an assignment); a set where the timing allows several.

    Join of j0 to m0 (3 partitions) and m1 (3): the target is 2 + 2 + 2, and j0's two partitions are still
    owned, so
      * j0's join: 1 (epoch 0 -> the new group epoch, an empty assignment: its partitions are unreleased);
      * m0 and m1 each: the heartbeat answered with its smaller assignment at its old epoch (revoke one), then
        its acknowledgment (owned partitions) answered with the new epoch: 2 each, 4;
      * j0: both partitions come in one answer when m0 and m1 have both released theirs by j0's next
        heartbeat (the common case): that answer and j0's acknowledgment, 2. When j0's heartbeat falls
        between the two releases it reconciles twice: an answer with one partition, its acknowledgment, an
        answer with both, its acknowledgment (4), or 3 when the second release is in by the time j0
        acknowledges the first, so that one exchange carries the acknowledgment and the second partition.
    Leave of j0 (2 partitions, released as it leaves): its leave (epoch -1): 1; the group epoch is bumped and
      the target computed at the next heartbeat: m0 and m1 each get one free partition at once with the new
      epoch, then acknowledge it: 2 each, 4. Total 5.
    Crash of m0 (3 partitions): after the session timeout it is fenced; m1 is answered with all six and the
      new epoch, then acknowledges: 2.
    """
    joiner = {2} if joiner_reconciliations == 1 else {3, 4}
    return {"#1 join": {1 + 4 + n for n in joiner}, "#2 leave": {5}, "#3 crash": {2}}


@pytest.mark.long  # two units of about a minute, then the Spark analysis
def test_the_consumer_protocol_herd_is_the_same_on_herdlab_and_apache_kafka_4(tmp_path: Path) -> None:
    fetch("4")
    s = load_scenario("consumer-fidelity-small")
    result = run_scenario(s, RunOptions(out=tmp_path))
    assert len(result.units) == 2
    for unit in result.units:
        assert "failed" not in unit, unit.get("failed")
    metrics: Any = analyse(result.run_dir)  # PySpark, as `herdlab run` does
    assert is_valid(metrics), metrics["verdict"]["line"]
    events_of = {u["case"]: result.run_dir / "units" / u["unit"] / "events" for u in result.units}
    herd: dict[str, dict[str, int]] = {}
    for u in metrics["units"]:
        case = u["case"]
        assert u["impl"] == "consumer" and u["lost"] == 0 and u["not_drained"] == 0, case
        triggers = u["triggers"]
        assert [(t["key"], t["outcome"]) for t in triggers] == [
            ("#1 join", "settled"),
            ("#2 leave", "settled"),
            ("#3 crash", "settled"),
        ], case
        assert [t["targets"] for t in triggers] == [["j0"], ["j0"], ["m0"]], case
        # every change reaches one new epoch: one round each
        assert [t["rebalance_rounds"] for t in triggers] == [1, 1, 1], case
        counted = {t["key"]: t["broker_requests_by_api"].get(HEARTBEAT, 0) for t in triggers}
        reconciliations = _joiner_reconciliations(events_of[case])
        assert reconciliations in (1, 2), case
        expected = _expected_herd(reconciliations)
        for key, n in counted.items():
            assert n in expected[key], (case, key, n, reconciliations)
        herd[case] = counted
    assert set(herd) == {"cluster.broker=herdlab", "cluster.broker=apache-kafka"}
    # the leave and the crash do not depend on timing at all: equal between the brokers
    assert herd["cluster.broker=herdlab"]["#2 leave"] == herd["cluster.broker=apache-kafka"]["#2 leave"] == 5
    assert herd["cluster.broker=herdlab"]["#3 crash"] == herd["cluster.broker=apache-kafka"]["#3 crash"] == 2
