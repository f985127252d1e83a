"""``python -m harness`` is the ``herdlab`` command (used to start member and producer processes)."""

from harness.cli import main

main()
