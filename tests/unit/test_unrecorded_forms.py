"""Forms with no public recording (issue 32, "Done when": the checks that depend on them say so in their reason):
the table names the checks whose verdict reads each such form, the plan's reason and the run's failure or expected
failure of those checks say it, and no other check's does."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.unit.test_plan_runtime_skips import profile_json
from wincon.commandline.commands import collect
from wincon.session import reports
from wincon.windows import output_forms

ROOT = Path(__file__).resolve().parents[2]
SECURITY = (
    "suites/api/test_linux_security_fields_on_windows.py::test_linux_security_setting_takes_effect_in_windows_pod"
)
UNRECORDED = [form for form in output_forms.FORMS if not form.recordings]


@pytest.mark.parametrize("form", UNRECORDED, ids=lambda f: f"{f.tool}: {f.form}"[:60])
def test_every_check_an_unrecorded_form_names_exists(form):
    for check in form.checks:
        path, _, rest = check.partition("::")
        function, _, param = rest.partition("[")
        text = (ROOT / path).read_text()
        assert re.search(rf"^def {function}\(", text, re.M), f"{check}: no such test function"
        if param:
            assert f'id="{param.rstrip("]")}"' in text, f"{check}: no such param id"


# The unrecorded forms that name no check, each with why. A new unrecorded form must name its checks or come here.
NO_CHECK = {
    ("nslookup.exe", "refused"): "no reading is claimed: the text is unreadable, a suite error",
    ("Resolve-DnsName", "success"): "the suite's own script prints these lines, not a Windows tool",
    ("Resolve-DnsName", "timeout"): "never read as not found: the parser claims only DNS_ERROR_RCODE_NAME_ERROR",
    ("nltest", "another display language"): "read as UnreadableOutput, a suite error",
    ("curl.exe", "resolver timeout"): "decides no verdict: it only sets the resolver record of a dial by name "
    "(wincon.network.flows), which makes later dials stop sooner at a failed resolution",
    ("curl.exe", "refused"): "decides no verdict: it only clears the resolver record (a server answered)",
}


def test_an_unrecorded_form_names_its_checks_or_says_why_not():
    silent = {(f.tool, f.form.split(":", 1)[0]) for f in UNRECORDED if not f.checks}
    assert silent == set(NO_CHECK), silent ^ set(NO_CHECK)
    curl = [f for f in UNRECORDED if f.tool == "curl.exe"]
    assert curl and not any(f.verdict for f in curl), "a curl.exe form without a recording now decides a verdict"


@pytest.mark.parametrize(
    ("nodeid", "tools"),
    [
        (f"{SECURITY}[run-as-group]", ["whoami /groups"]),
        (f"{SECURITY}[supplemental-groups]", ["whoami /groups"]),
        (f"{SECURITY}[run-as-user]", ["cmd echo %username%"]),
        (f"{SECURITY}[seccomp]", []),
        ("suites/lifecycle/test_lifecycle.py::test_post_start_http_hook_reaches_the_recorder[windows]", ["agnhost"]),
        ("suites/lifecycle/test_lifecycle.py::test_post_start_exec_hook_runs[windows]", []),
        ("suites/networking/test_dns.py::test_pod_reaches_service_by_name_with_namespace[windows-http]", ["agnhost"]),
        ("suites/gmsa/test_gmsa.py::test_container_reaches_the_domain_and_an_smb_share_as_the_gmsa", ["nltest"]),
    ],
)
def test_an_item_is_told_the_unrecorded_forms_its_verdict_reads(nodeid, tools):
    found = [form.tool for form in output_forms.unrecorded_forms(nodeid)]
    assert len(found) == len(tools) and all(f.startswith(t) for f, t in zip(found, tools, strict=True)), found
    note = output_forms.unrecorded_note(nodeid)
    assert bool(note) == bool(tools)
    if tools:
        assert note.startswith("reads a Windows output form with no public recording"), note


def test_the_plan_says_so_for_the_windows_items_only(tmp_path):
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(profile_json()))
    files = ["suites/api/test_linux_security_fields_on_windows.py"]
    dump, output = collect(files, ["--wincon", "--profile-file", str(path)], "--wincon-plan-out")
    assert dump, output
    rows = {row["nodeid"].split("::")[-1]: row for row in dump["tests"]}
    group = rows["test_linux_security_setting_takes_effect_in_windows_pod[run-as-group]"]
    assert "whoami /groups" in group["reason"], group["reason"]
    assert group["windows_form"]["unrecorded_forms"] == [f"whoami /groups: {UNRECORDED_WHOAMI.form}"]
    seccomp = rows["test_linux_security_setting_takes_effect_in_windows_pod[seccomp]"]
    assert "no public recording" not in seccomp["reason"]
    assert seccomp["windows_form"]["unrecorded_forms"] == []


UNRECORDED_WHOAMI = next(f for f in UNRECORDED if f.tool == "whoami /groups")


class Longrepr:
    def __init__(self) -> None:
        self.sections: list[tuple[str, str]] = []

    def addsection(self, name: str, content: str) -> None:
        self.sections.append((name, content))


def item(nodeid: str) -> Any:
    dataplane = SimpleNamespace(name="dataplane")
    return SimpleNamespace(
        nodeid=nodeid,
        get_closest_marker=lambda name: dataplane if name == "dataplane" else None,
        iter_markers=lambda name=None: iter(()),
        callspec=SimpleNamespace(params={}),
    )


def test_the_run_says_so_in_an_expected_failure_and_a_failure(monkeypatch):
    monkeypatch.setattr(reports.forms, "windows_item", lambda it: True)
    xfailed = SimpleNamespace(wasxfail="run-as-group-unsupported", failed=False)
    reports.say_unrecorded(item(f"{SECURITY}[run-as-group]"), xfailed)
    assert xfailed.wasxfail.startswith("run-as-group-unsupported; reads a Windows output form with no public")
    failed = SimpleNamespace(longrepr=Longrepr(), failed=True)
    reports.say_unrecorded(item(f"{SECURITY}[supplemental-groups]"), failed)
    assert failed.longrepr.sections and "whoami /groups" in failed.longrepr.sections[0][1]
    plain = SimpleNamespace(longrepr="AssertionError: x", failed=True)
    reports.say_unrecorded(item(f"{SECURITY}[seccomp]"), plain)
    assert plain.longrepr == "AssertionError: x"
