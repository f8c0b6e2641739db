"""The forms table (wincon/windows/output_forms.py) against the recordings: every recording of tests/data/windows-outputs/
is in a row, reads as its row says with the suite's own parser (one test per recording), and docs/windows-outputs.md
is the table's current rendering."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import suites
from wincon.cluster.exec import ExecResult, missing_executable
from wincon.commandline.errors import UnreadableOutput
from wincon.network import flows
from wincon.windows import connectivity as conn
from wincon.windows import nltest, output_forms

ROOT = Path(__file__).resolve().parents[2]
CORPUS = output_forms.CORPUS
PROMPT = re.compile(r"^(?:PS )?[A-Za-z]:\\[^>\n]*>.*$", re.MULTILINE)


def text_of(recording: str) -> str:
    """A recording's text; ``file#N`` is the N-th command's output of a terminal recording (after its prompt),
    ``file#1+stderr`` the first with the error line the tool printed at the recording's end."""
    name, _, part = recording.partition("#")
    text = (CORPUS / name).read_text()
    if not part:
        return text
    index, _, extra = part.partition("+")
    outputs = PROMPT.split(text)
    output = outputs[int(index)]
    if extra == "stderr":
        output += text.rstrip("\n").rsplit("\n", 1)[1] + "\n"
    return output


def resolver(tool: str, result: ExecResult) -> str:
    if flows.resolver_silent(tool, result):
        return "resolver silent"
    return "resolver answered" if flows.resolver_answered(tool, result) else "resolver unknown"


def read_nslookup(text: str, exit_code: int) -> str:
    # A whole-file recording may start with the terminal's prompt and the typed command (``PS C:\\> nslookup ...``):
    # the terminal's, not nslookup's output, which an exec never holds and the parser does not read.
    text = PROMPT.sub("", text)
    try:
        lookup = conn.parse_nslookup(text)
    except UnreadableOutput:
        return "unreadable (suite error)"
    if lookup.ok:
        answer = "addresses " + ", ".join(lookup.addresses)
    elif lookup.not_found:
        answer = "name does not exist (NXDOMAIN)"
    elif "Server failed" in (lookup.error or "") or "SERVFAIL" in (lookup.error or ""):
        answer = "server failure (SERVFAIL)"
    elif "timed" in (lookup.error or ""):
        answer = "timed out"
    else:
        answer = f"no answer: {lookup.error}"
    return f"{answer}; {resolver('nslookup', ExecResult(0 if lookup.ok else 1, text, ''))}"


def read_ping(text: str, exit_code: int) -> str:
    try:
        replied = conn.ping_succeeded("windows", exit_code, text)
    except UnreadableOutput:
        return "unreadable (suite error)"
    if replied:
        return "echo reply from the target"
    try:
        conn.parse_ping("windows", text)
        reading = "no echo reply"
    except UnreadableOutput:
        reading = "no echo reply (no statistics)"
    if flows.ping_unanswered("windows", ExecResult(exit_code, text, "")):
        reading += "; ICMP deviation evidence"
    return reading


def read_curl(text: str, exit_code: int) -> str:
    result = ExecResult(exit_code, "", text)
    said = resolver("curl", result)
    if said == "resolver unknown" and flows.resolver_failed("curl", result):
        return "resolution failed; whether a server answered is unknown"
    return said


def read_nltest(text: str, exit_code: int) -> str:
    try:
        status = nltest.parse_status(text)
    except UnreadableOutput:
        return "unreadable (suite error)"
    return "domain reached (NERR_Success)" if status.ok else "not reached: " + ", ".join(status.failures)


def read_parent(text: str, exit_code: int) -> str:
    try:
        domain = nltest.parent_domain(text)
    except UnreadableOutput:
        return "unreadable (suite error)"
    return f"domain {domain}" if domain else "no domain (failure status)"


def read_get_volume(text: str, exit_code: int) -> str:
    try:
        return "file systems " + ", ".join(conn.parse_get_volume(text))
    except UnreadableOutput:
        return "unreadable (suite error)"


def read_ipconfig(text: str, exit_code: int) -> str:
    config = conn.parse_dns_config("windows", text)
    return f"servers {', '.join(config.nameservers) or 'none'}; search {', '.join(config.searches) or 'none'}"


