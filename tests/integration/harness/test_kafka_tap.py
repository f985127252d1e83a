"""The Kafka tap in front of herdlab's broker: for the same real kafka-python group traffic, what the tap
counts on the wire equals what the broker counts itself (its own ``group_request`` events)."""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from harness.cluster.kafka_tap import KafkaTap
from harness.history.writer import HistoryWriter
from tests.support.brokers import BrokerFactory
from tests.support.thread_members import ThreadMembers
from tests.support.waiting import wait_until


def _events(path: Path, kind: str) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [e for e in map(json.loads, path.read_text().splitlines()) if e["kind"] == kind]


def _per_api(path: Path) -> Counter[tuple[str, str | None]]:
    return Counter((e["api"], e.get("group")) for e in _events(path, "group_request"))


def test_the_taps_group_requests_per_api_equal_the_brokers_own(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    broker = broker_factory(extra_args=["--group-initial-rebalance-delay-ms", "0"], persistent=False)
    assert broker.history_path is not None
    broker_path = broker.history_path
    tap_path = tmp_path / "tap.jsonl"
    history = HistoryWriter(tap_path, source="tap", role="broker")
    host, _, port = broker.bootstrap.rpartition(":")
    with KafkaTap((host, int(port)), history, interval_s=0.2, proxy_protocol=True) as tap:
        admin = KafkaAdminClient(bootstrap_servers=tap.bootstrap, client_id="tap-admin")
        admin.create_topics([NewTopic("tapped", 3, 1)])  # pyright: ignore[reportUnknownMemberType]
        admin.close()
        members = ThreadMembers(tap.bootstrap, "tapped", "tapped-group", 2, "tap-c").start()
        try:
            wait_until(
                lambda: sum(members.owned.values()) == 3 and len(members.owned) == 2,
                timeout=30,
                what="the 2 consumers own the 3 partitions",
            )

            # the group is stable: what the tap forwarded, the broker dispatches (wait for in-flight ones)
            def agreed() -> Counter[tuple[str, str | None]] | None:
                counts = _per_api(tap_path)
                return counts if counts and counts == _per_api(broker_path) else None

            stable = wait_until(
                agreed, timeout=10, what="the tap's and the broker's group_request counts agree"
            )
        finally:
            assert members.stop()

        # the broker writes as it dispatches, the tap as it forwards: wait until both saw the LeaveGroups
        wait_until(
            lambda: (
                _per_api(tap_path)[("LeaveGroup", "tapped-group")] == 2
                and _per_api(broker_path)[("LeaveGroup", "tapped-group")] == 2
            ),
            timeout=10,
            what="both the tap and the broker saw the 2 LeaveGroups",
        )
        tap_counts, broker_counts = _per_api(tap_path), _per_api(broker_path)
    history.close()
    # a request in flight while a consumer closes (its last Metadata, say) is on the wire but may never be
    # dispatched: after the close the tap counts at least what the broker did
    assert all(tap_counts[k] >= n for k, n in broker_counts.items())
    assert set(tap_counts) == set(broker_counts)
    # the group formed: 2 members joined (at least once each) and synced, through the tap
    assert stable is not None and stable[("JoinGroup", "tapped-group")] >= 2
    assert tap_counts[("JoinGroup", "tapped-group")] >= 2
    assert tap_counts[("SyncGroup", "tapped-group")] >= 2
    # FindCoordinator v4+ names its groups in coordinator_keys: group None, as the broker writes it
    assert sum(n for (api, _), n in tap_counts.items() if api == "FindCoordinator") >= 2
    tapped = _events(tap_path, "group_request")
    assert {e["observed"] for e in tapped} == {"tap"}
    assert {e["client"] for e in tapped if e["api"] == "JoinGroup"} == {"tap-c0", "tap-c1"}
    # the counters: every request the group made, heartbeats included, went through the tap
    counters = _events(tap_path, "broker_request")
    assert counters and {e["observed"] for e in counters} == {"tap"}
    total: Counter[str] = Counter()
    for e in counters:
        total.update(e["requests"])
        assert e["total"] == sum(e["requests"].values())
    assert total["JoinGroup"] == sum(n for (api, _), n in tap_counts.items() if api == "JoinGroup")
    assert total["ApiVersions"] >= 1  # counted, though not a coordination request


def _commits(path: Path, group: str) -> Counter[tuple[str, int, int, str | None]]:
    return Counter(
        (e["kind"], e["partition"], e["offset"], e.get("error"))
        for kind in ("commit", "commit_rejected")
        for e in _events(path, kind)
        if e.get("group") == group
    )


def test_the_taps_decoded_commit_results_equal_the_brokers_own_commit_events(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata, TopicPartition

    broker = broker_factory(extra_args=["--group-initial-rebalance-delay-ms", "0"], persistent=False)
    assert broker.history_path is not None
    own_path = broker.history_path
    tap_path = tmp_path / "tap.jsonl"
    history = HistoryWriter(tap_path, source="tap", role="broker")
    host, _, port = broker.bootstrap.rpartition(":")
    group = "commit-group"
    with KafkaTap((host, int(port)), history, interval_s=0.2, proxy_protocol=True) as tap:
        admin = KafkaAdminClient(bootstrap_servers=tap.bootstrap, client_id="tap-admin")
        admin.create_topics([NewTopic("committed", 2, 1)])  # pyright: ignore[reportUnknownMemberType]
        admin.close()
        member = KafkaConsumer(
            "committed", bootstrap_servers=tap.bootstrap, group_id=group, enable_auto_commit=False
        )
        outsider = KafkaConsumer(bootstrap_servers=tap.bootstrap, group_id=group, enable_auto_commit=False)
        try:
            wait_until(
                lambda: member.poll(200) is not None and len(member.assignment()) == 2,
                timeout=30,
                what="the member owns both partitions",
            )
            # the member's commit: accepted for both partitions
            member.commit({TopicPartition("committed", p): OffsetAndMetadata(5 + p, "", -1) for p in (0, 1)})
            returned_ns = time.time_ns()  # the member has its answer: whatever it writes next comes later
            # a client outside the group commits with no generation while the group has a member: refused
            outsider.assign([TopicPartition("committed", 0)])
            with contextlib.suppress(KafkaError):
                outsider.commit({TopicPartition("committed", 0): OffsetAndMetadata(9, "", -1)})
            wait_until(
                lambda: sum(_commits(own_path, group).values()) == 3,
                timeout=10,
                what="the broker wrote both commits and the refusal",
            )
        finally:
            member.close()
            outsider.close()
    history.close()
    got, own = _commits(tap_path, group), _commits(own_path, group)
    assert got == own
    assert got[("commit", 0, 5, None)] == 1 and got[("commit", 1, 6, None)] == 1
    rejected = [k for k in got if k[0] == "commit_rejected"]
    assert [(k[1], k[2]) for k in rejected] == [(0, 9)] and rejected[0][3]  # refused, with the error's name
    # the member and its generation as the broker recorded them, too
    fields = ("partition", "offset", "member", "generation")
    tapped = [e for e in _events(tap_path, "commit") if e["group"] == group]
    assert {e["observed"] for e in tapped} == {"tap"}
    # stamped when the answer reached the tap, before it was forwarded: before the member had it (an eager
    # member's revocation right after its commit must not precede the commit's acceptance)
    assert all(e["ts_ns"] < returned_ns for e in tapped), [(e["ts_ns"], returned_ns) for e in tapped]
    own_commits = [e for e in _events(own_path, "commit") if e["group"] == group]
    assert sorted(tuple(e[f] for f in fields) for e in tapped) == sorted(
        tuple(e[f] for f in fields) for e in own_commits
    )
