"""``herdlab bench history``: the cost of writing one history event on this machine."""

from __future__ import annotations

import statistics
import time

import click
from rich.console import Console
from rich.table import Table

from harness.history.writer import HistoryWriter


@click.command("history")
@click.option("--events", default=200_000, show_default=True, help="Events to write.")
@click.option(
    "--batch", default=1000, show_default=True, help="Events per timed batch (median over batches)."
)
def history(events: int, batch: int) -> None:
    """Cost of writing one history event (a `record` event as members write them): median, p99."""
    import tempfile
    from pathlib import Path

    per_event: list[float] = []
    with tempfile.TemporaryDirectory() as d:
        w = HistoryWriter(Path(d) / "events.jsonl", source="bench-member")
        for b in range(events // batch):
            t0 = time.perf_counter_ns()
            for i in range(batch):
                w.emit(
                    "record",
                    impl="coordinator",
                    group="g",
                    member="m-1",
                    generation=3,
                    topic="t",
                    partition=i % 10,
                    offset=b * batch + i,
                    seq=b * batch + i,
                )
            per_event.append((time.perf_counter_ns() - t0) / batch / 1000)
        w.close()
        size = (Path(d) / "events.jsonl").stat().st_size
    per_event.sort()
    t = Table(title=f"history writer: {events} events")
    t.add_column("figure")
    t.add_column("value", justify="right")
    t.add_row("per event, median of batches", f"{statistics.median(per_event):.2f} us")
    t.add_row("per event, p99 of batches", f"{per_event[int(len(per_event) * 0.99) - 1]:.2f} us")
    t.add_row("bytes per event", f"{size / events:.0f}")
    Console().print(t)
