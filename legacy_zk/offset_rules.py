# pyright: strict
"""The rules of 0.8.2.2's offset storage, as pure functions (no IO, no clocks).

Contract (read from ``ZookeeperConsumerConnector.scala`` at tag 0.8.2.2)
-----------------------------------------------------------------------
* Error names are Kafka's (``NONE``, ``NOT_COORDINATOR``, ...); the 0.8 names map onto them
  (``NotCoordinatorForConsumerCode`` = ``NOT_COORDINATOR``, ``ConsumerCoordinatorNotAvailableCode`` =
  ``COORDINATOR_NOT_AVAILABLE``, ``OffsetsLoadInProgressCode`` = ``COORDINATOR_LOAD_IN_PROGRESS``).
* :func:`effective_dual`: ``dual.commit.enabled`` counts only with ``offsets.storage=kafka``.
* :func:`choose_offset` is the fetch rule: storage zookeeper: the ZooKeeper offset; storage kafka
  without dual commit: the broker's; with dual commit: the larger of the two. A missing offset is -1
  on either side (so -1 = none: ``auto.offset.reset`` applies).
* :func:`judge_commit` folds one OffsetCommit response as ``commitOffsets`` does: ``committed`` unless
  some partition answered failed with a retriable error (anything but ``OFFSET_METADATA_TOO_LARGE``;
  a partition the response leaves out is not folded, as 0.8.2.2 folds only ``commitStatus``);
  ``refresh`` (disconnect the channel so the offset manager is looked up again) when some partition
  answered ``NOT_COORDINATOR`` or ``COORDINATOR_NOT_AVAILABLE``. (The partitions answered ``NONE`` are
  the ones dual commit then writes to ZooKeeper.)
* :class:`CommitRetry` is the retry rule, odd as it is: ``retriesRemaining = 1 + (isAutoCommit ?
  offsets.commit.max.retries : 0)``; after each attempt ``done = (isShuttingDown && isAutoCommit) ?
  (--retriesRemaining == 0 || committed) : true``. 0.8.2 calls ``commitOffsets(isAutoCommit = true)``
  from the rebalance and from shutdown and ``false`` from the auto-commit scheduler (the name is
  inverted), so only a commit made while shutting down retries: up to ``1 + max.retries`` attempts.
* :func:`judge_fetch` folds one OffsetFetch response: ``retry_refresh`` when some partition answered
  ``NOT_COORDINATOR`` (disconnect, retry), ``retry`` when some answered
  ``COORDINATOR_LOAD_IN_PROGRESS`` (retry on the same channel); otherwise the offsets are used as
  they are (any other per-partition error leaves that partition's offset, normally -1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

K = TypeVar("K")

NONE = "NONE"
NOT_COORDINATOR = "NOT_COORDINATOR"
COORDINATOR_NOT_AVAILABLE = "COORDINATOR_NOT_AVAILABLE"
COORDINATOR_LOAD_IN_PROGRESS = "COORDINATOR_LOAD_IN_PROGRESS"
OFFSET_METADATA_TOO_LARGE = "OFFSET_METADATA_TOO_LARGE"

#: Commit errors after which 0.8.2 disconnects the offsets channel (the offset manager moved or is down).
REFRESH_ERRORS = (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE)
#: The one commit error 0.8.2 does not retry.
NOT_RETRIABLE = (OFFSET_METADATA_TOO_LARGE,)

STORAGES = ("zookeeper", "kafka")

#: Commit reasons (``commit`` events) -> 0.8.2's ``isAutoCommit`` argument of ``commitOffsets``.
#: ``manual`` is the application's ``commitOffsets()`` (KAFKA-1743: ``commitOffsets(true)``).
IS_AUTO_COMMIT: Mapping[str, bool] = {"auto": False, "rebalance": True, "shutdown": True, "manual": True}


def effective_dual(storage: str, dual: bool) -> bool:
    """Whether dual commit is in force: 0.8.2.2 reads ``dual.commit.enabled`` only with kafka storage."""
    return storage == "kafka" and dual


def choose_offset(storage: str, dual: bool, zookeeper_offset: int | None, kafka_offset: int | None) -> int:
    """The start offset the fetch rule picks (module contract); ``None`` / -1 = no offset there."""
    zk = -1 if zookeeper_offset is None else zookeeper_offset
    kafka = -1 if kafka_offset is None else kafka_offset
    if storage == "zookeeper":
        return zk
    if dual:
        return max(zk, kafka)
    return kafka


@dataclass(frozen=True)
class CommitJudgement:
    """One OffsetCommit response, folded as 0.8.2.2's ``commitOffsets`` folds it."""

    committed: bool
    refresh: bool


def judge_commit(errors: Mapping[K, str]) -> CommitJudgement:
    """Fold per-partition error names (module contract)."""
    failed = any(e != NONE for e in errors.values())
    retriable = any(e != NONE and e not in NOT_RETRIABLE for e in errors.values())
    refresh = any(e in REFRESH_ERRORS for e in errors.values())
    return CommitJudgement(committed=not (failed and retriable), refresh=refresh)


class CommitRetry:
    """The retry loop state of one ``commitOffsets(isAutoCommit)`` call (module contract)."""

    def __init__(self, is_auto_commit: bool, max_retries: int) -> None:
        self.is_auto_commit = is_auto_commit
        self.retries_remaining = 1 + (max_retries if is_auto_commit else 0)

    def done(self, shutting_down: bool, committed: bool) -> bool:
        """After an attempt: True = stop; False = sleep ``offsets.channel.backoff.ms`` and retry."""
        if shutting_down and self.is_auto_commit:
            self.retries_remaining -= 1
            return self.retries_remaining == 0 or committed
        return True


@dataclass(frozen=True)
class FetchJudgement:
    """One OffsetFetch response, folded as 0.8.2.2's ``fetchOffsets`` folds it."""

    retry: bool
    refresh: bool


def judge_fetch(errors: Mapping[K, str]) -> FetchJudgement:
    """``leaderChanged`` (NOT_COORDINATOR: disconnect and retry) wins over ``loadInProgress`` (retry)."""
    if any(e == NOT_COORDINATOR for e in errors.values()):
        return FetchJudgement(retry=True, refresh=True)
    if any(e == COORDINATOR_LOAD_IN_PROGRESS for e in errors.values()):
        return FetchJudgement(retry=True, refresh=False)
    return FetchJudgement(retry=False, refresh=False)
