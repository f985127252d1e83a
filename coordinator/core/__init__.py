# pyright: strict
"""The broker's pure core: rules without IO, threads, sockets or clocks (time comes in as arguments).

* :mod:`coordinator.core.group` -- the classic group coordinator as a state machine (requests in, effects out);
* :mod:`coordinator.core.consumer` -- the consumer groups of KIP-848's protocol as a state machine of the same kind;
* :mod:`coordinator.core.groups` -- both group machines behind one facade, with Kafka 4's online migration between
  the group types;
* :mod:`coordinator.core.replication` -- Kafka 0.9's replication rules (partition states, elections, the ISR and
  the high watermark, replica assignment).

Nothing here imports the shells around it (sockets, timers, logs, persistence, ZooKeeper): an import contract in
``pyproject.toml`` checks that.
"""
