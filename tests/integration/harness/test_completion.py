"""``herdlab completion bash`` as a shell loads it: the printed script, sourced by a real bash, completes
a scenario name by asking the real ``herdlab`` (one short process)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completes_a_scenario_name_with_the_printed_script(tmp_path: Path) -> None:
    herdlab = Path(sys.executable).parent / "herdlab"
    script = (
        f'source <("{herdlab}" completion bash)\n'
        f'COMP_WORDS=("{herdlab}" scenarios show herd-s); COMP_CWORD=3\n'
        f'_herdlab_completion "{herdlab}"\n'
        'echo "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.stdout == "herd-small\n", done.stderr
