"""herdlab's legacy member beside Kafka 0.8.2.2's own consumer at a test's size: the built-in ``original-small``
(a legacy_zk group of 3 on 3 partitions; a join, a leave, a crash and a zombie paused past its session) with
``group.legacy_zk.client`` ``python`` and ``kafka-0.8.2.2``, both on Apache Kafka 3.9 (ZooKeeper mode) behind the
ZooKeeper tap. What must hold whatever the timing: both units VALID, every herd trigger settled, the watch
notifications of each change as the protocol fixes them (one per member watching the group's registrations),
counted by the tap for both columns, and the report's legacy fidelity summary pairing the two.

Marked ``kafka`` and ``clients`` (CI runs them in .ci/run): the first fetch of Apache Kafka and of the 0.8.2.2
jars needs Maven Central; later ones find them in herdlab's cache.
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

pytestmark = [pytest.mark.slow, pytest.mark.kafka, pytest.mark.clients]

CLIENTS = ("python", "kafka-0.8.2.2")


def _events(events_dir: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in sorted(events_dir.glob("*.jsonl")):
        out += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return out


@pytest.mark.long  # two units of about a minute and a half, then the Spark analysis
def test_the_original_and_herdlabs_member_are_counted_alike_by_the_zookeeper_tap(tmp_path: Path) -> None:
    fetch("3.9")
    s = load_scenario("original-small")
    result = run_scenario(s, RunOptions(out=tmp_path))
    assert len(result.units) == 2
    for unit in result.units:
        assert "failed" not in unit, unit.get("failed")
    metrics: Any = analyse(result.run_dir)
    assert is_valid(metrics), metrics["verdict"]["line"]
    by_client = {u.get("client") or "python": u for u in metrics["units"]}
    assert set(by_client) == set(CLIENTS)
    for client, u in by_client.items():
        assert u["impl"] == "legacy_zk" and u["lost"] == 0 and u["not_drained"] == 0, client
        herd = [t for t in u["triggers"] if t["action"] in ("join", "leave", "crash")]
        assert [(t["key"], t["outcome"]) for t in herd] == [
            ("#1 join", "settled"),
            ("#2 leave", "settled"),
            ("#3 crash", "settled"),
        ], client
        # by hand: the join's registration notifies the 3 members before it; the leave of one of 4 notifies
        # its 3 survivors and the leaver itself (its closeSession deletes its registration while its own
        # watch on the ids is armed: the server delivers that notification before it answers the close);
        # the crash of one of 3 notifies its 2 survivors once its session expires (an expired session is
        # told nothing)
        assert [t["watches"] for t in herd] == [3, 4, 2], client
        # each survivor re-reads every registration in its attempt: at least one get per member per member
        for t, members in zip(herd, (4, 3, 2), strict=True):
            assert t["registration_reads"] >= members * members, (client, t["key"])
            assert t["zk_requests_by_op"].get("get_children", 0) > 0, (client, t["key"])
    # the figures of both columns are the tap's: its events are in both units' histories
    for unit in result.units:
        events = _events(result.run_dir / "units" / unit["unit"] / "events")
        tapped = [e for e in events if e.get("role") == "zookeeper"]
        assert {e["kind"] for e in tapped} >= {"zk_request", "watch", "zk_session"}, unit["case"]
        members = {e["member"] for e in tapped if e["kind"] == "zk_request" and e.get("member")}
        assert len(members) >= 4, unit["case"]  # the 3 initial members and the joiner registered
    summary = metrics["legacy_clients"]
    assert summary["clients"] == list(CLIENTS)
    assert [r["trigger"] for r in summary["rows"]][:3] == ["#1 join", "#2 leave", "#3 crash"]
    for r in summary["rows"][:3]:
        watches = r["metrics"]["watches"]
        assert watches["python"]["median"] == watches["kafka-0.8.2.2"]["median"], r["trigger"]
