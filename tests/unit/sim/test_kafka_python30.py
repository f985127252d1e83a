"""kafka-python 3.0.12's thread timing (:mod:`harness.sim.kafka_python30`): when the main thread acts on a
flag a heartbeat's answer set, worked out by hand in milliseconds."""

from __future__ import annotations

from harness.sim.kafka_python30 import flag_seen_ns

MS = 1_000_000


def test_a_check_at_the_deadline_after_the_answer_sees_the_flag_there() -> None:
    # answered at 503 ms, the main thread's check at the 500 ms deadline runs 5 ms late: it sees it at 505
    at = flag_seen_ns(check_ns=505 * MS, sent_ns=501 * MS, now_ns=503 * MS, poll_end_ns=600 * MS, fetch=None)
    assert at == 505 * MS


def test_a_member_with_a_partition_acts_when_its_window_ends_or_its_fetch_returns() -> None:
    # checked at 501 before the answer at 503: the Fetch sent at 100 with a 500 ms wait returns at 600,
    # the window ends at 550: the window's end comes first
    at = flag_seen_ns(
        check_ns=501 * MS, sent_ns=502 * MS, now_ns=503 * MS, poll_end_ns=550 * MS, fetch=(100 * MS, 500 * MS)
    )
    assert at == 550 * MS
    # a Fetch sent at 30 returns at 530, before the window's end at 550
    at = flag_seen_ns(
        check_ns=501 * MS, sent_ns=502 * MS, now_ns=503 * MS, poll_end_ns=550 * MS, fetch=(30 * MS, 500 * MS)
    )
    assert at == 530 * MS


def test_a_member_with_no_partition_sleeps_the_backoff_from_its_check_or_the_send() -> None:
    # checked at 501, before the send at 502: its 100 ms sleeps run from the send: 602 (window ends at 700)
    at = flag_seen_ns(check_ns=501 * MS, sent_ns=502 * MS, now_ns=503 * MS, poll_end_ns=700 * MS, fetch=None)
    assert at == 602 * MS
    # the window ends first
    at = flag_seen_ns(check_ns=501 * MS, sent_ns=502 * MS, now_ns=503 * MS, poll_end_ns=560 * MS, fetch=None)
    assert at == 560 * MS
