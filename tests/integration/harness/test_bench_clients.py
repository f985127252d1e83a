"""``herdlab bench clients`` end to end for one Python and one built client: the java program built into
an empty herdlab cache, one member of each on herdlab's broker consuming a batch, java also hosted in one
JVM; the table has a row per client with its figures, and no process is left."""

from __future__ import annotations

import json
import re

import psutil
import pytest
from click.testing import CliRunner

from harness.bench.clients import clients

pytestmark = [pytest.mark.bench, pytest.mark.clients]

NUMBER = r"[\d,]+(?:\.\d+)?"


def _row(out: str, first: str) -> list[str]:
    m = re.search(rf"^│\s*{re.escape(first)}\s*│(.*)│\s*$", out, re.M)
    assert m, f"no row {first!r} in:\n{out}"
    return [c.strip() for c in m.group(1).split("│")]


def test_bench_clients_prints_set_up_and_memory_per_client_and_leaves_no_process() -> None:
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    r = CliRunner().invoke(
        clients, ["--client", "kafka-python", "--client", "java", "--hosted", "1,2", "--records", "500"]
    )
    assert r.exit_code == 0, r.output
    left = [p for p in psutil.Process().children(recursive=True) if p.is_running() and p.pid not in before]
    assert not left, left
    # kafka-python: nothing to build, no child program; its adapter is the member
    cold, built, adapter, program, total = _row(r.output, "kafka-python")
    assert (cold, built, program) == ("-", "-", "-")
    assert re.fullmatch(NUMBER, adapter) and total == adapter and float(adapter.replace(",", "")) > 0
    # java: built cold, then already built (the idempotent check is quicker); adapter + JVM = total
    cold, built, adapter, program, total = _row(r.output, "java")
    assert all(re.fullmatch(NUMBER, c) for c in (cold, built, adapter, program, total)), r.output
    assert float(built) < float(cold)
    assert abs(float(adapter) + float(program) - float(total)) <= 1  # each rounded to a MiB
    # the hosted rows: members, adapter, JVM, JVM per member
    for n in (1, 2):
        adapter, jvm, per = _row(r.output, str(n))
        assert all(re.fullmatch(NUMBER, c) for c in (adapter, jvm, per)), r.output


def test_bench_clients_json_has_a_figure_set_per_client() -> None:
    r = CliRunner().invoke(clients, ["--client", "kafka-python", "--no-setup", "--records", "200", "--json"])
    assert r.exit_code == 0, r.output
    (fig,) = json.loads(r.stdout)["clients"]
    assert fig["client"] == "kafka-python" and fig["records"] >= 200
    assert fig["adapter_rss"] > 0 and fig["program_rss"] is None and fig["total_rss"] == fig["adapter_rss"]
