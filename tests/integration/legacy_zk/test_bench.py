"""The herd benchmark end to end at a tiny size: it settles, and the herd figures match the model
where the model is exact (one notification per watching member, 2P owner writes)."""

from __future__ import annotations

import pytest

from legacy_zk.bench import BenchSettings, format_tables, run_bench


@pytest.mark.slow
def test_bench_measures_join_leave_and_crash(tmp_path) -> None:
    settings = BenchSettings(
        sizes=[4],
        changes=["join", "leave", "crash"],
        session_timeout_ms=1000,
        backoff_ms=200,
        retries=8,
        members_per_host=2,
        tick_time_ms=200,
        quiet_ms=300,
        settle_timeout_s=60,
        workdir=tmp_path,
    )
    results = run_bench(settings, echo=lambda _msg: None)
    assert [r["change"] for r in results] == ["join", "leave", "crash"]
    for r in results:
        assert r["settled"], r
        assert r["watch_notifications"] == r["model"]["watch_notifications"], r
        assert r["gave_up"] == 0 and r["zk_requests"] > 0 and r["packets_received"] > 0
    join, leave, crash = results
    if join["failed_attempts"] == 0 and join["rebalances"] == join["members_after"]:
        assert join["owner_creates"] == 4 and join["owner_deletes"] == 4  # 2P: all released, all re-claimed
    assert (
        crash["members_after"] == 3 and crash["settle_s"] >= 0.4
    )  # detection waits for the session to expire
    assert "| join | yes |" in format_tables(results)
