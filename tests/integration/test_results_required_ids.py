"""gating/required.yaml against the real suites: every required id is a collected suite test."""

from __future__ import annotations

from wincon.cli import main
from wincon.commandline.errors import ExitCode
from wincon.results.gate import collect_suite_ids, load_required, validate_against_suite


def test_every_required_id_is_a_suite_test():
    suite_ids = collect_suite_ids()
    assert suite_ids, "no suite test carries a test_id"
    assert validate_against_suite(load_required(), suite_ids) == []


def test_validate_names_an_id_no_suite_test_carries(tmp_path, capsys):
    required = tmp_path / "required.yaml"
    required.write_text(
        'version: 1\nkubernetes:\n  "1.34":\n    tests:\n'
        "      - {id: 00000000-0000-4000-8000-0000000000ff, name: a test that does not exist}\n"
    )
    assert main(["gate", "--validate", "--required", str(required)]) == ExitCode.USAGE
    assert (
        "00000000-0000-4000-8000-0000000000ff (a test that does not exist) is not the test_id"
        in capsys.readouterr().out
    )
