# pyright: strict
"""Consumer groups of KIP-848's consumer protocol (Kafka 4's group coordinator for groups of type ``consumer``) as
a pure state machine: no sockets, threads or clocks; time is passed in and effects are returned, those of the
classic machine (:mod:`coordinator.core.group.api`), so the same runner applies them.

Modules: :mod:`~coordinator.core.consumer.api` (version-neutral requests and responses),
:mod:`~coordinator.core.consumer.config` (``group.consumer.*``), :mod:`~coordinator.core.consumer.machine` (the
coordinator, :class:`~coordinator.core.consumer.machine.ConsumerGroupCoordinator`, with how a shell drives it and
every deviation from Kafka), which delegates to :mod:`~coordinator.core.consumer.group` and
:mod:`~coordinator.core.consumer.member` (state), :mod:`~coordinator.core.consumer.target` (the target assignment of
a group epoch), :mod:`~coordinator.core.consumer.assignors` (uniform and range),
:mod:`~coordinator.core.consumer.reconcile` (a member's reconciliation),
:mod:`~coordinator.core.consumer.records` (durable records, defined beside the group log's codec in
:mod:`coordinator.core.group.consumer_records`), :mod:`~coordinator.core.consumer.protocol` (the classic protocol's
embedded consumer protocol: subscription and assignment bytes) and
:mod:`~coordinator.core.consumer.classic_members` (classic members in consumer groups, the conversions between the
group types). The facade holding both group machines, with the online migration, is :mod:`coordinator.core.groups`.

This package's ``__init__`` imports nothing: the group log's codec imports the records' module, and the classic
package must not depend on this one.
"""