def read_resolve_dnsname(text: str, exit_code: int) -> str:
    lookup = conn.parse_resolve_dnsname("", exit_code=1, stderr=text)
    return "name does not exist (NXDOMAIN)" if lookup.not_found else f"no answer: {lookup.error}"


def read_cmd_type(text: str, exit_code: int) -> str:
    conventions = suites.load("suites/api/test_windows_conventions.py")
    storage = suites.load("suites/storage/test_volume_limitations.py")
    if conventions.slash_path_refused(ExecResult(1, "", text)):
        return "slash path refused (deviation evidence)"
    if text.strip() == storage.FILE_NOT_FOUND:
        return "file not found (not the slash deviation)"
    return "neither"


def read_exec(text: str, exit_code: int) -> str:
    return "executable missing (suite error)" if missing_executable(text) else "not a missing executable"


def read_os_mismatch(text: str, exit_code: int) -> str:
    image_os = suites.load("suites/scheduling/test_image_os_version.py")
    said = any(phrase in text.lower() for phrase in image_os.OS_MISMATCH)
    return "OS version mismatch (deviation evidence)" if said else "not the OS mismatch"


READERS: dict[str, Callable[[str, int], str]] = {
    output_forms.NSLOOKUP: read_nslookup,
    output_forms.PING: read_ping,
    output_forms.CURL: read_curl,
    output_forms.NLTEST: read_nltest,
    output_forms.PARENT: read_parent,
    output_forms.GET_VOLUME: read_get_volume,
    output_forms.IPCONFIG: read_ipconfig,
    output_forms.RESOLVE_DNSNAME: read_resolve_dnsname,
    output_forms.CMD_TYPE: read_cmd_type,
    output_forms.EXEC: read_exec,
    output_forms.OS_MISMATCH: read_os_mismatch,
}
CASES = [
    pytest.param(form, recording, id=f"{form.tool}:{recording}")
    for form in output_forms.FORMS
    for recording in form.recordings
]


@pytest.mark.parametrize(("form", "recording"), CASES)
def test_each_recording_reads_as_its_form_says(form, recording):
    assert READERS[form.parser](text_of(recording), form.exit_code) == form.reading


def test_every_recording_is_in_a_row_and_every_row_names_existing_recordings():
    corpus = {p.name for p in CORPUS.glob("*.txt")}
    assert output_forms.recording_files() == corpus
    for name in corpus:
        assert output_forms.source_address(name).startswith("https://"), name


def test_rows_without_recordings_say_so_and_claim_no_reading():
    for form in output_forms.FORMS:
        if not form.recordings:
            assert form.reading == output_forms.NO_RECORDING and form.note, form
        else:
            assert form.reading != output_forms.NO_RECORDING, form
            assert form.parser in READERS, form.parser


def test_every_verdict_form_with_a_single_recording_says_so():
    # A form a verdict depends on wants two independent recordings; where the table has one, its note says so.
    for form in output_forms.FORMS:
        if form.verdict and len(form.recordings) == 1:
            assert re.search(r"\bone\b[^.]*recording|second independent|together with", form.note, re.I), form.form


def test_the_docs_page_is_the_current_table():
    page = ROOT / "docs" / "windows-outputs.md"
    assert page.read_text() == output_forms.render(), (
        "docs/windows-outputs.md is stale: python -m wincon.windows.output_forms > docs/windows-outputs.md"
    )


def test_an_nslookup_diagnostic_in_words_the_suite_does_not_read_is_unreadable_not_no_address():
    """The recorded not-found output with its diagnostic's words replaced (a stand-in for a translated one, whose
    text no citable recording holds: not a claim of what Windows prints). Before, with its "Address:" lines left,
    it read as "no address in the answer" (the name failing to resolve); now it is a suite error quoting it."""
    recorded = (CORPUS / "nslookup-windows-container-non-existent-domain.txt").read_text()
    assert "can't find" in recorded
    reworded = recorded.replace("can't find", "<unread words>").replace("Non-existent domain", "<unread words>")
    with pytest.raises(UnreadableOutput, match="nslookup printed a message the suite does not read"):
        conn.parse_nslookup(reworded)
    assert conn.parse_nslookup(recorded).not_found
