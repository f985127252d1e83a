"""Process hygiene: own process groups, TERM then KILL, registry, parent-death signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import psutil

from harness.procs import registry, spawn
from tests.support.waiting import wait_until


def _gone(pid: int) -> bool:
    if not psutil.pid_exists(pid):
        return True
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_child_runs_in_its_own_process_group_and_stop_kills_the_group() -> None:
    child = spawn(["sh", "-c", "sleep 60 & sleep 60"], name="sleeper")
    try:
        assert os.getpgid(child.pid) == child.pid != os.getpgid(0)
        grandchildren = wait_until(lambda: psutil.Process(child.pid).children(), timeout=5, what="grandchild")
        child.stop(grace=2)
        assert not child.alive()
        for g in grandchildren:
            wait_until(lambda g=g: _gone(g.pid), timeout=5, what="grandchild to die")
    finally:
        child.stop()


def test_stop_escalates_to_sigkill_when_sigterm_is_ignored(tmp_path) -> None:
    script = "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
    log = tmp_path / "stubborn.log"
    child = spawn([sys.executable, "-c", script], name="stubborn", log_path=log)
    wait_until(lambda: log.exists() and "ready" in log.read_text(), timeout=10, what="child ready")
    child.stop(grace=0.3)
    assert child.returncode == -signal.SIGKILL
    assert child.log_tail() == "ready"


def test_stop_resumes_a_paused_child_so_it_can_exit_on_sigterm() -> None:
    child = spawn(["sleep", "60"], name="paused")
    child.signal(signal.SIGSTOP)
    child.stop(grace=5)
    assert child.returncode == -signal.SIGTERM


def test_registry_stop_all_stops_every_child_and_forgets_them() -> None:
    children = [spawn(["sleep", "60"], name=f"s{i}") for i in range(3)]
    assert all(c in registry.children() for c in children)
    registry.stop_all(grace=2)
    assert not any(c.alive() for c in children)
    assert not any(c in registry.children() for c in children)


def test_children_die_with_a_sigkilled_parent() -> None:
    """PR_SET_PDEATHSIG: even a SIGKILL of the spawning process takes its children down."""
    parent_script = textwrap.dedent(
        """
        import time
        from harness.procs import spawn
        c = spawn(["sleep", "600"], name="orphan-candidate")
        print(c.pid, flush=True)
        time.sleep(600)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_script], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child_pid = int(parent.stdout.readline())
    assert psutil.pid_exists(child_pid)
    parent.kill()
    parent.wait(10)
    wait_until(lambda: _gone(child_pid), timeout=10, what="child of a killed parent to die")
