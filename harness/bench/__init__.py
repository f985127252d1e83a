"""``herdlab bench ...``: measurements that print figures, one module per bench.

* :mod:`harness.bench.zookeeper` (``herdlab bench zookeeper``): ZooKeeper start-to-ready and memory;
* :mod:`harness.bench.history` (``herdlab bench history``): the cost of one history event;
* :mod:`harness.bench.analysis` (``herdlab bench analysis``): the PySpark analysis at 10^4, 10^6, 10^7 events and of
  real runs, against a bare Spark session;
* :mod:`harness.bench.coordinator` (``herdlab bench coordinator ...``): the broker and its group
  coordinator; its ``rebalance`` runs :mod:`harness.bench.rebalance`;
* :mod:`harness.bench.legacy_zk` (``herdlab bench legacy_zk``): the 0.8 consumer's herd effect;
* :mod:`harness.bench.size` (``herdlab bench size``): one real run at size (500 legacy, 200
  coordinator members): start-up, health, wall time, peak memory and CPU of the rig;
* :mod:`harness.bench.clients` (``herdlab bench clients``): set-up time and memory of one member of each
  client (and of java members hosted in one JVM);
* :mod:`harness.bench.common`: the options and history markers the benches share.

A bench only orchestrates: it sets up, writes a history and takes its figures from the analysis.
Figures are measured on the machine at hand; nothing is asserted.
"""
