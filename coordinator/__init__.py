"""coordinator: an asyncio Kafka broker with the classic group coordinator, for herdlab.

One process per broker (``herdlab broker`` / ``python -m coordinator``), speaking the Kafka wire
protocol to unmodified clients, with ``kio`` as the codec. Modules:

* :mod:`coordinator.server` -- the process: TCP server, framing, per-connection ordering, dispatch,
  request counters, lifecycle (:class:`~coordinator.server.Broker`).
* :mod:`coordinator.wire` / :mod:`coordinator.guard` -- request decoding and response encoding over
  kio; the bounds check that keeps a hostile array count from aborting the process.
* :mod:`coordinator.dataplane` -- Metadata, CreateTopics, CreatePartitions, Produce, Fetch
  (long-poll), ListOffsets, InitProducerId, DescribeCluster.
* :mod:`coordinator.groups` -- the kio adapters of the group APIs (FindCoordinator, JoinGroup,
  SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups,
  DeleteGroups) over the pure state machine in :mod:`coordinator.group`;
  :mod:`coordinator.group_runner` -- the shell that runs the machine's effects: timers, durable log,
  responses, history events, loud failures.
* :mod:`coordinator.api_keys` -- the :class:`~coordinator.api_keys.ApiKey` enum (Kafka's ``ApiKeys``).
* :mod:`coordinator.records`, :mod:`coordinator.partition_log`, :mod:`coordinator.topics` --
  record batches as bytes, partition logs (Kafka segment format on disk), the topic store.
* :mod:`coordinator.group_log` -- the durable group log (this broker's ``__consumer_offsets``).
* :mod:`coordinator.cluster`, :mod:`coordinator.zk` -- the cluster view and the ZooKeeper-era
  registration (``/brokers/ids``, ``/brokers/topics`` in the 0.8 layout).
* :mod:`coordinator.cli` -- ``herdlab broker`` (its bench lives in the harness:
  :mod:`harness.bench.coordinator`); :mod:`coordinator.inprocess` / :mod:`coordinator.rawclient` drive a broker from
  tests and benchmarks.

The launcher for harness and tests is :class:`harness.cluster.broker.BrokerProcess`.
"""
