"""What Windows' nltest.exe prints, read by its status codes (the gMSA checks' evidence).

nltest reports each secure-channel status it asks for as ``Status = <decimal> <hex> <name>`` ("Connection Status
= 0 0x0 NERR_Success" for /QUERY, "Trusted DC Connection Status Status = ..." for /SC_RESET and /SC_VERIFY) and
closes with "The command completed successfully" once it ran at all, whatever those statuses were: recorded on a
machine whose trust was broken (tests/data/windows-outputs/nltest-sc-verify-no-trust-sam-account.txt: both
statuses 1787 ERROR_NO_TRUST_SAM_ACCOUNT, then "The command completed successfully"). Success is therefore every
status NERR_Success (0 0x0) AND the closing sentence, as the Kubernetes gMSA page's own check requires
(``$Result -like '*0x0 NERR_Success*'``, nltest-sc-reset-success.txt); upstream's isValidOutput
(test/e2e/windows/gmsa_full.go) looks at the sentence and two error names only. A call that failed outright prints
"<call> failed: Status = <code> ..." and no closing sentence (nltest-query-rpc-server-unavailable.txt).

Text with neither a status line nor the closing sentence (another language, another tool's error) is
UnreadableOutput: never a success and never the domain failing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wincon.commandline.errors import UnreadableOutput

COMPLETED = "The command completed successfully"
NERR_SUCCESS = "NERR_Success"
_STATUS = re.compile(r"Status = (?P<code>\d+) (?P<hex>0x[0-9A-Fa-f]+)(?: (?P<name>[A-Za-z][A-Za-z0-9_]*))?")
_PARENT_DOMAIN = re.compile(r"^(?P<domain>[A-Za-z0-9][A-Za-z0-9.-]*?)\.? \(\d+\)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class NltestStatus:
    """The statuses nltest reported, in order, as (code, name), and whether it closed with its sentence."""

    statuses: tuple[tuple[int, str], ...]
    completed: bool

    @property
    def ok(self) -> bool:
        """Every status 0 NERR_Success, at least one of them, and the closing sentence."""
        return (
            self.completed
            and bool(self.statuses)
            and all(code == 0 and name == NERR_SUCCESS for code, name in self.statuses)
        )

    @property
    def failures(self) -> tuple[str, ...]:
        """The statuses that are not NERR_Success, by name (or code)."""
        return tuple(name or str(code) for code, name in self.statuses if code != 0 or name != NERR_SUCCESS)


def parse_status(output: str) -> NltestStatus:
    """nltest /QUERY, /SC_RESET or /SC_VERIFY's statuses; UnreadableOutput where it printed neither a status line
    nor its closing sentence, or only successful statuses without its English closing sentence."""
    statuses = tuple((int(m["code"]), m["name"] or "") for m in _STATUS.finditer(output))
    completed = COMPLETED in output
    if not statuses and not completed:
        raise UnreadableOutput(
            "nltest printed no 'Status = <code> <hex> <name>' line and no closing sentence",
            tool="nltest",
            output=output,
        )
    if statuses and all(code == 0 for code, _ in statuses) and not completed and "failed" not in output:
        # Every status succeeded, yet no English closing sentence and no "<call> failed": not a recorded form
        # (nltest in another display language would keep the codes and translate the sentence), never a failure.
        raise UnreadableOutput(
            "nltest reported only status 0 without its English closing sentence", tool="nltest", output=output
        )
    return NltestStatus(statuses, completed)


def query_succeeded(output: str) -> bool:
    """``nltest /QUERY`` reached the domain: every status NERR_Success and the closing sentence (see the module's
    docstring); UnreadableOutput for text nltest's forms do not explain."""
    return parse_status(output).ok


def parent_domain(output: str) -> str | None:
    """The domain ``nltest /PARENTDOMAIN`` named ("domain.local. (1)" then the closing sentence,
    nltest-parentdomain-success.txt), without its trailing dot; None where nltest reported a failure status
    ("Getting parent domain failed: Status = 1722 ...", nltest-parentdomain-rpc-server-unavailable.txt);
    UnreadableOutput for anything else."""
    match = _PARENT_DOMAIN.search(output)
    if match and COMPLETED in output:
        return match["domain"]
    if _STATUS.search(output):
        return None
    raise UnreadableOutput("nltest /PARENTDOMAIN printed neither a domain nor a status", tool="nltest", output=output)
