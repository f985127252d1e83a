"""Which ``ConsumerGroupHeartbeat`` exchanges carry a membership change (KIP-848's consumer protocol).

In the consumer protocol one request does the work of JoinGroup, SyncGroup and Heartbeat, so a change's own
coordination cost (the herd) is the heartbeats that carry the change, and the rest are steady traffic, counted
apart as a rate. This is the one definition; herdlab's broker and the Kafka tap both classify each exchange with
:func:`carries_change` and record the answer in the ``group_request`` event's ``change`` field, and the checker
only reads that field.

An exchange carries a change when any of these holds:

* the request joins or leaves: ``member_epoch`` is 0 (join), -1 (leave) or -2 (a static member's temporary leave);
* the request reports the member's owned partitions (``TopicPartitions`` not null: clients send them when they
  changed, i.e. to acknowledge a revocation or an assignment);
* the response gives an assignment (``Assignment`` not null: the member's assignment changed);
* the response's member epoch differs from the request's (the member moved to a new epoch);
* the response is an error (the member is fenced, unknown or refused and must act on it).
"""

from __future__ import annotations

__all__ = ["carries_change"]


def carries_change(
    *,
    request_epoch: int,
    request_owned: bool,
    response_error: int,
    response_epoch: int,
    response_assignment: bool,
) -> bool:
    """True if one heartbeat exchange carries a change (see the module docstring). ``request_owned``: the request's
    owned ``TopicPartitions`` were not null; ``response_assignment``: the response's ``Assignment`` was not null;
    ``response_error``: Kafka's error code (0 = none)."""
    return (
        request_epoch <= 0
        or request_owned
        or response_assignment
        or response_error != 0
        or response_epoch != request_epoch
    )
