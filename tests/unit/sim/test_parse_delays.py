"""``--delay NAME=VALUE``: the delay model's overrides, with one-line errors."""

from __future__ import annotations

import pytest

from harness.kernel.errors import ConfigError
from harness.sim.session import parse_delays


def test_overrides_take_their_field_s_type() -> None:
    m = parse_delays(["zk_client_s=0.002", "client_cores=3", "zk_client_random_order=0"], seed=7)
    assert (m.zk_client_s, m.client_cores, m.zk_client_random_order, m.seed) == (0.002, 3, 0, 7)
    assert isinstance(m.zk_client_random_order, int)


def test_the_default_serves_the_legacy_members_in_random_order() -> None:
    assert parse_delays([]).zk_client_random_order == 1


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("nope=1", "NAME one of"),
        ("zk_client_s", "NAME one of"),
        ("zk_client_s=fast", "not a number"),
        ("zk_client_s=-1", "must be >= 0"),
        ("zk_client_random_order=2", "must be 0 (first come first served) or 1 (random)"),
        ("kafka_sync_answer_priority=3", "must be 0 (first come first served) or 1 (served first)"),
    ],
)
def test_a_bad_override_is_a_one_line_error(item: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        parse_delays([item])
    assert "\n" not in str(e.value)
