# pyright: strict
"""Kafka API keys of the requests this broker serves (``org.apache.kafka.common.protocol.ApiKeys``).

The one place API keys are named: handler tables, served-version tables and response lookups use
these members, never bare integers. :attr:`ApiKey.title` is Kafka's display name (``"JoinGroup"``),
the name the broker writes to its history and logs.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ApiKey"]


class ApiKey(IntEnum):
    """The wire id of a Kafka API (names as Kafka's ``ApiKeys`` enum)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    INIT_PRODUCER_ID = 22
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    DESCRIBE_CLUSTER = 60
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69

    @property
    def title(self) -> str:
        """Kafka's name of the API (``ApiKeys.name``): ``JOIN_GROUP`` -> ``"JoinGroup"``."""
        return "".join(word.capitalize() for word in self.name.split("_"))
