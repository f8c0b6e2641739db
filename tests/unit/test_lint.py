import subprocess
import sys
import textwrap
from pathlib import Path

from wincon.commandline.commands import lint_problems
from wincon.documents.limitations import Limitation

REPO = Path(__file__).resolve().parents[2]


def lim(ident, untestable=""):
    return Limitation(
        id=ident,
        title="t" * 12,
        area="networking",
        statement="s" * 12,
        sources=({"file": "000_4130a90def37a825.txt", "section": "x"},),
        mode="xfail",
        untestable=untestable,
    )


def row(nodeid, ids, lims=(), function=None):
    return {
        "nodeid": nodeid,
        "function": function or nodeid.split("[")[0],
        "test_ids": list(ids),
        "referenced_limitations": list(lims),
    }


U1, U2 = "6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0001", "6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0002"


def test_clean_suite_has_no_problems():
    tests = [row("a::t1[x]", [U1], ["l1"]), row("a::t1[y]", [U1], ["l1"]), row("a::t2", [U2])]
    assert lint_problems(tests, {"l1": lim("l1"), "l2": lim("l2", untestable="deployment tooling only")}) == []


def test_each_kind_of_problem_is_reported():
    tests = [row("a::t1", []), row("a::t2", ["not-a-uuid"]), row("a::t3", [U1]), row("b::t4", [U1], ["nope"])]
    problems = "\n".join(lint_problems(tests, {"l1": lim("l1")}))
    assert "a::t1: no test_id" in problems
    assert "'not-a-uuid' is not a UUID" in problems
    assert f"test_id {U1} is used by 2 tests" in problems
    assert "limitation 'nope' is not in limitations.yaml" in problems
    assert "limitation 'l1' is referenced by no test" in problems


def run_lint(tmp_path, body, limitations=None):
    suites = tmp_path / "suites"
    suites.mkdir(exist_ok=True)
    (suites / "test_s.py").write_text(textwrap.dedent(body))
    cmd = [sys.executable, "-m", "wincon", "lint", str(suites)]
    if limitations:
        cmd += ["--limitations", str(limitations)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)


def test_lint_command_fails_on_an_unknown_marker(tmp_path):
    proc = run_lint(
        tmp_path,
        """
        import pytest
        @pytest.mark.netwrking
        @pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0001")
        def test_x():
            assert True
    """,
    )
    assert proc.returncode == 4
    assert "unknown marker 'netwrking'" in proc.stderr


def test_lint_command_fails_on_an_invalid_limitations_file(tmp_path):
    bad = tmp_path / "limitations.yaml"
    bad.write_text("version: 1\nlimitations: []\n")
    proc = run_lint(tmp_path, "def test_x():\n    assert True\n", limitations=bad)
    assert proc.returncode == 7
    assert "limitations" in proc.stderr and "fix:" in proc.stderr


def test_the_projects_suites_pass_lint():
    proc = subprocess.run([sys.executable, "-m", "wincon", "lint"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_insert_test_id_goes_above_the_other_decorators_at_the_functions_indentation():
    from wincon.documents.testids import insert_test_id

    source = textwrap.dedent(
        """
        import pytest

        @pytest.mark.networking
        @pytest.mark.parametrize("x", [1, 2])
        def test_a(x):
            assert x

        class TestB:
            def test_b(self):
                assert True
        """
    )
    fixed = insert_test_id(insert_test_id(source, "test_a", U1), "test_b", U2)
    assert f'\n@pytest.mark.test_id("{U1}")\n@pytest.mark.networking\n' in fixed
    assert f'\n    @pytest.mark.test_id("{U2}")\n    def test_b(self):\n' in fixed
    compile(fixed, "fixed.py", "exec")


def test_lint_fix_gives_each_function_without_one_a_new_test_id(tmp_path):
    body = """
    import pytest

    @pytest.mark.parametrize("x", [1, 2])
    def test_without(x):
        assert x

    @pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0009")
    def test_with():
        assert True
    """
    proc = run_lint(tmp_path, body)
    assert "test_without[1]: no test_id" in proc.stdout
    suites = tmp_path / "suites"
    fixed = subprocess.run(
        [sys.executable, "-m", "wincon", "lint", "--fix", str(suites)], capture_output=True, text=True, cwd=REPO
    )
    assert "added a test_id to" in fixed.stdout and "test_without" in fixed.stdout
    assert "no test_id" not in fixed.stdout, fixed.stdout
    text = (suites / "test_s.py").read_text()
    assert text.count("@pytest.mark.test_id(") == 2, "one id per function, parametrized or not"
    again = subprocess.run(
        [sys.executable, "-m", "wincon", "lint", "--fix", str(suites)], capture_output=True, text=True, cwd=REPO
    )
    assert "added a test_id" not in again.stdout
    assert (suites / "test_s.py").read_text() == text
