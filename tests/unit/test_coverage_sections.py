"""docs/coverage.md's "Documented sections" part: generated from the documents markers and kept in step."""

import subprocess
import sys

from tests.unit.test_lint import REPO
from wincon.documents import coverage, sources

TABLE = sources.parse(
    "| id | seed file | title | version or date | public URL |\n|---|---|---|---|---|\n"
    "| guide | 002_8a7e76f95009f44f.txt | A guide | v1.14 | https://example.org/guide |\n"
)


def row(function, test_id, *documents):
    return {"function": f"/repo/suites/{function}", "test_ids": [test_id], "documents": [list(d) for d in documents]}


def test_each_cited_section_lists_its_test_functions_once():
    tests = [
        row("networking/test_a.py::test_x", "id-x", ("guide", "Networking"), ("guide", "DNS")),
        row("networking/test_a.py::test_x", "id-x", ("guide", "Networking")),  # a second parameter set
        row("storage/test_b.py::test_y", "id-y", ("guide", "Networking"), ("nowhere", "Somewhere")),
    ]
    part = coverage.render(tests, TABLE)
    assert part.startswith(coverage.BEGIN) and part.endswith(coverage.END)
    assert "2 test functions cite 3 documented sections." in part
    assert "| Networking | `id-x` `networking/test_a.py::test_x`<br>`id-y` `storage/test_b.py::test_y` |" in part
    assert "| DNS | `id-x` `networking/test_a.py::test_x` |" in part
    assert "### `nowhere`: not in docs/sources.md" in part


def test_update_replaces_only_the_generated_part():
    text = "# Coverage\n\n## Upstream parity\n\nhand-written\n"
    first = coverage.update(text, f"{coverage.BEGIN}\none\n{coverage.END}")
    assert first.startswith(text.rstrip("\n")) and coverage.HEADING in first
    second = coverage.update(first, f"{coverage.BEGIN}\ntwo\n{coverage.END}")
    assert "one" not in second and "two" in second and "hand-written" in second
    assert second.count(coverage.HEADING) == 1


def test_docs_coverage_md_is_in_step_with_the_suites():
    proc = subprocess.run(
        [sys.executable, "-m", "wincon", "coverage", "--check"], capture_output=True, text=True, cwd=REPO
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
