"""legacy_zk: the ZooKeeper-era self-rebalancing consumer of Kafka 0.8.2, on kazoo.

Pure core (no sockets, no threads, no clock of its own; ``pyright --strict``): :mod:`legacy_zk.ids`
(consumer and thread ids, Java string order), :mod:`legacy_zk.paths` (the 0.8 ZooKeeper layout and
payload codecs), :mod:`legacy_zk.assignors` (range and roundrobin as in 0.8.2), :mod:`legacy_zk.plan`
(one rebalance attempt's release / claim plan), :mod:`legacy_zk.config` (0.8 property names and
defaults), :mod:`legacy_zk.states` (the member's states, their checked transitions, attempt
outcomes), :mod:`legacy_zk.attempt` (the synced rebalance and its attempts against a ``ZkPort``),
:mod:`legacy_zk.reads` (what an attempt reads), :mod:`legacy_zk.offsets` (offset storage),
:mod:`legacy_zk.registry` (owned partitions), :mod:`legacy_zk.zkport` (the ``ZkPort`` Protocol),
:mod:`legacy_zk.model` (the analytic herd model; ``herdlab bench legacy_zk`` lives in the harness).

ZooKeeper behind the port: :mod:`legacy_zk.zkclient` (counting kazoo wrapper with ZkClient 0.3's
retryUntilConnected) or :mod:`legacy_zk.memzk` (an in-memory ZooKeeper for tests and simulation).

IO shell: :mod:`legacy_zk.listeners` (ZkClient's event thread, subscriptions and watch re-arming),
:mod:`legacy_zk.watches` (the member's subscriptions and rebalance signal),
:mod:`legacy_zk.reconnect` (the ZooKeeper 3.4.6 Java client's reconnect timing),
:mod:`legacy_zk.member` (one member: session, registration, the rebalance thread, session expiry,
shutdown), :mod:`legacy_zk.fetcher` (kafka-python record fetcher), :mod:`harness.members.legacy_host` (one member
on threads, many on gevent).
"""
