"""The nemesis: faults and membership changes a run inflicts (docs/concepts.md "Layers").

:mod:`.nemesis` holds the :class:`~harness.faults.nemesis.Nemesis` protocol, the context a nemesis
acts through and the ``invoke`` / ``complete`` | ``skipped`` pair; :mod:`.actions` one class per
action and the registry; :mod:`.proxy` the loopback TCP proxies that cuts use.
"""
