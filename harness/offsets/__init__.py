"""``herdlab offsets``: a consumer group's offsets in ZooKeeper (0.8 layout) and in the broker.

* :mod:`harness.offsets.core`: pure: the diff rows, the CSV export, the copy plan, the live-member rule;
* :mod:`harness.offsets.zookeeper` / :mod:`harness.offsets.broker`: the two stores (kazoo, kafka-python);
* :mod:`harness.offsets.ops`: the operations the CLI (:mod:`harness.cli.offsets`) runs.
"""
