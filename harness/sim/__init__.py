"""The simulator: the same pure cores as a real run (legacy_zk's rebalance attempt against an
in-memory ZooKeeper, the GroupCoordinator state machine, the consumer protocol's ConsumerGroupCoordinator, the
assignors) driven in virtual time.

:mod:`harness.sim.clock` is the discrete-event loop (greenlets as tasks, virtual nanoseconds);
:mod:`harness.sim.model` the stated delay model. A simulated run writes the same history as a real
one, so the same checker and report follow; the report says it is a simulation and what its model is.
"""
