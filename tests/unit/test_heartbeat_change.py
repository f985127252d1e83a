"""The one classification of ConsumerGroupHeartbeat exchanges into change and steady traffic."""

from harness.kernel.heartbeats import carries_change


def steady(**overrides: object) -> bool:
    """A steady heartbeat at epoch 5 answered at epoch 5 with no error and no assignment, with ``overrides``."""
    args: dict[str, object] = {
        "request_epoch": 5,
        "request_owned": False,
        "response_error": 0,
        "response_epoch": 5,
        "response_assignment": False,
    }
    args.update(overrides)
    return carries_change(**args)  # type: ignore[arg-type]


def test_steady_heartbeat_is_not_a_change() -> None:
    assert steady() is False


def test_join_leave_and_static_leave_are_changes() -> None:
    assert steady(request_epoch=0, response_epoch=1) is True
    assert steady(request_epoch=-1, response_epoch=-1) is True
    assert steady(request_epoch=-2, response_epoch=-2) is True


def test_owned_partitions_reported_is_a_change() -> None:
    assert steady(request_owned=True) is True


def test_new_assignment_is_a_change() -> None:
    assert steady(response_assignment=True) is True


def test_new_epoch_is_a_change() -> None:
    assert steady(response_epoch=6) is True


def test_error_is_a_change() -> None:
    # 110 = FENCED_MEMBER_EPOCH
    assert steady(response_error=110) is True
