"""Every flow's command line for both operating systems, and the parsers of what those commands print.

The outputs below are what the tools print on real nodes: Windows' nslookup and ping, BIND's nslookup
(the agnhost Windows image puts it first on PATH), busybox and iputils on Linux, ipconfig /all.
"""

from __future__ import annotations

import json

import pytest

from wincon.commandline.errors import UnreadableOutput
from wincon.windows import connectivity as c

# ----------------------------------------------------------------------------- netexec and the dial check


def test_netexec_server_args_match_upstream_netserver():
    assert c.netexec_args(8083, 8081) == ["netexec", "--http-port=8083", "--udp-port=8081"]
    assert c.netexec_args(9080) == ["netexec", "--http-port=9080"]


def test_netexec_container_is_ready_only_when_healthz_answers():
    spec = c.netexec_container("netexec", "registry/agnhost:2.52")
    assert spec["args"] == ["netexec", "--http-port=8083", "--udp-port=8081"]
    assert spec["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": 8083}
    assert {(p["containerPort"], p["protocol"]) for p in spec["ports"]} == {(8083, "TCP"), (8081, "UDP")}
    client = c.netexec_container("netexec", "img", http_port=9080, udp_port=None)
    assert [p["containerPort"] for p in client["ports"]] == [9080]


@pytest.mark.parametrize("protocol", ["http", "udp"])
def test_dial_url_carries_the_upstream_query(protocol):
    url = c.dial_url("10.244.1.5", "10.244.2.7", 8083 if protocol == "http" else 8081, protocol)
    port = 8083 if protocol == "http" else 8081
    assert url == (
        f"http://10.244.1.5:9080/dial?request=hostname&protocol={protocol}&host=10.244.2.7&port={port}&tries=1"
    )


def test_dial_url_brackets_ipv6_clients_and_accepts_names():
    url = c.dial_url("fd00::5", "netserver.ns.svc.cluster.local", 80)
    assert url.startswith("http://[fd00::5]:9080/dial?")
    assert "host=netserver.ns.svc.cluster.local" in url
    assert "host=fd00::7" in c.dial_url("fd00::5", "fd00::7", 80)


def test_dial_rejects_what_is_neither_an_address_nor_a_name():
    with pytest.raises(ValueError, match="neither an IP address nor a DNS name"):
        c.dial_url("10.0.0.1", "a b; rm -rf /", 80)
    with pytest.raises(ValueError, match="protocol"):
        c.dial_url("10.0.0.1", "10.0.0.2", 80, protocol="sctp")


@pytest.mark.parametrize(("os_name", "binary"), [("windows", "curl.exe"), ("linux", "curl")])
@pytest.mark.parametrize("protocol", ["http", "udp"])
def test_dial_command_per_os(os_name, binary, protocol):
    cmd = c.dial_command(os_name, "10.244.1.5", "10.244.2.7", 8081, protocol)
    assert cmd[0] == binary
    assert cmd[1] == "-q"  # curl ignores -q anywhere but first
    assert "-g" in cmd and "-s" in cmd
    assert cmd[cmd.index("--max-time") + 1] == "30"
    assert cmd[-1] == c.dial_url("10.244.1.5", "10.244.2.7", 8081, protocol)


def test_unknown_os_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown operating system 'darwin'"):
        c.dial_command("darwin", "10.0.0.1", "10.0.0.2", 80)


def test_parse_dial_reads_responses_and_errors():
    result = c.parse_dial('{"responses":["netserver-0"],"errors":null}')
    assert result.responses == ("netserver-0",) and result.errors == ()
    failed = c.parse_dial('{"errors":["reading from udp connection failed. err:\'i/o timeout\'"]}')
    assert failed.responses == () and "i/o timeout" in failed.errors[0]
    assert c.parse_dial('{"responses":["  netserver-1\\n", ""]}').responses == ("netserver-1",)


