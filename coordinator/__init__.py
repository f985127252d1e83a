"""coordinator: an asyncio Kafka broker with the classic group coordinator, for herdlab.

One process per broker (``herdlab broker`` / ``python -m coordinator``), speaking the Kafka wire
protocol to unmodified clients, with ``kio`` as the codec.

The pure core, which imports none of the rest (an import contract checks it):

* :mod:`coordinator.core.group` -- the classic group coordinator as a state machine (requests in, effects out);
* :mod:`coordinator.core.replication` -- the replication rules (partition states, elections, ISR, high watermark).

The shells around it:

* :mod:`coordinator.server` -- the process: TCP server, framing, per-connection ordering, dispatch,
  request counters, lifecycle (:class:`~coordinator.server.Broker`).
* :mod:`coordinator.wire` / :mod:`coordinator.guard` -- request decoding and response encoding over
  kio; the bounds check that keeps a hostile array count from aborting the process.
* :mod:`coordinator.dataplane` -- Metadata, CreateTopics, CreatePartitions, Produce, Fetch
  (long-poll), ListOffsets, InitProducerId, DescribeCluster: one module per API over one partition backend
  (local, or replicated).
* :mod:`coordinator.groups` -- the group APIs dispatched by group type (the classic type in
  :mod:`coordinator.groups.classic`) over the machine; :mod:`coordinator.groups.runner` runs the machine's effects
  (timers, durable log, responses, history events, loud failures); :mod:`coordinator.groups.log` is the durable
  group log (this broker's ``__consumer_offsets``), :mod:`coordinator.groups.store` its replicated form.
* :mod:`coordinator.replicas` -- the replica manager, the followers' fetchers, the high-watermark checkpoint.
* :mod:`coordinator.zookeeper` -- the ZooKeeper-era registration (``/brokers/ids``, ``/brokers/topics`` in the 0.8
  layout), the partition-state follower, the controller.
* :mod:`coordinator.api_keys` -- the :class:`~coordinator.api_keys.ApiKey` enum (Kafka's ``ApiKeys``).
* :mod:`coordinator.records`, :mod:`coordinator.partition_log`, :mod:`coordinator.topics` --
  record batches as bytes, partition logs (Kafka segment format on disk), the topic store.
* :mod:`coordinator.cluster`, :mod:`coordinator.ports` -- the cluster view; the interfaces between the shells.
* :mod:`coordinator.cli` -- ``herdlab broker`` (its bench lives in the harness:
  :mod:`harness.bench.coordinator`); :mod:`coordinator.inprocess` / :mod:`coordinator.rawclient` drive a broker from
  tests and benchmarks.

The launcher for harness and tests is :class:`harness.cluster.broker.BrokerProcess`.
"""
