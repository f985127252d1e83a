"""The member's state machines: checked transitions, compare-and-set, outcome strings (pure)."""

from __future__ import annotations

import pytest

from legacy_zk.states import (
    LIFECYCLE_TRANSITIONS,
    REBALANCE_TRANSITIONS,
    AttemptOutcome,
    IllegalTransition,
    Lifecycle,
    RebalanceState,
    StateMachine,
)


def lifecycle() -> StateMachine[Lifecycle]:
    return StateMachine("member m", Lifecycle.NEW, LIFECYCLE_TRANSITIONS)


def test_every_state_has_a_row_in_its_table() -> None:
    assert set(LIFECYCLE_TRANSITIONS) == set(Lifecycle)
    assert set(REBALANCE_TRANSITIONS) == set(RebalanceState)


def test_a_table_without_a_row_is_refused() -> None:
    partial = {s: t for s, t in LIFECYCLE_TRANSITIONS.items() if s is not Lifecycle.CLOSED}
    with pytest.raises(ValueError, match="CLOSED"):
        StateMachine("m", Lifecycle.NEW, partial)


def test_the_normal_life_of_a_member() -> None:
    m = lifecycle()
    for to in (Lifecycle.STARTING, Lifecycle.RUNNING, Lifecycle.QUIESCED, Lifecycle.CLOSING):
        m.transition(to)
    assert m.transition(Lifecycle.STOPPING) is Lifecycle.CLOSING  # returns the state left
    m.transition(Lifecycle.CLOSED)
    assert m.state is Lifecycle.CLOSED


def test_an_illegal_transition_raises_and_leaves_the_state() -> None:
    m = lifecycle()
    with pytest.raises(IllegalTransition, match="NEW -> RUNNING"):
        m.transition(Lifecycle.RUNNING)
    assert m.state is Lifecycle.NEW
    m.transition(Lifecycle.CLOSED)
    with pytest.raises(IllegalTransition, match="CLOSED -> STARTING"):
        m.transition(Lifecycle.STARTING)  # a closed member never starts


def test_advance_moves_only_from_the_expected_state() -> None:
    m = lifecycle()
    assert not m.advance(Lifecycle.STARTING, Lifecycle.RUNNING)  # not STARTING: nothing happens
    assert m.state is Lifecycle.NEW
    assert m.advance(Lifecycle.NEW, Lifecycle.STARTING)
    assert m.advance(frozenset({Lifecycle.STARTING, Lifecycle.RUNNING}), Lifecycle.QUIESCED)
    assert not m.advance(frozenset({Lifecycle.STARTING, Lifecycle.RUNNING}), Lifecycle.QUIESCED)
    assert m.state is Lifecycle.QUIESCED


def test_advance_still_checks_the_table() -> None:
    m = lifecycle()
    with pytest.raises(IllegalTransition):
        m.advance(Lifecycle.NEW, Lifecycle.STOPPING)


def test_a_failed_attempt_always_backs_off_before_giving_up() -> None:
    r = StateMachine("rebalance", RebalanceState.IDLE, REBALANCE_TRANSITIONS)
    r.transition(RebalanceState.REBALANCING)
    with pytest.raises(IllegalTransition):
        r.transition(RebalanceState.GAVE_UP)
    r.transition(RebalanceState.BACKING_OFF)
    r.transition(RebalanceState.GAVE_UP)
    r.transition(RebalanceState.REBALANCING)  # the next watch event tries again
    r.transition(RebalanceState.SETTLED)
    assert r.state is RebalanceState.SETTLED


def test_stopped_is_final() -> None:
    assert REBALANCE_TRANSITIONS[RebalanceState.STOPPED] == frozenset()
    assert LIFECYCLE_TRANSITIONS[Lifecycle.CLOSED] == frozenset()


def test_outcomes_are_the_history_strings() -> None:
    assert [o.value for o in AttemptOutcome] == ["ok", "no_brokers", "conflict", "error", "shutdown"]
    assert {o for o in AttemptOutcome if o.succeeded} == {AttemptOutcome.OK, AttemptOutcome.NO_BROKERS}
    assert {o for o in AttemptOutcome if o.failed} == {AttemptOutcome.CONFLICT, AttemptOutcome.ERROR}
    assert not AttemptOutcome.SHUTDOWN.succeeded and not AttemptOutcome.SHUTDOWN.failed
