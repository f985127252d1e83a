"""The coordinator members, one module per client library, on one template.

* :mod:`~harness.members.clients.base`: :class:`~harness.members.clients.base.ClientMemberBase`, the
  member template (:mod:`harness.members.template`) of the coordinator kind: recorder, commit policy,
  the poll step, the rebalance bookkeeping;
* :mod:`~harness.members.clients.kafka_python`, :mod:`~harness.members.clients.librdkafka`,
  :mod:`~harness.members.clients.aiokafka`: one client each (its construction, subscription, poll,
  commits, close and rebalance callbacks);
* :mod:`~harness.members.clients.python_config`: Kafka's properties as the keyword arguments of the two
  pure-Python clients;
* :mod:`~harness.members.clients.registry`: the table of clients by name (a Python member class, imported
  when asked for, or a member in another language run as a child process, :mod:`harness.members.child`)
  and :func:`~harness.members.clients.registry.make_member`, the member of a client by its name.

The import contracts (pyproject.toml) keep the order: the registry imports the clients, the clients the
base, the base none of them. This module imports nothing, so that importing one client imports no other.
"""
