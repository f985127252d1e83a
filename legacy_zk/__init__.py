"""legacy_zk: the ZooKeeper-era self-rebalancing consumer of Kafka 0.8.2, on kazoo.

Pure core (no ZooKeeper, no sockets): :mod:`legacy_zk.ids` (consumer and thread ids, Java string
order), :mod:`legacy_zk.paths` (the 0.8 ZooKeeper layout and payload codecs),
:mod:`legacy_zk.assignors` (range and roundrobin as in 0.8.2), :mod:`legacy_zk.plan` (one rebalance
attempt's release / claim plan), :mod:`legacy_zk.config` (0.8 property names and defaults).

IO shell: :mod:`legacy_zk.zkclient` (counting kazoo wrapper with ZkClient 0.3's retryUntilConnected),
:mod:`legacy_zk.listeners` (ZkClient's event thread, subscriptions and watch re-arming),
:mod:`legacy_zk.reconnect` (the ZooKeeper 3.4.6 Java client's reconnect timing),
:mod:`legacy_zk.member` (one member: registration, the rebalance thread, session expiry, offsets),
:mod:`legacy_zk.fetcher`
(kafka-python record fetcher), :mod:`legacy_zk.host` (one member on threads, many on gevent),
:mod:`legacy_zk.model` (the analytic herd model; ``herdlab bench legacy_zk`` lives in the harness).
"""
