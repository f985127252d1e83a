"""The ZooKeeper shell of the broker (the 0.8/0.9 ``/brokers`` layout, one codec with legacy_zk's).

* :mod:`~coordinator.zookeeper.registration` -- the broker's registration, the topics it creates or claims;
* :mod:`~coordinator.zookeeper.states` -- the follower of the partition-state znodes;
* :mod:`~coordinator.zookeeper.controller` -- the controller (elections on broker changes).
"""
