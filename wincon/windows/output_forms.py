"""The forms table: every form of every Windows tool's output the suite reads, with its public recordings and
what the suite's parser reads in each (issue 32).

One row per form a check must tell apart (success; not found, timeout, refused, unreachable, server failure,
access denied, trust failure; other wordings of other Windows releases, images, PowerShell editions and display
languages). ``recordings`` are files of tests/data/windows-outputs/ (each with a ``.source`` naming its public
address, date and OS); a form with none says so in ``note`` and is read by nothing the suite trusts (its parser
says "unreadable", a suite error, or the check declares the form unavailable). ``reading`` is what ``parser``
reads in every recording of the row: tests/unit/test_windows_output_forms.py computes it from each recording
and fails on any difference, on a recording no row names, and on docs/windows-outputs.md not being
``render()``'s output (regenerate it with ``python -m wincon.windows.output_forms > docs/windows-outputs.md``).

A recording written ``file.txt#N`` is the N-th command of a terminal recording holding several (its lines after
the N-th prompt), ``file.txt#1+stderr`` the first one with the error line its tool printed at the recording's end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "windows-outputs"


@dataclass(frozen=True)
class Form:
    tool: str
    form: str
    recordings: tuple[str, ...]
    parser: str
    reading: str
    # The form decides a verdict (a pass, a failure or a documented deviation): two independent recordings wanted.
    verdict: bool = False
    note: str = ""
    exit_code: int = 0  # the exit code the reading is computed with (as recorded where the recording shows it)
    # The Windows checks whose verdict reads this form ("path::function" or "path::function[param]"). For a form
    # with no recording they say so in their reason (plan and run: unrecorded_note).
    checks: tuple[str, ...] = ()


NSLOOKUP = "wincon.windows.connectivity.parse_nslookup + wincon.network.flows.resolver_silent/resolver_answered"
PING = "wincon.windows.connectivity.ping_succeeded + wincon.network.flows.ping_unanswered"
CURL = "wincon.network.flows.resolver_answered/resolver_silent/resolver_failed (curl)"
NLTEST = "wincon.windows.nltest.query_succeeded (suites/gmsa test_gmsa.query_succeeded)"
PARENT = "wincon.windows.nltest.parent_domain"
GET_VOLUME = "wincon.windows.connectivity.parse_get_volume"
IPCONFIG = "wincon.windows.connectivity.parse_dns_config('windows')"
RESOLVE_DNSNAME = "wincon.windows.connectivity.parse_resolve_dnsname"
CMD_TYPE = "suites/api test_windows_conventions.slash_path_refused; suites/storage FILE_NOT_FOUND"
EXEC = "wincon.cluster.exec.missing_executable"
OS_MISMATCH = "suites/scheduling test_image_os_version.OS_MISMATCH"
NO_RECORDING = "(no recording to read)"

FORMS: tuple[Form, ...] = (
    # ------------------------------------------------------------------ nslookup.exe (Windows) and busybox's
    Form(
        "nslookup.exe",
        "success: two addresses, 'Addresses:' over two lines",
        ("nslookup-windows-servercore-ltsc2022.txt#2",),
        NSLOOKUP,
        "addresses 2607:f8b0:4005:80e::2004, 216.58.195.68; resolver answered",
        verdict=True,
        note="servercore:ltsc2022 container (10.0.20348). A second independent recording of this form was not found.",
    ),
    Form(
        "nslookup.exe",
        "success: one address, 'Address:' under the answer's 'Name:'",
        ("nslookup-windows-container-single-address.txt",),
        NSLOOKUP,
        "addresses 172.19.145.123; resolver answered",
        verdict=True,
        note="Windows container (Docker 1.14-dev). Together with the row above: two independent success recordings.",
    ),
    Form(
        "nslookup.exe",
        "not found: '*** <server> can't find <name>: Non-existent domain' (Windows' own words for NXDOMAIN)",
        ("nslookup-windows-container-non-existent-domain.txt",),
        NSLOOKUP,
        "name does not exist (NXDOMAIN); resolver answered",
        verdict=True,
        note="Windows container (Docker). Read wrong before issue 32 (no NXDOMAIN, record not cleared). Only one "
        "citable recording found; copies elsewhere are in other display languages ('ne parvient pas à trouver', "
        "'não encontrou'), which the parser reads as unreadable (a suite error), never as not found or no address.",
    ),
    Form(
        "nslookup.exe",
        "server failure: '*** <server> can't find <name>: Server failed' (SERVFAIL)",
        ("nslookup-windows-container-server-failed.txt", "nslookup-windows-servercore-ltsc2022.txt#1+stderr"),
        NSLOOKUP,
        "server failure (SERVFAIL); resolver answered",
        verdict=True,
        note="Windows container (Docker); servercore:ltsc2022 container. Never 'not found'.",
    ),
    Form(
        "nslookup.exe",
        "timeout: 'DNS request timed out.' and '*** Request to <server> timed-out' (no server answered)",
        ("nslookup-windows-timeout.txt",),
        NSLOOKUP,
        "timed out; resolver silent",
        verdict=True,
        note="windowsservercore:1709 pod (acs-engine). Never 'not found'; the resolver-silent record. One recording.",
    ),
    Form(
        "nslookup.exe",
        "refused: the server refused the query",
        (),
        NSLOOKUP,
        NO_RECORDING,
        note="No public recording of Windows nslookup's refusal found: no reading is claimed for it.",
    ),
    Form(
        "nslookup (busybox, Linux controls)",
        "not found: '** server can't find <name>: NXDOMAIN' for both queries",
        ("nslookup-busybox-nxdomain.txt", "nslookup-busybox-nxdomain-no-answer.txt"),
        NSLOOKUP,
        "name does not exist (NXDOMAIN); resolver answered",
        verdict=True,
        note="Linux pods (the controls' tool, shared parser).",
    ),
    # ------------------------------------------------------------------ Resolve-DnsName
    Form(
        "Resolve-DnsName",
        "not found: '<name> : DNS name does not exist', DNS_ERROR_RCODE_NAME_ERROR",
        ("resolve-dnsname-nxdomain.txt",),
        RESOLVE_DNSNAME,
        "name does not exist (NXDOMAIN)",
        verdict=True,
        note="Windows container (Docker swarm). One recording.",
    ),
    Form(
        "Resolve-DnsName",
        "success: the suite's own TYPE<tab>NAME<tab>DATA lines",
        (),
        RESOLVE_DNSNAME,
        NO_RECORDING,
        note="The suite's script prints these lines itself (resolve_dnsname_command); no Windows text to record.",
    ),
    Form(
        "Resolve-DnsName",
        "timeout: ERROR_TIMEOUT",
        (),
        RESOLVE_DNSNAME,
        NO_RECORDING,
        note="No public recording found; the parser never reads it as not found (only DNS_ERROR_RCODE_NAME_ERROR).",
    ),
    # ------------------------------------------------------------------ ipconfig /all
    Form(
        "ipconfig /all",
        "per-adapter 'Connection-specific DNS Suffix Search List' on its continuation line",
        ("ipconfig-all-containerd-pod-adapter-search-list.txt",),
        IPCONFIG,
        "servers 10.128.0.1; search google.com",
        verdict=True,
        note="containerd Windows container (CNI nat). One recording.",
    ),
    Form(
        "ipconfig /all",
        "global 'DNS Suffix Search List' over three lines",
        ("ipconfig-all-k8s-pod-global-search-list.txt",),
        IPCONFIG,
        "servers none; search cluster.local, default.svc.cluster.local, svc.cluster.local",
        verdict=True,
        note="Kubernetes Windows pod (CNI nsx); the recording stops before DNS Servers. One recording.",
    ),
    Form(
        "ipconfig",
        "the namespace's suffix only (a pod without the cluster suffixes)",
        ("ipconfig-k8s-pod-namespace-suffix-only.txt",),
        IPCONFIG,
        "servers none; search default.svc.cluster.local",
        verdict=True,
        note="Windows Server 1803 pod, Azure CNI. One recording.",
    ),
    # ------------------------------------------------------------------ ping.exe
    Form(
        "ping.exe",
        "success: echo replies 'Reply from <target>: bytes=32 time... TTL=...'",
        (
            "ping-windows-servercore-ltsc2019-container-success.txt",
            "ping-windows-servercore-ltsc2019-container-gateway-success.txt",
            "ping-windows-server-2022-container-success-elided.txt",
            "ping-windows-n1-w-success.txt",
            "ping-windows-success-reply.txt",
        ),
        PING,
        "echo reply from the target",
        verdict=True,
        note="servercore:ltsc2019 containers; a container on Windows Server 2022; machines of unstated edition.",
    ),
    Form(
        "ping.exe",
        "timeout: 'Request timed out.' with statistics, Received = 0",
        ("ping-windows-n1-w-timeout.txt",),
        PING,
        "no echo reply; ICMP deviation evidence",
        verdict=True,
        exit_code=1,
        note="The suite's own `-n 1 -w` shape, exit 1. One recording with statistics; the cut recordings below are "
        "from Windows Server.",
    ),
    Form(
        "ping.exe",
        "timeout or unreachable, cut before the statistics",
        (
            "ping-windows-servercore-ltsc2019-container-timeout-cut.txt",
            "ping-windows-server-2016-nanoserver-timeout-cut.txt",
            "ping-windows-server-2019-pod-unreachable-timeout-cut.txt",
        ),
        PING,
        "no echo reply (no statistics); ICMP deviation evidence",
        verdict=True,
        note="servercore:ltsc2019 container; nanoserver on Windows Server 2016; a pod on a Windows Server 2019 node.",
    ),
    Form(
        "ping.exe",
        "unreachable: 'Reply from <own address>: Destination host unreachable.' counted as received, exit 0",
        (
            "ping-windows-server-destination-host-unreachable.txt",
            "ping-windows-destination-host-unreachable-counted-received.txt",
            "ping-windows-n1-w-unreachable-cut.txt",
        ),
        PING,
        "no echo reply; ICMP deviation evidence",
        verdict=True,
        note="A Windows Server LTSC VM and two machines of unstated edition; exit 0 and 'Received = N' yet no reply.",
    ),
    Form(
        "ping.exe",
        "sender failure: 'PING: transmit failed. General failure.'",
        ("ping-windows-server-general-failure.txt",),
        PING,
        "no echo reply",
        verdict=True,
        exit_code=1,
        note="Windows Server LTSC VM, adapter disabled, exit 1. Not the ICMP deviation (the sender's own stack failed). "
        "One recording.",
    ),
    Form(
        "ping.exe",
        "mixed: 'General failure.' lines and one 'Destination host unreachable.' reply, exit 0",
        ("ping-windows-11-general-failure-and-unreachable.txt",),
        PING,
        "no echo reply; ICMP deviation evidence",
        note="Windows 11 VM, adapter disconnected. The unreachable line makes it the deviation's evidence (the "
        "predicate's rule: an unreachable reply and no echo reply).",
    ),
    Form(
        "ping.exe",
        "name not found: 'Ping request could not find host <name>.'",
        ("ping-windows-container-could-not-find-host.txt",),
        PING,
        "no echo reply (no statistics)",
        note="aspnet:4.8 container on Windows 10 1809. No request was sent: never the ICMP deviation.",
    ),
    Form(
        "ping.exe",
        "another display language (French, Chinese): replies and statistics in other words",
        ("ping-windows-french-success.txt", "ping-windows-chinese-success.txt"),
        PING,
        "unreadable (suite error)",
        verdict=True,
        note="Windows 10 22H2 French; Windows 10 Chinese. Read as 'no echo reply' (a failure) before issue 32. "
        "ping.exe has no switch for its output language.",
    ),
    # ------------------------------------------------------------------ curl.exe
    Form(
        "curl.exe",
        "not resolved: 'curl: (6) Could not resolve host: <name>'",
        ("curl-windows-pod-could-not-resolve-host.txt",),
        CURL,
        "resolution failed; whether a server answered is unknown",
        verdict=True,
        exit_code=6,
        note="Windows pod (sig-windows-dev-tools cluster). One Windows recording. The two-nameserver check's "
        "negative control and its dns-config-via-cni deviation need this message for the name, not exit 6 alone "
        "(connectivity.curl_could_not_resolve).",
    ),
    Form(
        "curl.exe",
        "resolved, then no connection: 'curl: (28) Failed to connect to <name> port <n> after <ms> ms: ...'",
        ("curl-windows-servercore-ltsc2019-connect-timeout.txt",),
        CURL,
        "resolver answered",
        verdict=True,
        exit_code=28,
        note="servercore:ltsc2019 container. Exit 28 alone did not count as 'the resolver answered' before issue "
        "32. One recording.",
    ),
    Form(
        "curl.exe",
        "resolver timeout: 'curl: (28) Resolving timed out after <ms> milliseconds'",
        (),
        CURL,
        NO_RECORDING,
        note="No Windows recording found; the record of a silent resolver is set only on this message with exit 28.",
    ),
    Form(
        "curl.exe",
        "refused: 'curl: (7) Failed to connect to <host> port <n>: Connection refused'",
        (),
        CURL,
        NO_RECORDING,
        note="No Windows recording found; exit 7 counts as resolved by its code alone.",
    ),
    # ------------------------------------------------------------------ nltest
    Form(
        "nltest",
        "success: 'Trusted DC Connection Status Status = 0 0x0 NERR_Success', 'The command completed successfully'",
        ("nltest-sc-reset-success.txt",),
        NLTEST,
        "domain reached (NERR_Success)",
        verdict=True,
        note="One recording: /sc_reset in a gMSA pod (1809 image). /QUERY's own success line 'Connection Status = 0 0x0 "
        "NERR_Success' was seen only in copies without a citable address: not recorded here.",
    ),
    Form(
        "nltest",
        "trust failure that still ends 'The command completed successfully' (ERROR_NO_TRUST_SAM_ACCOUNT)",
        ("nltest-sc-verify-no-trust-sam-account.txt",),
        NLTEST,
        "not reached: ERROR_NO_TRUST_SAM_ACCOUNT, ERROR_NO_TRUST_SAM_ACCOUNT",
        verdict=True,
        note="A domain-joined Windows VM. Read as success before issue 32 (upstream's isValidOutput has the same "
        "gap). One recording.",
    ),
    Form(
        "nltest",
        "call failed: 'I_NetLogonControl failed: Status = 1722 0x6ba RPC_S_SERVER_UNAVAILABLE'",
        ("nltest-query-rpc-server-unavailable.txt",),
        NLTEST,
        "not reached: RPC_S_SERVER_UNAVAILABLE",
        verdict=True,
        note="/QUERY in a gMSA pod (1809 image). One recording.",
    ),
    Form(
        "nltest",
        "access denied: 'Status = 5 0x5 ERROR_ACCESS_DENIED'",
        (),
        NLTEST,
        NO_RECORDING,
        note="No public recording found; any status other than NERR_Success is read as not reached.",
        checks=("suites/gmsa/test_gmsa.py::test_container_reaches_the_domain_and_an_smb_share_as_the_gmsa",),
    ),
    Form(
        "nltest",
        "another display language: the status codes kept, the closing sentence translated",
        (),
        NLTEST,
        NO_RECORDING,
        note="No public recording found. Only status 0 without the English sentence is UnreadableOutput (a suite "
        "error; tested on a recording with its sentence cut out), never success and never the domain failing.",
    ),
    Form(
        "nltest /PARENTDOMAIN",
        "success: '<domain>. (1)', 'The command completed successfully'",
        ("nltest-parentdomain-success.txt",),
        PARENT,
        "domain domain.local",
        verdict=True,
        note="A Windows Server 2016 container host. One recording.",
    ),
    Form(
        "nltest /PARENTDOMAIN",
        "failure: 'Getting parent domain failed: Status = 1722 0x6ba RPC_S_SERVER_UNAVAILABLE'",
        ("nltest-parentdomain-rpc-server-unavailable.txt",),
        PARENT,
        "no domain (failure status)",
        verdict=True,
        note="A pod without its credential spec (1809 image). One recording.",
    ),
    # ------------------------------------------------------------------ Get-Volume
    Form(
        "Get-Volume",
        "Windows PowerShell 5.1 default table: 'FileSystemLabel FileSystem' columns",
        ("get-volume-windows-server.txt",),
        GET_VOLUME,
        "file systems NTFS, NTFS, CSVFS, CSVFS",
        verdict=True,
        note="A Windows Server failover-cluster node (CSVFS). One recording.",
    ),
    Form(
        "Get-Volume",
        "narrower table of the Windows Server 2022 reference page (no DriveType, no OperationalStatus)",
        ("get-volume-docs-example-drive-letter.txt",),
        GET_VOLUME,
        "file systems NTFS",
        verdict=True,
        note="Storage module reference page (winserver2022-ps). One recording.",
    ),
    Form(
        "Get-Volume",
        "PowerShell 7 table: 'FriendlyName FileSystemType' columns",
        ("get-volume-powershell7-friendlyname-filesystemtype.txt",),
        GET_VOLUME,
        "file systems NTFS",
        verdict=True,
        note="PowerShell 7 on Windows 10. A suite error for a healthy volume before issue 32. One recording; no "
        "Windows Server 2025 recording of any Get-Volume table was found.",
    ),
    # ------------------------------------------------------------------ cmd.exe's type
    Form(
        "cmd type",
        "unquoted '/' path: 'The syntax of the command is incorrect.'",
        ("cmd-type-unquoted-forward-slash-path.txt",),
        CMD_TYPE,
        "slash path refused (deviation evidence)",
        verdict=True,
        note="cmd.exe on Windows (superuser answer). One recording.",
    ),
    Form(
        "cmd type",
        "not found: 'The system cannot find the file specified.'",
        ("cmd-type-quoted-forward-slash-path-not-found.txt",),
        CMD_TYPE,
        "file not found (not the slash deviation)",
        verdict=True,
        note="cmd.exe on Windows (superuser answer). One recording.",
    ),
    # ------------------------------------------------------------------ hcsshim / containerd / kubelet
    Form(
        "hcsshim (kubectl exec)",
        "missing executable: '... CreateProcess: failure in a Windows system call: The system cannot find the file "
        "specified.'",
        (
            "hcsshim-exec-missing-executable.txt",
            "hcsshim-exec-missing-executable-0x2-exit-126.txt",
            "hcsshim-exec-missing-executable-createprocess.txt",
            "containerd-hcs-createprocess-not-found.txt",
        ),
        EXEC,
        "executable missing (suite error)",
        verdict=True,
        note="Three wordings: 'hcsshim::System::CreateProcess' (2020), with '(0x2)' (2022), the older 'CreateProcess' "
        "(2020); containerd's 'hcs::System::CreateProcess' on Windows Server 2019.",
    ),
    Form(
        "kubelet / HCS (pod events)",
        "image OS version mismatch: two wordings, with and without 0xc0370101",
        ("kubelet-event-os-mismatch-createcomputesystem.txt", "kubelet-log-os-mismatch-0xc0370101.txt"),
        OS_MISMATCH,
        "OS version mismatch (deviation evidence)",
        verdict=True,
        note="Windows Server 2019 node (Docker); a Windows node of Microsoft's getting-started guide (Docker). No "
        "containerd-era recording was found.",
    ),
    # ------------------------------------------------------------------ forms the suite reads with no recording
    Form(
        "agnhost connect (Windows pod)",
        "not found: 'DNS: lookup <name>[ on <server>]: no such host' (Go's resolver over GetAddrInfoW)",
        (),
        "wincon.windows.connectivity.parse_resolve / go_not_found",
        NO_RECORDING,
        note="agnhost's own Go text, the same program as the Linux control's; its form is Go's net.DNSError (upstream "
        "code), and no Windows pod's output of it was found recorded.",
        checks=("suites/networking/test_dns.py::test_pod_reaches_service_by_name_with_namespace",),
    ),
    Form(
        "agnhost netexec (hook recorder, Windows pod)",
        "the recorder's log line 'GET /echo?msg=<message>'",
        (),
        "suites/lifecycle test_lifecycle.wait_recorded (the line in the pod's log)",
        NO_RECORDING,
        note="agnhost netexec's own log (Go), the same on both OSes; no Windows text to record, none found recorded.",
        checks=(
            "suites/lifecycle/test_lifecycle.py::test_post_start_http_hook_reaches_the_recorder",
            "suites/lifecycle/test_lifecycle.py::test_container_receives_sigterm_when_its_pod_is_deleted",
        ),
    ),
    Form(
        "whoami /groups",
        "the process's groups (run-as-group and supplemental-groups checks look for the group's number)",
        (),
        "suites/api test_linux_security_fields_on_windows (a number in the output)",
        NO_RECORDING,
        note="No public recording of `whoami /groups` in a Windows container found; the checks accept only the "
        "Linux behaviour's number and take no deviation form from this text.",
        checks=(
            "suites/api/test_linux_security_fields_on_windows.py::test_linux_security_setting_takes_effect_in_windows_pod[run-as-group]",
            "suites/api/test_linux_security_fields_on_windows.py::test_linux_security_setting_takes_effect_in_windows_pod[supplemental-groups]",
        ),
    ),
    Form(
        "cmd echo %username%",
        "one account name (ContainerUser, ContainerAdministrator)",
        (),
        "wincon.checks.api_rules.is_account_name",
        NO_RECORDING,
        note="Evidence is upstream's e2e code (security_context.go:132), not a recording.",
        checks=(
            "suites/api/test_linux_security_fields_on_windows.py::test_linux_security_setting_takes_effect_in_windows_pod[run-as-user]",
            "suites/api/test_run_as_user_name.py::test_container_runs_as_the_user_named_by_run_as_user_name",
            "suites/api/test_run_as_user_name_at_runtime.py::test_container_run_as_user_name_overrides_the_pods",
            "suites/api/test_run_as_user_name_at_runtime.py::test_container_runs_as_the_default_user_or_the_one_named",
        ),
    ),
)


def _covers(check: str, nodeid: str) -> bool:
    """``check`` ("path::function" or "path::function[param]") names the item ``nodeid``: the same function, and
    where a param is given, it is the item's param or one of its dash-joined parts."""
    base, _, param = check.partition("[")
    node_base, _, node_param = nodeid.partition("[")
    if node_base != base:
        return False
    want, have = param.rstrip("]"), node_param.rstrip("]")
    return not want or have == want or have.startswith(f"{want}-") or have.endswith(f"-{want}") or f"-{want}-" in have


