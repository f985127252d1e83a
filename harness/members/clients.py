"""The coordinator member of each client library, behind one interface.

Contract
--------
* :class:`~harness.members.interface.ClientMember` (in :mod:`harness.members.interface`, which the
  adapters import, so that this registry may import them) is what ``herdlab member coordinator`` runs: :meth:`run` joins and consumes until
  :meth:`stop` (``clean``: commit what the policy says, leave the group as the client does on close;
  otherwise just return), ``stopping`` says whether stop was called. Every adapter records through
  :class:`harness.members.recorder.MemberRecorder` and commits by
  :class:`~harness.members.recorder.CommitPolicy` (one vocabulary, one policy).
* :func:`make_member` builds the adapter of ``config.client``: ``kafka-python``
  (:mod:`harness.members.kafka_python`), ``librdkafka`` (:mod:`harness.members.librdkafka`, confluent-kafka)
  or ``aiokafka`` (:mod:`harness.members.aiokafka_member`). ``on_change(what, partitions, generation)`` is
  called after each assignment change (the CLI prints it). An unknown client is a ValueError naming it.
"""

from __future__ import annotations

from harness.history.writer import History
from harness.members.interface import ClientMember, OnChange
from harness.members.recorder import MemberConfig

__all__ = ["ClientMember", "OnChange", "make_member"]


def make_member(config: MemberConfig, history: History, on_change: OnChange | None = None) -> ClientMember:
    """The adapter of ``config.client`` (see the module contract)."""
    if config.client == "kafka-python":
        from harness.members.kafka_python import KafkaPythonMember

        return KafkaPythonMember(config, history, on_change)
    if config.client == "librdkafka":
        from harness.members.librdkafka import LibrdkafkaMember

        return LibrdkafkaMember(config, history, on_change)
    if config.client == "aiokafka":
        from harness.members.aiokafka_member import AiokafkaMember

        return AiokafkaMember(config, history, on_change)
    raise ValueError(f"unknown client {config.client!r} (known: kafka-python, librdkafka, aiokafka)")