@pytest.mark.parametrize("text", ["", "curl: (7) Failed to connect", "[1,2]", '{"responses": "x"}'])
def test_parse_dial_rejects_what_is_not_a_dial_answer(text):
    with pytest.raises(ValueError, match="netexec /dial"):
        c.parse_dial(text)


def test_dial_tries_follow_upstream_bound():
    assert c.dial_tries(1) == 31
    assert c.dial_tries(3) == 39


def _answers(*outputs):
    it = iter(outputs)
    return lambda: next(it)


def test_collect_dial_stops_once_every_endpoint_answered():
    sleeps = []
    outcome = c.collect_dial(
        _answers(
            json.dumps({"responses": ["netserver-0"]}),
            "curl: (7) Failed to connect",
            json.dumps({"responses": ["NETSERVER-1"]}),
            json.dumps({"responses": ["never-asked"]}),
        ),
        {"netserver-0", "netserver-1"},
        max_tries=10,
        sleep=sleeps.append,
    )
    assert outcome.reached_all
    assert outcome.tries == 3
    assert sleeps == [2.0, 2.0]
    assert "Failed to connect" in outcome.errors[0]


def test_collect_dial_gives_up_after_max_tries_and_says_what_it_saw():
    outcome = c.collect_dial(
        lambda: json.dumps({"responses": [], "errors": ["dial tcp 10.0.0.9:80: i/o timeout"]}),
        {"netserver-0"},
        max_tries=4,
        sleep=lambda s: None,
    )
    assert not outcome.reached_all
    assert outcome.tries == 4
    text = outcome.describe()
    assert "after 4 tries" in text and "answered by [none]" in text and "i/o timeout" in text


def test_collect_dial_fails_fast_when_nothing_ever_answers_but_keeps_trying_while_some_do():
    silent = c.collect_dial(
        lambda: json.dumps({"responses": [], "errors": ["dial tcp 10.0.0.9:80: i/o timeout"]}),
        {"netserver-0"},
        max_tries=34,
        sleep=lambda s: None,
    )
    assert not silent.reached_all and silent.tries == c.DIAL_SILENT_TRIES
    partial = c.collect_dial(
        lambda: json.dumps({"responses": ["netserver-0"]}),
        {"netserver-0", "netserver-1"},
        max_tries=34,
        sleep=lambda s: None,
    )
    # one endpoint answers, no witness can show the other: judged from the first answer, the other gets
    # judged_tries (20 for 2 endpoints, fewer than upstream's 34), then the check fails
    assert not partial.reached_all and partial.tries == 1 + c.judged_tries(2) == 21 < 34


def test_collect_dial_unexpected_extra_endpoint_is_not_success():
    outcome = c.collect_dial(
        _answers(json.dumps({"responses": ["netserver-0", "stranger"]})),
        {"netserver-0"},
        max_tries=1,
        sleep=lambda s: None,
    )
    assert not outcome.reached_all
    assert outcome.responses == {"netserver-0", "stranger"}


def test_collect_dial_min_tries_keeps_checking_after_success():
    outcome = c.collect_dial(
        lambda: json.dumps({"responses": ["netserver-0"]}),
        {"netserver-0"},
        max_tries=5,
        min_tries=3,
        sleep=lambda s: None,
    )
    assert outcome.reached_all and outcome.tries == 3


def test_collect_dial_rejects_nonsense_bounds():
    with pytest.raises(ValueError, match="bad dial bounds"):
        c.collect_dial(lambda: "", {"x"}, max_tries=0)


# ----------------------------------------------------------------------------- curl: HTTP and TCP


def test_http_get_windows_is_upstreams_curl_exe_line():
    cmd = c.http_get_command("windows", "http://10.244.1.5:8083/hostname")
    assert cmd[0] == "curl.exe"
    assert cmd[cmd.index("--connect-timeout") + 1] == "10"
    assert "--fail" in cmd and cmd[-1] == "http://10.244.1.5:8083/hostname"


