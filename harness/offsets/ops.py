"""The three ``herdlab offsets`` operations on a real cluster: read both stores, apply the core, write.

Contract:

* :func:`diff` reads the group's offsets from ZooKeeper and the broker, the broker's partitions and log end
  offsets of the group's topics, and returns :func:`harness.offsets.core.diff_rows`.
* :func:`read_store` reads one store (``"zookeeper"`` or ``"kafka"``).
* :func:`plan_copy` reads the source and the target store and the group's activity in both stores and returns
  the plan and the live-member refusal (``None``: no live member); :func:`execute_copy` writes the plan's
  changed offsets to the target store.

A group with no committed offset in the store(s) an operation reads is a
:class:`~harness.kernel.errors.ConfigError` saying so (the group name is likely mistyped).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.kernel.errors import ConfigError
from harness.offsets import broker, zookeeper
from harness.offsets.core import (
    Activity,
    CopyStep,
    DiffRow,
    TopicPartition,
    changed,
    copy_plan,
    diff_rows,
    group_topics,
    live_member_refusal,
)

STORE_NAMES = {"zookeeper": "ZooKeeper", "kafka": "the broker"}


def _no_offsets(group: str, where: str, topics: tuple[str, ...] = ()) -> ConfigError:
    scope = f" for topic(s) {', '.join(topics)}" if topics else ""
    return ConfigError(f"group {group} has no committed offsets{scope} in {where}")


def diff(zookeeper_connect: str, bootstrap: str, group: str, topics: tuple[str, ...] = ()) -> list[DiffRow]:
    """The diff rows of ``group`` (all its topics, or ``topics``); raises when neither store has offsets."""
    with zookeeper.session(zookeeper_connect) as zk:
        zk_offsets = zookeeper.read_offsets(zk, group, topics)
    with broker.admin(bootstrap) as store:
        kafka_offsets = store.committed(group, topics)
        if not zk_offsets and not kafka_offsets:
            raise _no_offsets(group, "ZooKeeper or in the broker", topics)
        names = group_topics(zk_offsets, kafka_offsets, topics)
        partitions_of = store.partitions(names)
        log_end = store.log_end_offsets((t, p) for t in partitions_of for p in partitions_of[t])
    return diff_rows(zk_offsets, kafka_offsets, log_end, partitions_of, topics)


def read_store(
    store: str, group: str, zookeeper_connect: str | None, bootstrap: str | None, topics: tuple[str, ...] = ()
) -> dict[TopicPartition, int]:
    """The committed offsets of ``group`` in one store; raises when it has none."""
    if store == "zookeeper":
        if not zookeeper_connect:
            raise ConfigError("--from zookeeper needs --zookeeper HOST:PORT")
        with zookeeper.session(zookeeper_connect) as zk:
            offsets = zookeeper.read_offsets(zk, group, topics)
    else:
        if not bootstrap:
            raise ConfigError("--from kafka needs --bootstrap HOST:PORT")
        with broker.admin(bootstrap) as b:
            offsets = b.committed(group, topics)
    if not offsets:
        raise _no_offsets(group, STORE_NAMES[store], topics)
    return offsets


@dataclass(frozen=True)
class CopyPlan:
    """A copy from ``source`` to ``target`` store: its steps and why it must not run (``refusal``)."""

    group: str
    source: str
    target: str
    steps: list[CopyStep]
    refusal: str | None


def plan_copy(
    zookeeper_connect: str, bootstrap: str, group: str, source: str, target: str, topics: tuple[str, ...] = ()
) -> CopyPlan:
    """Read both stores and the group's members in both; see the module contract."""
    if source == target:
        raise ConfigError(f"--from and --to are both {source}: nothing to copy")
    with zookeeper.session(zookeeper_connect) as zk:
        zk_offsets = zookeeper.read_offsets(zk, group, topics)
        ids = zookeeper.member_ids(zk, group)
    with broker.admin(bootstrap) as b:
        kafka_offsets = b.committed(group, topics)
        state, members = b.group_state(group)
    stores = {"zookeeper": zk_offsets, "kafka": kafka_offsets}
    if not stores[source]:
        raise _no_offsets(group, STORE_NAMES[source], topics)
    activity = Activity(zookeeper_ids=ids, broker_state=state, broker_members=members)
    steps = copy_plan(stores[source], stores[target])
    return CopyPlan(group, source, target, steps, live_member_refusal(group, activity))


def execute_copy(zookeeper_connect: str, bootstrap: str, plan: CopyPlan) -> dict[TopicPartition, int]:
    """Write the plan's changed offsets to its target store; returns what was written."""
    writes = changed(plan.steps)
    if not writes:
        return writes
    if plan.target == "zookeeper":
        with zookeeper.session(zookeeper_connect) as zk:
            zookeeper.write_offsets(zk, plan.group, writes)
    else:
        with broker.admin(bootstrap) as b:
            b.commit(plan.group, writes)
    return writes
