"""What the two pure-Python client adapters (kafka-python, aiokafka) share: Kafka's dotted properties
turned into the consumer's keyword arguments.

Contract
--------
* :func:`consumer_kwargs`: ``props`` (checked dotted names, string values) as the consumer's keyword
  arguments: snake-case names with values of the type of the client's default
  (:func:`harness.scenario.properties.python_kwargs`), ``partition.assignment.strategy`` (comma-separated
  names) as the client's assignor classes from ``known`` (an unknown name is a ValueError naming the
  client), the member-policy properties left out, and the client's own auto-commit always off (the
  member commits: :class:`harness.members.recorder.CommitPolicy`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.scenario.properties import MEMBER_POLICY_PROPERTIES, python_kwargs, snake

ASSIGNOR = "partition.assignment.strategy"


def assignor_classes(client: str, names: str, known: Mapping[str, type]) -> list[type]:
    """The classes of the comma-separated assignor ``names``; ValueError naming ``client`` otherwise."""
    out: list[type] = []
    for name in (n.strip() for n in names.split(",") if n.strip()):
        if name not in known:
            raise ValueError(f"{client} has no assignor {name!r} (known: {', '.join(known)})")
        out.append(known[name])
    return out


def consumer_kwargs(
    client: str, props: Mapping[str, str], defaults: Mapping[str, Any], known: Mapping[str, type]
) -> dict[str, Any]:
    """The consumer keyword arguments of ``props`` (see the module contract)."""
    own = {k: v for k, v in props.items() if k not in MEMBER_POLICY_PROPERTIES and k != ASSIGNOR}
    kwargs = python_kwargs(own, defaults)
    if ASSIGNOR in props:
        kwargs[snake(ASSIGNOR)] = assignor_classes(client, props[ASSIGNOR], known)
    kwargs["enable_auto_commit"] = False
    return kwargs
