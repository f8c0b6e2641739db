"""docs/your-cluster.md's checked command blocks, run as written against the local cluster (its kubeconfig as
$KUBECONFIG in place of the user's), so the walkthrough cannot drift from what wincon and its RBAC take.

A block is checked when the line before its fence is ``<!-- walkthrough: checked [exit N M ...] -->``: it runs with
``bash -euo pipefail`` in a directory of the test's own (``manifests`` there is the checkout's), and must end with
exit 0, or one of the codes named after ``exit``. The blocks run in the page's order, each seeing what the previous
ones left (the runner's kubeconfig, the results directory)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "your-cluster.md"
CHECKED = re.compile(r"<!-- walkthrough: checked(?: exit ([0-9 ]+))? -->\n```bash\n(.*?)\n```", re.S)


def checked_blocks() -> list[tuple[str, set[int]]]:
    blocks = []
    for match in CHECKED.finditer(PAGE.read_text()):
        codes = {int(c) for c in match.group(1).split()} if match.group(1) else {0}
        blocks.append((match.group(2), codes))
    return blocks


def test_the_page_has_checked_blocks_for_every_step():
    text = "\n".join(block for block, _ in checked_blocks())
    for command in ("kubectl apply -f manifests/rbac/runner.yaml", "wincon profile", "wincon plan", "wincon prepull"):
        assert command in text
    assert "wincon run" in text and "wincon gate" in text


@pytest.mark.weight(88)  # seconds in a make test at d83e1a7: among the first to start (tests/support/ordering.py)
def test_the_walkthrough_runs_as_written(kubeconfig, tmp_path):
    (tmp_path / "manifests").symlink_to(REPO / "manifests")
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PATH": f"{REPO / '.venv' / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
    }
    env.pop("WINCON_PARENT_PID", None)
    for block, codes in checked_blocks():
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
        )
        assert done.returncode in codes, (
            f"{block}\n-> exit {done.returncode} (expected {sorted(codes)})\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    assert (tmp_path / "results" / "walkthrough-api" / "finished.json").is_file()
