"""The broker settings a scenario gives, by their Kafka property names.

:func:`kafka_broker_settings`: what herdlab's broker takes from ``group.coordinator`` as command-line
options (:meth:`harness.run.rig.UnitRig.start`) as the Kafka properties a third-party broker reads:
``group.initial.rebalance.delay.ms``, ``group.min.session.timeout.ms``, ``group.max.session.timeout.ms``
(Kafka's default, which herdlab's broker keeps too) and ``auto.create.topics.enable`` (off: the harness
creates each unit's topic). So a column difference between brokers is never a configuration difference.
"""

from __future__ import annotations

from harness.scenario.model import Scenario

#: Kafka's and herdlab's broker default of ``group.max.session.timeout.ms`` (30 minutes)
GROUP_MAX_SESSION_TIMEOUT_MS = 1_800_000


def kafka_broker_settings(scenario: Scenario) -> dict[str, str]:
    """The broker properties ``scenario`` sets (see the module contract)."""
    c = scenario.group.coordinator
    return {
        "group.initial.rebalance.delay.ms": str(c.initial_rebalance_delay_ms),
        "group.min.session.timeout.ms": str(c.min_session_timeout_ms),
        "group.max.session.timeout.ms": str(GROUP_MAX_SESSION_TIMEOUT_MS),
        "auto.create.topics.enable": "false",
    }
