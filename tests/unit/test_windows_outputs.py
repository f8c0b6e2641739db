"""The Windows tools' parsers against real recorded outputs (tests/data/windows-outputs/, each with its source).

Every recorded file is read by at least one test here; a file without a ``.source`` naming a public address
fails. Synthetic strings appear only where a recorded layout is varied on purpose, and say so.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import suites
from wincon.cluster.exec import ExecResult
from wincon.windows import connectivity as conn

CORPUS = Path(__file__).resolve().parent.parent / "data" / "windows-outputs"


def recorded(name: str) -> str:
    return (CORPUS / name).read_text()


def command_output(name: str) -> str:
    """A recording without the terminal's prompt line and typed command (``PS C:\\> nslookup ...``) some start
    with: the terminal's, not the tool's output, which an exec never holds."""
    return re.sub(r"^(?:PS )?[A-Za-z]:\\[^>\n]*>.*\n", "", recorded(name), flags=re.MULTILINE)


def test_every_recorded_output_names_its_public_source():
    outputs = sorted(p for p in CORPUS.iterdir() if p.suffix == ".txt")
    assert len(outputs) >= 9
    for output in outputs:
        source = output.with_name(output.name + ".source")
        assert source.exists(), f"{output.name} has no {source.name}"
        assert "Source: https://" in source.read_text(), f"{source.name} names no public address"
        assert output.read_text().strip(), f"{output.name} is empty"


# ----------------------------------------------------------------------------- ipconfig /all


def test_ipconfig_adapter_search_list_is_read_from_its_continuation_line():
    config = conn.parse_dns_config("windows", recorded("ipconfig-all-containerd-pod-adapter-search-list.txt"))
    assert config.nameservers == ("10.128.0.1",)
    assert config.searches == ("google.com",)


def test_ipconfig_adapter_search_list_entries_of_its_own_are_kept():
    # Synthetic: the recorded layout (ipconfig-all-containerd-pod-adapter-search-list.txt) with an adapter
    # list that differs from the global one, as a pod's CNI sets it. Failed before: the per-adapter
    # "Connection-specific DNS Suffix Search List" and its continuation lines were ignored.
    text = recorded("ipconfig-all-containerd-pod-adapter-search-list.txt").replace(
        "   Connection-specific DNS Suffix Search List :\n                                       google.com",
        "   Connection-specific DNS Suffix Search List :\n"
        "                                       dns-x.svc.cluster.local\n"
        "                                       svc.cluster.local\n"
        "                                       cluster.local",
    )
    config = conn.parse_dns_config("windows", text)
    assert config.searches == ("google.com", "dns-x.svc.cluster.local", "svc.cluster.local", "cluster.local")


def test_ipconfig_adapter_search_list_on_the_same_line():
    # Synthetic: ipconfig also prints the first entry on the label's own line
    # ("Connection-specific DNS Suffix Search List : STATELESS.com", seen in public lab write-ups).
    text = "Ethernet adapter Ethernet0:\n\n   Connection-specific DNS Suffix Search List : a.example\n"
    text += "                                       b.example\n"
    assert conn.parse_dns_config("windows", text).searches == ("a.example", "b.example")


def test_ipconfig_global_search_list_over_three_lines():
    config = conn.parse_dns_config("windows", recorded("ipconfig-all-k8s-pod-global-search-list.txt"))
    assert config.searches == ("cluster.local", "default.svc.cluster.local", "svc.cluster.local")
    assert config.nameservers == ()  # the recording has no DNS Servers line: none is invented


def test_ipconfig_with_only_the_namespace_suffix_lacks_the_cluster_suffixes():
    config = conn.parse_dns_config("windows", recorded("ipconfig-k8s-pod-namespace-suffix-only.txt"))
    assert config.searches == ("default.svc.cluster.local",)
    assert "svc.cluster.local" not in config.searches and config.nameservers == ()


# ----------------------------------------------------------------------------- nslookup and Resolve-DnsName


def test_windows_nslookup_answer_with_addresses_over_two_lines():
    second = recorded("nslookup-windows-servercore-ltsc2022.txt").split("C:\\>")[2]
    lookup = conn.parse_nslookup(second.split("\n", 1)[1])
    assert lookup.ok and lookup.name == "www.google.com"
    assert lookup.addresses == ("2607:f8b0:4005:80e::2004", "216.58.195.68")


def test_windows_nslookup_server_failure_is_not_nxdomain():
    first = recorded("nslookup-windows-servercore-ltsc2022.txt").split("C:\\>")[1]
    failed = first.split("\n", 1)[1] + "*** UnKnown can't find www.google.com: Server failed\n"
    lookup = conn.parse_nslookup(failed)
    assert not lookup.ok and not lookup.not_found
    assert "Server failed" in (lookup.error or "")


def test_windows_nslookup_timeout_is_not_nxdomain():
    lookup = conn.parse_nslookup(command_output("nslookup-windows-timeout.txt"))
    assert not lookup.ok and not lookup.not_found
    assert "timed" in (lookup.error or "")


@pytest.mark.parametrize("name", ["nslookup-busybox-nxdomain.txt", "nslookup-busybox-nxdomain-no-answer.txt"])
def test_nslookup_nxdomain_is_not_found(name):
    lookup = conn.parse_nslookup(recorded(name))
    assert not lookup.ok and lookup.not_found


def test_resolve_dnsname_name_error_is_not_found():
    lookup = conn.parse_resolve_dnsname("", exit_code=1, stderr=recorded("resolve-dnsname-nxdomain.txt"))
    assert not lookup.ok and lookup.not_found
    assert lookup.error == "Resolve-DnsName : api-gateway : DNS name does not exist"


def test_resolve_dnsname_timeout_is_not_found_never():
    # Synthetic: the recorded error block with the timeout's error id instead of the name error's.
    text = recorded("resolve-dnsname-nxdomain.txt")
    text = text.replace("DNS name does not exist", "This operation returned because the timeout period expired")
    text = text.replace("DNS_ERROR_RCODE_NAME_ERROR", "ERROR_TIMEOUT")
    assert not conn.parse_resolve_dnsname("", exit_code=1, stderr=text).not_found


def test_go_resolver_not_found_and_not_a_timeout():
    # The format of Go's net.DNSError ("lookup <name>[ on <server>]: <err>", go/src/net/net.go DNSError.Error)
    # with errNoSuchHost ("no such host"), which Windows' WSAHOST_NOT_FOUND maps to (net/lookup_windows.go).
    assert conn.go_not_found("DNS: lookup kubernetes.default on 10.96.0.10:53: no such host")
    assert conn.go_not_found("lookup kubernetes.default: no such host")
    assert not conn.go_not_found(
        "lookup kubernetes.default on 10.96.0.10:53: read udp 10.0.0.5:3->10.96.0.10:53: i/o timeout"
    )
    assert not conn.go_not_found("lookup kubernetes.default on 10.96.0.10:53: server misbehaving")


# ----------------------------------------------------------------------------- Get-Volume


def test_get_volume_file_system_column():
    assert conn.parse_get_volume(recorded("get-volume-windows-server.txt")) == ["NTFS", "NTFS", "CSVFS", "CSVFS"]


def test_get_volume_without_its_table_is_an_error():
    with pytest.raises(ValueError, match="no Get-Volume table"):
        conn.parse_get_volume("Get-Volume : The term 'Get-Volume' is not recognized as the name of a cmdlet")


def test_get_volume_command_quotes_the_path():
    command = conn.get_volume_command("C:\\var\\lib\\kubelet\\pods\\x\\password")
    assert (
        command[0] == conn.WINDOWS_POWERSHELL
        and command[-1] == "Get-Volume -FilePath 'C:\\var\\lib\\kubelet\\pods\\x\\password'"
    )
    with pytest.raises(ValueError):
        conn.get_volume_command("C:\\it's")


# ----------------------------------------------------------------------------- agnhost dns-suffix / dns-server-list


def test_agnhost_dns_commands_are_the_same_on_both_oses():
    suffix, servers = conn.agnhost_dns_commands()
    assert suffix == ["/agnhost", "dns-suffix"] and servers == ["/agnhost", "dns-server-list"]


def test_agnhost_dns_lists_parse_into_a_config():
    # agnhost prints strings.Join(list, ",") and a newline (test/images/agnhost/dns/common.go).
    config = conn.parse_agnhost_dns("ns.svc.cluster.local,svc.cluster.local,cluster.local\n", "10.96.0.10\n")
    assert config.searches == ("ns.svc.cluster.local", "svc.cluster.local", "cluster.local")
    assert config.nameservers == ("10.96.0.10",)


def test_agnhost_dns_server_list_that_is_not_an_address_is_an_error():
    with pytest.raises(ValueError, match="not an IP address"):
        conn.parse_agnhost_dns("cluster.local\n", "panic: Could not find DNS search list!\n")


def test_absolute_names_are_asked_as_they_are_on_both_oses():
    assert conn.absolute("kubernetes.default.svc.cluster.local") == "kubernetes.default.svc.cluster.local."
    assert conn.absolute("external.wincon.test.") == "external.wincon.test."
    assert conn.absolute("10.96.0.1") == "10.96.0.1"
    assert conn.nslookup_command(conn.absolute("a.b")) == ["nslookup", "a.b."]


def test_mounttest_content_reads_go_quoted_windows_paths():
    # mounttest prints `content of file %q: %v`; Go's %q doubles a Windows path's backslashes. Failed before in
    # the storage suites' own helper, which looked for the path unescaped (never found on Windows).
    windows = 'content of file "C:\\\\data\\\\sub\\\\hello.txt": mount-tester new file\n'
    assert conn.mounttest_content(windows, "C:\\data\\sub\\hello.txt") == "mount-tester new file"
    linux = 'mode of file "/data/x": -rw-r--r--\ncontent of file "/data/x": level=debug\n'
    assert conn.mounttest_content(linux, "/data/x") == "level=debug"
    assert conn.mounttest_content('error reading file content for "/x": no such file\n', "/x") is None


def test_the_volume_suites_read_mounttest_output_of_a_windows_path():
    # Failed before: their content() looked for 'content of file "C:\data\x"' and found nothing on Windows.
    from types import SimpleNamespace

    result = SimpleNamespace(ok=True, stdout='content of file "C:\\\\creds\\\\username": wincon-user\n')
    for name in ("test_volume_types", "test_volume_limitations"):
        module = suites.load(f"suites/storage/{name}.py")
        assert module.content(result, "C:\\creds\\username") == "wincon-user", name


def test_windows_nslookup_answer_with_one_address():
    lookup = conn.parse_nslookup(command_output("nslookup-windows-container-single-address.txt"))
    assert lookup.ok and lookup.name == "bss" and lookup.addresses == ("172.19.145.123",)
    assert "172.19.144.1" not in lookup.addresses  # the server block's address is not an answer


def test_agnhost_connect_answers():
    # connect.go: exit 0 on success; "DNS: <err>" when resolution failed; TIMEOUT/REFUSED/OTHER after it resolved.
    assert conn.resolve_command("kubernetes", 443) == ["/agnhost", "connect", "kubernetes:443", "--timeout=5s"]
    assert conn.parse_resolve(0, "", "") == conn.Resolution(True, True, False, None)
    missing = conn.parse_resolve(1, "", "DNS: lookup kubernetes.default: no such host\n")
    assert not missing.resolved and missing.not_found
    timeout = conn.parse_resolve(
        1, "", "DNS: lookup x on 10.96.0.10:53: read udp 1.2.3.4:5->10.96.0.10:53: i/o timeout"
    )
    assert not timeout.resolved and not timeout.not_found
    refused = conn.parse_resolve(1, "", "REFUSED\n")
    assert refused.resolved and not refused.connected
    with pytest.raises(ValueError, match="neither success"):
        conn.parse_resolve(126, "", "OCI runtime exec failed")


# ----------------------------------------------------------------------------- ping.exe
# Exit codes: the recordings that show one (vmware #300/#322, nscp #140) are used as recorded; the others pass 0,
# the exit code under which the parser alone must decide (Windows ping exits 0 on "Destination host unreachable").

PING_SUCCESS = {  # file: (requests sent, echo replies shown)
    "ping-windows-servercore-ltsc2019-container-success.txt": (4, 4),
    "ping-windows-servercore-ltsc2019-container-gateway-success.txt": (4, 4),
    "ping-windows-server-2022-container-success-elided.txt": (100, 4),  # its author elided 96 reply lines
    "ping-windows-n1-w-success.txt": (1, 1),
    "ping-windows-success-reply.txt": (4, 4),
}
PING_FAILURE_WITH_STATISTICS = {  # file: (exit code as recorded, requests sent)
    "ping-windows-server-general-failure.txt": (1, 3),
    "ping-windows-server-destination-host-unreachable.txt": (0, 3),
    "ping-windows-11-general-failure-and-unreachable.txt": (0, 3),
    "ping-windows-destination-host-unreachable-counted-received.txt": (0, 4),
    "ping-windows-n1-w-timeout.txt": (1, 1),
    "ping-windows-n1-w-unreachable-cut.txt": (0, 1),
}
PING_FAILURE_CUT = [  # recordings cut before their statistics, or without any (a name that did not resolve)
    "ping-windows-server-2019-pod-unreachable-timeout-cut.txt",
    "ping-windows-server-2016-nanoserver-timeout-cut.txt",
    "ping-windows-servercore-ltsc2019-container-timeout-cut.txt",
    "ping-windows-container-could-not-find-host.txt",
]
# ping.exe in another language: unreadable (tests/unit/test_windows_output_findings.py), never a failure.
PING_OTHER_LANGUAGE = ["ping-windows-french-success.txt", "ping-windows-chinese-success.txt"]


def test_every_ping_recording_is_tested():
    ping_files = {p.name for p in CORPUS.glob("ping-*.txt")}
    tested = set(PING_SUCCESS) | set(PING_FAILURE_WITH_STATISTICS) | set(PING_FAILURE_CUT) | set(PING_OTHER_LANGUAGE)
    assert ping_files == tested


@pytest.mark.parametrize("name", sorted(PING_SUCCESS))
def test_windows_ping_echo_replies_are_success(name):
    sent, replies = PING_SUCCESS[name]
    assert conn.parse_ping("windows", recorded(name)) == conn.PingResult(sent, replies)
    assert conn.ping_succeeded("windows", 0, recorded(name))
    assert not conn.ping_succeeded("windows", 1, recorded(name))  # never success on a failed exit code


@pytest.mark.parametrize("name", sorted(PING_FAILURE_WITH_STATISTICS))
def test_windows_ping_without_an_echo_reply_is_failure(name):
    exit_code, sent = PING_FAILURE_WITH_STATISTICS[name]
    assert conn.parse_ping("windows", recorded(name)) == conn.PingResult(sent, 0)
    assert not conn.ping_succeeded("windows", exit_code, recorded(name))
    assert not conn.ping_succeeded("windows", 0, recorded(name))


def test_windows_ping_counts_unreachable_replies_as_received_but_the_parser_does_not():
    # The deviation the parser guards against, as recorded on a Windows Server VM: exit 0, "Received = 3",
    # and no echo reply at all.
    text = recorded("ping-windows-server-destination-host-unreachable.txt")
    assert "Received = 3, Lost = 0 (0% loss)" in text
    assert conn.parse_ping("windows", text).received == 0


@pytest.mark.parametrize("name", PING_FAILURE_CUT)
def test_windows_ping_cut_recordings_are_failure(name):
    assert not conn.ping_succeeded("windows", 0, recorded(name))
    with pytest.raises(ValueError, match="no ping statistics"):
        conn.parse_ping("windows", recorded(name))


def test_windows_ping_reply_from_another_address_than_the_target_is_not_success():
    # Synthetic: the recorded -n 1 success with its echo reply coming from another address than the one pinged
    # (what a service VIP answered by its backend without reverse NAT would print). Failed before: any
    # "Reply from <anything>: bytes=... time... TTL=..." line counted as the target's echo reply.
    text = recorded("ping-windows-n1-w-success.txt").replace("Reply from 10.25.4.1:", "Reply from 10.25.4.9:")
    assert conn.parse_ping("windows", text) == conn.PingResult(1, 0)
    assert not conn.ping_succeeded("windows", 0, text)


def test_windows_ping_of_a_name_accepts_replies_from_its_address():
    # Synthetic: ping.exe prints "Pinging <name> [<address>] with ..." for a name, then replies from the address.
    text = recorded("ping-windows-n1-w-success.txt").replace(
        "Pinging 10.25.4.1 with", "Pinging gw.example [10.25.4.1] with"
    )
    assert conn.ping_succeeded("windows", 0, text)


# ----------------------------------------------------------------------------- cmd's type


def test_cmds_type_messages_the_suite_accepts_are_the_recorded_ones():
    """The api check's '/' path deviation and the NFS check's missing export file are accepted only on cmd's own
    words, as recorded: the suites' literals are those lines, and each check's predicate accepts that output."""
    conventions = suites.load("suites/api/test_windows_conventions.py")
    nfs = suites.load("suites/storage/test_volume_limitations.py")
    syntax = recorded("cmd-type-unquoted-forward-slash-path.txt")
    not_found = recorded("cmd-type-quoted-forward-slash-path-not-found.txt")
    assert syntax.strip() == conventions.SYNTAX_INCORRECT
    assert not_found.strip() == nfs.FILE_NOT_FOUND
    assert nfs.FILE_NOT_FOUND not in syntax and conventions.SYNTAX_INCORRECT not in not_found
    # The recording shows no stream: given on stderr here, and the predicate reads both.
    assert conventions.slash_path_refused(ExecResult(1, "", syntax))
    assert not conventions.slash_path_refused(ExecResult(1, "", not_found))