def test_http_get_linux_uses_curl_with_the_same_flags():
    win = c.http_get_command("windows", "http://x:80/")
    lin = c.http_get_command("linux", "http://x:80/")
    assert lin[0] == "curl" and lin[1:] == win[1:]


@pytest.mark.parametrize(
    ("os_name", "binary", "null"), [("windows", "curl.exe", "NUL"), ("linux", "curl", "/dev/null")]
)
def test_tcp_reach_accepts_any_http_answer(os_name, binary, null):
    cmd = c.tcp_reach_command(os_name, "https://8.8.8.8")
    assert cmd[0] == binary
    assert "--fail" not in cmd and "-k" in cmd
    assert cmd[cmd.index("-o") + 1] == null
    assert cmd[cmd.index("-w") + 1] == "%{http_code}"
    assert cmd[-1] == "https://8.8.8.8"


def test_curl_failures_are_named():
    assert c.curl_failure(6) == "could not resolve host"
    assert c.curl_failure(7) == "could not connect"
    assert c.curl_failure(28) == "timed out"
    assert c.curl_failure(99) == "curl exit code 99"


# ----------------------------------------------------------------------------- ICMP

WIN_PING_OK = """\r
Pinging 10.244.2.7 with 32 bytes of data:\r
Reply from 10.244.2.7: bytes=32 time<1ms TTL=128\r
\r
Ping statistics for 10.244.2.7:\r
    Packets: Sent = 1, Received = 1, Lost = 0 (0% loss),\r
Approximate round trip times in milli-seconds:\r
    Minimum = 0ms, Maximum = 0ms, Average = 0ms\r
"""

WIN_PING_TIMEOUT = """
Pinging 8.8.8.8 with 32 bytes of data:
Request timed out.

Ping statistics for 8.8.8.8:
    Packets: Sent = 1, Received = 0, Lost = 1 (100% loss),
"""

# Windows ping exits 0 and counts this as received: a router's "unreachable" is not an echo reply.
WIN_PING_UNREACHABLE = """
Pinging 8.8.8.8 with 32 bytes of data:
Reply from 10.244.1.1: Destination host unreachable.

Ping statistics for 8.8.8.8:
    Packets: Sent = 1, Received = 1, Lost = 0 (0% loss),
"""

LINUX_PING_OK = """PING 10.244.2.7 (10.244.2.7) 56(84) bytes of data.
64 bytes from 10.244.2.7: icmp_seq=1 ttl=63 time=0.512 ms

--- 10.244.2.7 ping statistics ---
1 packets transmitted, 1 received, 0% packet loss, time 0ms
"""

BUSYBOX_PING_LOST = """PING 8.8.8.8 (8.8.8.8): 56 data bytes

--- 8.8.8.8 ping statistics ---
1 packets transmitted, 0 packets received, 100% packet loss
"""


def test_ping_command_per_os():
    assert c.ping_command("windows", "8.8.8.8") == ["ping", "-n", "1", "-w", "5000", "8.8.8.8"]
    assert c.ping_command("linux", "8.8.8.8") == ["ping", "-c", "1", "-W", "5", "8.8.8.8"]
    with pytest.raises(ValueError):
        c.ping_command("windows", "8.8.8.8 -t")


def test_windows_ping_reply_is_success():
    assert c.parse_ping("windows", WIN_PING_OK) == c.PingResult(1, 1)
    assert c.ping_succeeded("windows", 0, WIN_PING_OK)


def test_windows_ping_timeout_is_failure():
    assert c.parse_ping("windows", WIN_PING_TIMEOUT) == c.PingResult(1, 0)
    assert not c.ping_succeeded("windows", 1, WIN_PING_TIMEOUT)


def test_windows_ping_unreachable_with_exit_zero_is_failure():
    assert c.parse_ping("windows", WIN_PING_UNREACHABLE).received == 0
    assert not c.ping_succeeded("windows", 0, WIN_PING_UNREACHABLE)


