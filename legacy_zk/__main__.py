"""``python -m legacy_zk ARGS`` = ``herdlab member legacy_zk ARGS``."""

from legacy_zk.cli import main

main()
