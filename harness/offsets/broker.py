"""The broker store of a group's offsets, read and written with kafka-python's admin client.

Contract: :func:`admin` checks the bootstrap list first (:func:`harness.cluster.probe.check_bootstrap`: a
one-line :class:`~harness.kernel.errors.Unreachable` naming the address when it is not a reachable Kafka
broker, within ``timeout_s``) and yields a :class:`KafkaAdminClient` whose requests time out after
``timeout_s``. Every Kafka error of a call becomes a one-line :class:`~harness.kernel.errors.HerdlabError`
naming the broker, the request and the Kafka error.

* :func:`committed`: OffsetFetch of every partition of the group (v2+: all topics); partitions without an
  offset (-1) are left out.
* :func:`commit`: one OffsetCommit with generation -1 and an empty member id (the "simple" commit of a
  consumer outside the group protocol; ``KafkaAdminClient.alter_group_offsets``).
* :func:`partitions`: Metadata of the topics (a topic the broker does not know has no partitions).
* :func:`log_end_offsets`: ListOffsets LATEST of each partition the broker knows.
* :func:`group_state`: DescribeGroups: the group's state and member count.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast

from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError, NoError
from kafka.protocol.consumer import OffsetSpec
from kafka.structs import OffsetAndMetadata
from kafka.structs import TopicPartition as KafkaTopicPartition

from harness.cluster.probe import check_bootstrap, client_logs_captured
from harness.kernel.errors import HerdlabError, Unreachable
from harness.offsets.core import TopicPartition

TIMEOUT_S = 5.0
CLIENT_ID = "herdlab-offsets"


class BrokerStore:
    """A group's view of one cluster through an admin client (see the module contract)."""

    def __init__(self, client: Any, bootstrap: str) -> None:
        # Any: the kafka-python stubs pyright bundles predate 3.0's group-offset and ListOffsets admin calls.
        self.client = client
        self.bootstrap = bootstrap

    def _fail(self, what: str, e: Exception) -> HerdlabError:
        return HerdlabError(f"broker {self.bootstrap}: {what} failed: {e.__class__.__name__} {e}".strip())

    def committed(self, group: str, topics: Iterable[str] = ()) -> dict[TopicPartition, int]:
        try:
            found = self.client.list_group_offsets(group).get(group, {})
        except KafkaError as e:
            raise self._fail(f"OffsetFetch of group {group}", e) from None
        wanted = set(topics)
        return {
            (tp.topic, tp.partition): oam.offset
            for tp, oam in found.items()
            if oam.offset >= 0 and (not wanted or tp.topic in wanted)
        }

    def commit(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``offsets`` for ``group``; raises naming every partition the broker refused."""
        request = {KafkaTopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
        try:
            result: dict[Any, Any] = self.client.alter_group_offsets(group, request)
        except KafkaError as e:
            raise self._fail(f"OffsetCommit of group {group}", e) from None
        refused = sorted(
            (f"{tp.topic}/{tp.partition}: {err.__name__}" for tp, err in result.items() if err is not NoError)
        )
        missing = sorted(f"{tp.topic}/{tp.partition}: no answer" for tp in request if tp not in result)
        if refused or missing:
            raise HerdlabError(
                f"broker {self.bootstrap} refused the OffsetCommit of group {group}: "
                + ", ".join(refused + missing)
            )

    def partitions(self, topics: Iterable[str]) -> dict[str, list[int]]:
        names = list(dict.fromkeys(topics))
        if not names:
            return {}
        try:
            described: list[dict[str, Any]] = self.client.describe_topics(names)
        except KafkaError as e:
            raise self._fail("Metadata", e) from None
        return {
            str(t["name"]): sorted(int(p["partition_index"]) for p in t["partitions"])
            for t in described
            if not t.get("error_code")
        }

    def log_end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        specs = {KafkaTopicPartition(t, p): OffsetSpec.LATEST for t, p in partitions}
        if not specs:
            return {}
        try:
            found: dict[Any, Any] = self.client.list_partition_offsets(specs)
        except KafkaError as e:
            raise self._fail("ListOffsets", e) from None
        return {(tp.topic, tp.partition): int(v.offset) for tp, v in found.items()}

    def group_state(self, group: str) -> tuple[str | None, int]:
        """``(state, member count)`` from DescribeGroups."""
        try:
            described: dict[str, dict[str, Any]] = self.client.describe_groups([group])
        except KafkaError as e:
            raise self._fail(f"DescribeGroups of group {group}", e) from None
        info = described.get(group)
        if info is None:
            return None, 0
        if info.get("error"):
            raise HerdlabError(f"broker {self.bootstrap}: DescribeGroups of group {group}: {info['error']}")
        return info.get("group_state"), len(info.get("members") or [])


@contextmanager
def admin(bootstrap: str, timeout_s: float = TIMEOUT_S) -> Iterator[BrokerStore]:
    """A :class:`BrokerStore` on ``bootstrap`` (see the module contract); kafka-python's log lines are kept
    quiet while it is open."""
    with client_logs_captured():
        check_bootstrap(bootstrap, time.monotonic() + timeout_s)
        ms = int(timeout_s * 1000)
        try:
            client = cast(Any, KafkaAdminClient)(
                bootstrap_servers=bootstrap,
                client_id=CLIENT_ID,
                request_timeout_ms=ms,
                bootstrap_timeout_ms=ms,
            )
        except KafkaError as e:
            raise Unreachable(f"bootstrap server {bootstrap}: {e.__class__.__name__} {e}".strip()) from None
        try:
            yield BrokerStore(client, bootstrap)
        finally:
            client.close()