def test_linux_ping_outputs():
    assert c.ping_succeeded("linux", 0, LINUX_PING_OK)
    assert c.parse_ping("linux", BUSYBOX_PING_LOST) == c.PingResult(1, 0)
    assert not c.ping_succeeded("linux", 1, BUSYBOX_PING_LOST)


def test_ping_without_statistics_is_not_success():
    assert not c.ping_succeeded("linux", 0, "ping: permission denied (are you root?)")
    with pytest.raises(ValueError, match="no ping statistics"):
        c.parse_ping("windows", "Ping request could not find host foo.")


# ----------------------------------------------------------------------------- DNS look-ups


def test_resolve_dnsname_is_windows_powershell_over_dns_only():
    cmd = c.dns_lookup_command("windows", "netserver", "resolve-dnsname")
    assert cmd[:5] == ["powershell.exe", "-NoLogo", "-NoProfile", "-NonInteractive", "-Command"]
    assert "Resolve-DnsName -Name 'netserver' -DnsOnly" in cmd[5]
    assert "$ErrorActionPreference = 'Stop'" in cmd[5]
    with pytest.raises(ValueError, match="Windows PowerShell"):
        c.dns_lookup_command("linux", "netserver", "resolve-dnsname")
    with pytest.raises(ValueError):
        c.resolve_dnsname_command("x'; Remove-Item C:\\ -Recurse; '")


@pytest.mark.parametrize("os_name", ["windows", "linux"])
def test_nslookup_command_is_the_same_on_both(os_name):
    assert c.dns_lookup_command(os_name, "netserver.ns.svc") == ["nslookup", "netserver.ns.svc"]
    assert c.nslookup_command("kubernetes", "10.0.0.10") == ["nslookup", "kubernetes", "10.0.0.10"]


def test_default_dns_tool():
    assert c.default_dns_tool("windows", powershell=True) == "resolve-dnsname"
    assert c.default_dns_tool("windows", powershell=False) == "nslookup"
    assert c.default_dns_tool("linux", powershell=True) == "getaddrinfo"
    assert c.default_dns_tool("linux", powershell=False) == "getaddrinfo"


def test_getaddrinfo_lookup_is_linux_only_and_reads_pings_resolution():
    assert c.dns_lookup_command("linux", "kubernetes.default", "getaddrinfo") == [
        "ping", "-c", "1", "-W", "1", "kubernetes.default",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="Linux"):
        c.dns_lookup_command("windows", "kubernetes", "getaddrinfo")
    with pytest.raises(ValueError):
        c.getaddrinfo_command("x; rm -rf /")
    # Resolved, and no echo reply (a cluster IP need not answer ICMP): still the resolver's answer.
    unanswered = "PING kubernetes.default (10.0.0.1): 56 data bytes\n\n--- kubernetes.default ping statistics ---\n"
    lookup = c.parse_lookup(
        "getaddrinfo", unanswered + "1 packets transmitted, 0 packets received, 100% packet loss\n", 1
    )
    assert lookup.ok and lookup.addresses == ("10.0.0.1",) and lookup.name == "kubernetes.default"
    lookup = c.parse_lookup("getaddrinfo", "", 1, "ping: bad address 'nosuch'\n")
    assert not lookup.ok and lookup.error == "ping: bad address 'nosuch'"
    assert c.parse_lookup("getaddrinfo", "", 1, "").error == "the resolver printed nothing"


WIN_NSLOOKUP_OK = """Server:  kube-dns.kube-system.svc.cluster.local\r
Address:  10.0.0.10\r
\r
Name:    kubernetes.default.svc.cluster.local\r
Address:  10.0.0.1\r
\r
"""

WIN_NSLOOKUP_MANY = """Server:  UnKnown
Address:  10.0.0.10

Name:    netserver-headless.ns.svc.cluster.local
Addresses:  10.244.1.5
          10.244.2.7

"""

WIN_NSLOOKUP_NX = """Server:  UnKnown
Address:  10.0.0.10

*** UnKnown can't find kubernetes.default: Non-existent domain
"""