def unrecorded_forms(nodeid: str) -> list[Form]:
    """The forms with no public recording that the item ``nodeid``'s verdict reads."""
    return [form for form in FORMS if not form.recordings and any(_covers(c, nodeid) for c in form.checks)]


def unrecorded_note(nodeid: str) -> str:
    """What the item's reason says of them (plan and run alike), or "" where it reads none."""
    forms = unrecorded_forms(nodeid)
    if not forms:
        return ""
    listed = "; ".join(f"{form.tool}: {form.form}" for form in forms)
    return f"reads a Windows output form with no public recording (docs/windows-outputs.md): {listed}"


def source_address(recording: str) -> str:
    """The public address a recording's .source names (its first https:// after 'Source:')."""
    name = recording.split("#", 1)[0]
    text = (CORPUS / f"{name}.source").read_text()
    match = re.search(r"Source:\s*(https://\S+)", text)
    return match.group(1).rstrip(").,") if match else ""


def recording_files() -> set[str]:
    """The corpus files the table names."""
    return {r.split("#", 1)[0] for form in FORMS for r in form.recordings}


def render() -> str:
    """docs/windows-outputs.md."""
    tools = list(dict.fromkeys(form.tool for form in FORMS))
    recorded = sum(1 for form in FORMS if form.recordings)
    files = recording_files()
    sources = {source_address(f) for f in files}
    lines = [
        "# Windows outputs: the forms the suite reads",
        "",
        "Generated by `python -m wincon.windows.output_forms > docs/windows-outputs.md` from wincon/windows/output_forms.py; "
        "tests/unit/test_windows_output_forms.py fails when this page is not current, when a recording reads "
        "otherwise than its row says, or when a recording of tests/data/windows-outputs/ is in no row.",
        "",
        f"{len(tools)} tools, {len(FORMS)} forms ({recorded} with recordings, {len(FORMS) - recorded} without), "
        f"{len(files)} recordings from {len(sources)} public sources. Every recording is verbatim from its "
        "source (its `.source` says what was cut); nothing here was produced on a Windows machine by this project. "
        "No recording comes from Windows Server 2025: none was found.",
        "",
        "A form that decides a verdict is marked **V**; two independent recordings are wanted for those, and the "
        "note says where there is only one. A parser that does not recognise a text says so (UnreadableOutput, a "
        "suite error naming the tool and quoting the text), never a pass, a failure or a deviation.",
        "",
        "Output language: none of the commands the suite runs here takes an option for its display language; the "
        "parsers read the English forms recorded, and a recorded form in another language (ping.exe in French and "
        "Chinese) is read as unreadable. The suite's Resolve-DnsName script prints property values (type, name, "
        "data), and Get-Volume's headers are its objects' property names.",
        "",
    ]
    for tool in tools:
        lines += [
            f"## {tool}",
            "",
            "| form | V | recordings | parser | reading | note | checks that say it is unrecorded |",
            "|---|---|---|---|---|---|---|",
        ]
        for form in (f for f in FORMS if f.tool == tool):
            cells = [
                f"[{r}](../tests/data/windows-outputs/{r.split('#', 1)[0]}) ([source]({source_address(r)}))"
                for r in form.recordings
            ]
            recs = "<br>".join(cells) if cells else "**none found**"
            said = "<br>".join(f"`{c.split('::', 1)[1]}`" for c in form.checks) if not form.recordings else ""
            row = [form.form, "V" if form.verdict else "", recs, f"`{form.parser}`", form.reading, form.note, said]
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(), end="")
