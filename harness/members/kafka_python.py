"""The kafka-python member (interim: wraps :mod:`harness.members.coordinator` until it is rebuilt on
:mod:`harness.members.recorder`)."""

from __future__ import annotations

from typing import Literal, cast

from harness.history.writer import History
from harness.members.clients import OnChange
from harness.members.coordinator import CoordinatorMember, CoordinatorMemberConfig
from harness.members.recorder import MemberConfig


class KafkaPythonMember(CoordinatorMember):
    def __init__(self, config: MemberConfig, history: History, on_change: OnChange | None = None) -> None:
        p = config.prop
        super().__init__(
            CoordinatorMemberConfig(
                bootstrap=config.bootstrap,
                group=config.group,
                topic=config.topic,
                name=config.name,
                session_timeout_ms=int(p("session.timeout.ms", "6000")),
                heartbeat_interval_ms=int(p("heartbeat.interval.ms", "500")),
                max_poll_interval_ms=int(p("max.poll.interval.ms", "30000")),
                auto_commit_interval_ms=int(p("auto.commit.interval.ms", "5000")),
                enable_auto_commit=config.auto_commit,
                auto_offset_reset=cast(Literal["earliest", "latest"], p("auto.offset.reset", "earliest")),
                assignor=config.assignor,
                group_instance_id=config.group_instance_id,
                metadata_max_age_ms=int(p("metadata.max.age.ms", "5000")),
            ),
            history,
            on_change,
        )