WIN_NSLOOKUP_TIMEOUT = """DNS request timed out.
    timeout was 2 seconds.
Server:  UnKnown
Address:  10.0.0.10

DNS request timed out.
    timeout was 2 seconds.
*** Request to UnKnown timed-out
"""

WIN_NSLOOKUP_ALIAS = """Server:  UnKnown
Address:  10.0.0.10

Name:    netserver.ns.svc.cluster.local
Address:  10.0.12.7
Aliases:  alias.ns.svc.cluster.local

"""

BIND_NSLOOKUP_OK = """Server:\t\t10.0.0.10
Address:\t10.0.0.10#53

Name:\tkubernetes.default.svc.cluster.local
Address: 10.0.0.1

"""

BIND_NSLOOKUP_NX = """Server:\t\t10.0.0.10
Address:\t10.0.0.10#53

** server can't find kubernetes.default: NXDOMAIN

"""

BIND_NSLOOKUP_CNAME = """Server:\t\t10.0.0.10
Address:\t10.0.0.10#53

alias.ns.svc.cluster.local\tcanonical name = netserver.ns.svc.cluster.local.
Name:\tnetserver.ns.svc.cluster.local
Address: 10.0.12.7

"""

BUSYBOX_NSLOOKUP_OK = """Server:\t\t10.0.0.10
Address:\t10.0.0.10:53

Non-authoritative answer:
Name:\tkubernetes.io
Address: 147.75.40.148
Name:\tkubernetes.io
Address: 2604:1380:4601:e00::1

"""


def test_nslookup_windows_single_address():
    lookup = c.parse_nslookup(WIN_NSLOOKUP_OK)
    assert lookup.ok and lookup.addresses == ("10.0.0.1",)
    assert lookup.name == "kubernetes.default.svc.cluster.local"


def test_nslookup_windows_server_address_is_not_an_answer():
    assert "10.0.0.10" not in c.parse_nslookup(WIN_NSLOOKUP_OK).addresses


def test_nslookup_windows_several_addresses():
    assert c.parse_nslookup(WIN_NSLOOKUP_MANY).addresses == ("10.244.1.5", "10.244.2.7")


@pytest.mark.parametrize("text", [WIN_NSLOOKUP_NX, BIND_NSLOOKUP_NX, WIN_NSLOOKUP_TIMEOUT])
def test_nslookup_failures(text):
    lookup = c.parse_nslookup(text)
    assert not lookup.ok and lookup.addresses == ()
    assert lookup.error and ("find" in lookup.error or "timed-out" in lookup.error)


def test_nslookup_aliases_windows_and_bind():
    win = c.parse_nslookup(WIN_NSLOOKUP_ALIAS)
    bind = c.parse_nslookup(BIND_NSLOOKUP_CNAME)
    for lookup in (win, bind):
        assert lookup.addresses == ("10.0.12.7",)
        assert lookup.aliases == ("alias.ns.svc.cluster.local",)
        assert lookup.name == "netserver.ns.svc.cluster.local"


def test_nslookup_bind_and_busybox():
    assert c.parse_nslookup(BIND_NSLOOKUP_OK).addresses == ("10.0.0.1",)
    busybox = c.parse_nslookup(BUSYBOX_NSLOOKUP_OK)
    assert busybox.addresses == ("147.75.40.148", "2604:1380:4601:e00::1")


def test_nslookup_output_that_is_not_an_answer_is_unreadable_never_no_address():
    # Failed before: an empty output, a shell's error, read as "no address in the answer" (a resolver's answer).
    for text in ("", 'exec: "nslookup": executable file not found in $PATH', "Segmentation fault"):
        with pytest.raises(UnreadableOutput, match="nslookup"):
            c.parse_nslookup(text)
    lookup = c.parse_nslookup("Server:\t\t10.0.0.10\nAddress:\t10.0.0.10#53\n\nName:\tx.example\n")
    assert not lookup.ok and lookup.error == "no address in the answer"  # nslookup's answer, without an address


