"""The replication shell: this broker's partitions as leader or follower.

* :mod:`~coordinator.replicas.manager` -- the replica manager over :mod:`coordinator.core.replication` (produce,
  fetch, ISR changes, the high watermark);
* :mod:`~coordinator.replicas.fetcher` -- the followers' fetchers;
* :mod:`~coordinator.replicas.checkpoint` -- the high-watermark checkpoint file.
"""
