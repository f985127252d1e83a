"""Pure helpers of the foundation: Java hash, mntr parsing, history lines, Java version parsing."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from harness.cluster.java import java_version
from harness.cluster.zookeeper import parse_mntr
from harness.history.writer import HistoryWriter, NullHistory, open_history, read_events
from harness.kernel.javacompat import java_abs, java_string_hashcode, partition_for


@pytest.mark.parametrize(
    ("text", "hashcode", "partition"),
    [
        ("Hello", 69609650, 0),
        ("Java Exercises.", -1762987343, 43),
        ("my-group", -1906497762, 12),
        ("test-group", 627841412, 12),
        ("", 0, 0),
    ],
)
def test_java_string_hashcode_and_partition_for_match_the_spec_vectors(
    text: str, hashcode: int, partition: int
) -> None:
    assert java_string_hashcode(text) == hashcode
    assert partition_for(text, 50) == partition


def test_java_hashcode_uses_utf16_code_units() -> None:
    # U+1F600 is a surrogate pair in UTF-16: two code units 0xD83D 0xDE00.
    assert java_string_hashcode("\U0001f600") == (0xD83D * 31 + 0xDE00)
    assert java_abs(-(2**31)) == 0 and java_abs(-5) == 5


def test_parse_mntr_parses_numbers_and_keeps_strings() -> None:
    m = parse_mntr("zk_version\t3.9.5-abc\nzk_avg_latency\t0.1234\nzk_packets_received\t42\nnoise line\n")
    assert m == {"zk_version": "3.9.5-abc", "zk_avg_latency": 0.1234, "zk_packets_received": 42}


def test_history_writer_appends_whole_json_lines_from_many_threads(tmp_path: Path) -> None:
    path = tmp_path / "h" / "events.jsonl"
    w = HistoryWriter(path, source="m1")

    def burst(t: int) -> None:
        for i in range(200):
            w.emit("record", partition=t, offset=i, payload="x" * 100)

    threads = [threading.Thread(target=burst, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    w.close()
    w.emit("dropped-after-close")
    lines = path.read_text().splitlines()
    assert len(lines) == 1600
    events = [json.loads(line) for line in lines]
    assert {e["source"] for e in events} == {"m1"}
    assert all(isinstance(e["ts_ns"], int) for e in events)
    for t in range(8):
        assert [e["offset"] for e in events if e["partition"] == t] == list(range(200))


def test_read_events_skips_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with open_history(path, "x") as w:  # type: ignore[attr-defined]
        w.emit("started")
    with open(path, "a") as f:
        f.write('{"ts_ns": 1, "kind": "trunc')
    assert [e["kind"] for e in read_events(path)] == ["started"]
    assert isinstance(open_history(None, "x"), NullHistory)


@pytest.mark.parametrize(
    ("banner", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('java version "1.8.0_292"', 8),
        ('openjdk version "21" 2023', 21),
    ],
)
def test_java_version_parses_banners(tmp_path: Path, banner: str, major: int) -> None:
    fake = tmp_path / f"java{major}"
    fake.write_text(f"#!/bin/sh\necho '{banner}' >&2\n")
    fake.chmod(0o755)
    assert java_version(str(fake)) == major