def test_resolve_dnsname_output_without_its_lines_is_unreadable():
    with pytest.raises(UnreadableOutput, match="Resolve-DnsName"):
        c.parse_lookup("resolve-dnsname", "WARNING: something else\r\n", exit_code=0)
    assert c.parse_lookup("resolve-dnsname", "", exit_code=0).error == "no address in the answer"


def test_resolve_dnsname_output():
    out = (
        "CNAME\talias.ns.svc.cluster.local\tnetserver.ns.svc.cluster.local\r\n"
        "A\tnetserver.ns.svc.cluster.local\t10.0.12.7\r\n"
    )
    lookup = c.parse_lookup("resolve-dnsname", out)
    assert lookup.ok and lookup.addresses == ("10.0.12.7",)
    assert lookup.aliases == ("alias.ns.svc.cluster.local",)
    assert lookup.name == "netserver.ns.svc.cluster.local"


def test_resolve_dnsname_error_keeps_the_message():
    err = "Resolve-DnsName : netserver.ns : DNS name does not exist\r\nAt line:1 char:35\r\n"
    lookup = c.parse_lookup("resolve-dnsname", "", exit_code=1, stderr=err)
    assert not lookup.ok and "DNS name does not exist" in lookup.error


def test_parse_lookup_nslookup_reads_stderr_too():
    lookup = c.parse_lookup("nslookup", "Server:\t\t10.0.0.10\nAddress:\t10.0.0.10#53\n\n", 1, BIND_NSLOOKUP_NX)
    assert not lookup.ok and "NXDOMAIN" in lookup.error


def test_service_name_forms():
    names = c.service_names("netserver", "ns1")
    assert names == {
        "single-label": "netserver",
        "with-namespace": "netserver.ns1",
        "with-namespace-svc": "netserver.ns1.svc",
        "fqdn": "netserver.ns1.svc.cluster.local",
    }
    assert c.service_fqdn("a", "b", "example.org") == "a.b.svc.example.org"


# ----------------------------------------------------------------------------- DNS configuration of a pod

IPCONFIG_ALL = """\r
Windows IP Configuration\r
\r
   Host Name . . . . . . . . . . . . : dns-none\r
   Primary Dns Suffix  . . . . . . . :\r
   Node Type . . . . . . . . . . . . : Hybrid\r
   IP Routing Enabled. . . . . . . . : No\r
   WINS Proxy Enabled. . . . . . . . : No\r
   DNS Suffix Search List. . . . . . : ns1.svc.cluster.local\r
                                       wincon.example\r
\r
Ethernet adapter vEthernet (cid-1234):\r
\r
   Connection-specific DNS Suffix  . : ns1.svc.cluster.local\r
   Description . . . . . . . . . . . : Hyper-V Virtual Ethernet Container Adapter\r
   Physical Address. . . . . . . . . : 00-15-5D-AB-CD-EF\r
   DHCP Enabled. . . . . . . . . . . : No\r
   Autoconfiguration Enabled . . . . : Yes\r
   Link-local IPv6 Address . . . . . : fe80::1c2b:3d4e:5f6a:7b8c%17(Preferred)\r
   IPv4 Address. . . . . . . . . . . : 10.244.1.9(Preferred)\r
   Subnet Mask . . . . . . . . . . . : 255.255.255.0\r
   Default Gateway . . . . . . . . . : 10.244.1.1\r
   DNS Servers . . . . . . . . . . . : 10.0.0.10\r
                                       1.1.1.1\r
   NetBIOS over Tcpip. . . . . . . . : Disabled\r
"""

RESOLV_CONF = """# generated by kubelet
search ns1.svc.cluster.local svc.cluster.local cluster.local
nameserver 10.0.0.10
options ndots:5
"""


