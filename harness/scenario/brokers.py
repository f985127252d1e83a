"""The broker settings a scenario gives, by their Kafka property names.

:func:`kafka_broker_settings`: what herdlab's broker takes from ``group.coordinator`` as command-line
options (:meth:`harness.run.rig.UnitRig.start`) as the Kafka properties a third-party broker reads:
``group.initial.rebalance.delay.ms``, ``group.min.session.timeout.ms``, ``group.max.session.timeout.ms``
(Kafka's default, which herdlab's broker keeps too) and ``auto.create.topics.enable`` (off: the harness
creates each unit's topic). So a column difference between brokers is never a configuration difference.
A ``consumer`` unit's broker (and a coordinator unit's that migrates to the consumer protocol,
:attr:`~harness.scenario.model.Scenario.has_protocol_migration`) also gets ``[group.consumer]``'s
``group.consumer.*`` settings
(:meth:`~harness.scenario.model.ConsumerSettings.broker_settings`); :func:`herdlab_consumer_args` are
the same settings as herdlab's broker options (``--consumer-heartbeat-interval-ms``,
``--consumer-session-timeout-ms`` and their minimums).
"""

from __future__ import annotations

from harness.scenario.model import Scenario

#: Kafka's and herdlab's broker default of ``group.max.session.timeout.ms`` (30 minutes)
GROUP_MAX_SESSION_TIMEOUT_MS = 1_800_000


#: herdlab's broker option of each ``group.consumer.*`` setting.
CONSUMER_BROKER_OPTIONS = {
    "group.consumer.heartbeat.interval.ms": "--consumer-heartbeat-interval-ms",
    "group.consumer.min.heartbeat.interval.ms": "--consumer-min-heartbeat-interval-ms",
    "group.consumer.session.timeout.ms": "--consumer-session-timeout-ms",
    "group.consumer.min.session.timeout.ms": "--consumer-min-session-timeout-ms",
}


def kafka_broker_settings(scenario: Scenario, impl: str | None = None) -> dict[str, str]:
    """The broker properties ``scenario`` sets for a unit of ``impl`` (see the module contract)."""
    c = scenario.group.coordinator
    out = {
        "group.initial.rebalance.delay.ms": str(c.initial_rebalance_delay_ms),
        "group.min.session.timeout.ms": str(c.min_session_timeout_ms),
        "group.max.session.timeout.ms": str(GROUP_MAX_SESSION_TIMEOUT_MS),
        "auto.create.topics.enable": "false",
    }
    if impl == "consumer" or scenario.has_protocol_migration:
        out.update(scenario.group.consumer.broker_settings())
    return out


def herdlab_consumer_args(scenario: Scenario) -> tuple[str, ...]:
    """herdlab's broker options of ``[group.consumer]``'s broker settings (a consumer unit's broker, or one that
    migrates to the consumer protocol)."""
    settings = scenario.group.consumer.broker_settings()
    return tuple(x for name, value in settings.items() for x in (CONSUMER_BROKER_OPTIONS[name], value))
