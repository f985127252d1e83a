"""The coordinator member of each client library, behind one interface.

Contract
--------
* :class:`~harness.members.interface.ClientMember` (in :mod:`harness.members.interface`) is what
  ``herdlab member coordinator`` runs: :meth:`run` joins and consumes until :meth:`stop` (``clean``:
  commit what the policy says, leave the group as the client does on close; otherwise just return),
  ``stopping`` says whether stop was called. Every member runs the life cycle of
  :class:`~harness.members.clients.base.ClientMemberBase`, records through
  :class:`harness.members.recorder.MemberRecorder` and commits by
  :class:`~harness.members.recorder.CommitPolicy` (one vocabulary, one policy).
* :func:`make_member` builds the member of ``config.client``: ``kafka-python``
  (:mod:`harness.members.clients.kafka_python`), ``librdkafka`` (:mod:`harness.members.clients.librdkafka`,
  confluent-kafka) or ``aiokafka`` (:mod:`harness.members.clients.aiokafka`): the
  :data:`harness.kernel.events.CLIENTS`.
  ``on_change(what, partitions, generation)`` is called after each assignment change (the CLI prints
  it). An unknown client is a ValueError naming it. Only the chosen client's module is imported (a member
  process of one client does not load another's modules, e.g. asyncio for aiokafka).
"""

from __future__ import annotations

from harness.history.writer import History
from harness.kernel.events import CLIENTS
from harness.members.clients.base import ClientMemberBase
from harness.members.interface import ClientMember, OnChange
from harness.members.recorder import MemberConfig

__all__ = ["CLIENTS", "ClientMember", "OnChange", "make_member"]


def member_class(client: str) -> type[ClientMemberBase]:
    """The member class of ``client`` (ValueError naming it when there is none). The imports are here, not
    at the top, for a member process's start-up cost (see the module contract)."""
    if client == "kafka-python":
        # deferred: start-up: a member process loads only the client library it runs
        from harness.members.clients.kafka_python import KafkaPythonMember

        return KafkaPythonMember
    if client == "librdkafka":
        # deferred: start-up: a member process loads only the client library it runs
        from harness.members.clients.librdkafka import LibrdkafkaMember

        return LibrdkafkaMember
    if client == "aiokafka":
        # deferred: start-up: a member process loads only the client library it runs
        from harness.members.clients.aiokafka import AiokafkaMember

        return AiokafkaMember
    raise ValueError(f"unknown client {client!r} (known: {', '.join(CLIENTS)})")


def make_member(config: MemberConfig, history: History, on_change: OnChange | None = None) -> ClientMember:
    """The member of ``config.client`` (see the module contract)."""
    return member_class(config.client)(config, history, on_change)