def test_dns_config_command_per_os():
    assert c.dns_config_command("windows") == ["ipconfig", "/all"]
    assert c.dns_config_command("linux") == ["cat", "/etc/resolv.conf"]


def test_ipconfig_all_nameservers_and_search_list():
    config = c.parse_dns_config("windows", IPCONFIG_ALL)
    assert config.nameservers == ("10.0.0.10", "1.1.1.1")
    assert config.searches == ("ns1.svc.cluster.local", "wincon.example")


def test_ipconfig_all_addresses_are_not_nameservers():
    config = c.parse_dns_config("windows", IPCONFIG_ALL)
    assert "10.244.1.9" not in config.nameservers and "10.244.1.1" not in config.nameservers


def test_resolv_conf():
    config = c.parse_dns_config("linux", RESOLV_CONF)
    assert config.nameservers == ("10.0.0.10",)
    assert config.searches == ("ns1.svc.cluster.local", "svc.cluster.local", "cluster.local")


# ----------------------------------------------------------------------------- Service environment variables


def test_env_command_is_the_same_on_both_oses():
    # Upstream's conformance test runs `sh -c env` in Windows pods too (test/e2e/common/node/expansion.go:62).
    assert c.env_command("windows") == c.env_command("linux") == ["sh", "-c", "env"]


def test_parse_env_windows_and_linux():
    win = c.parse_env("ComSpec=C:\\Windows\\system32\\cmd.exe\r\nNETSERVER_SERVICE_HOST=10.0.12.7\r\n")
    assert win["NETSERVER_SERVICE_HOST"] == "10.0.12.7" and win["COMSPEC"].endswith("cmd.exe")
    lin = c.parse_env("PATH=/usr/bin\nA=b=c\n")
    assert lin["A"] == "b=c"


def test_service_env_expectation():
    assert c.service_env_expectation("net-server", "10.0.12.7", 80) == {
        "NET_SERVER_SERVICE_HOST": "10.0.12.7",
        "NET_SERVER_SERVICE_PORT": "80",
    }


# ----------------------------------------------------------------------------- bounded attempts and the cluster domain


def test_attempts_stop_at_the_first_success():
    results = iter([False, False, True, True])
    sleeps = []
    assert c.attempts(lambda: next(results), tries=5, sleep=sleeps.append) == (True, 3)
    assert sleeps == [2.0, 2.0]


def test_attempts_are_bounded():
    calls = []
    ok, tries = c.attempts(lambda: calls.append(1) or False, tries=3, delay=0.5, sleep=lambda s: None)
    assert (ok, tries, len(calls)) == (False, 3, 3)
    with pytest.raises(ValueError):
        c.attempts(lambda: True, tries=0)


COREFILE = """.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    forward . /etc/resolv.conf
}
"""


def test_cluster_domain_from_corefile():
    assert c.cluster_domain_from_corefile(COREFILE) == "cluster.local"
    assert c.cluster_domain_from_corefile("kubernetes corp.example. in-addr.arpa {") == "corp.example"
    assert c.cluster_domain_from_corefile(".:53 { forward . 8.8.8.8 }") is None
    assert c.cluster_domain_from_corefile("") is None


def test_mounttest_answered_is_its_content_line_or_its_own_error_line_for_that_file():
    """mt.go:150, :154, :168: what mounttest prints of a file; anything else (a crash, another file) is not."""
    win = "C:\\app\\settings.txt"
    assert c.mounttest_answered('content of file "C:\\\\app\\\\settings.txt": level=debug\n', win)
    assert c.mounttest_answered(
        'error reading file content for "/app/x": open /app/x: no such file or directory\n', "/app/x"
    )
    assert c.mounttest_answered('error writing new file "/sub/f": open /sub/f: read-only file system\n', "/sub/f")
    assert not c.mounttest_answered('content of file "/other": x\n', "/app/x")
    assert not c.mounttest_answered("OCI runtime exec failed: exec failed: unable to start container process", "/x")
    assert not c.mounttest_answered("", "/x")
