"""The nslookup reader takes an address only inside the answer (under its ``Name:`` line); an output of a structure
it does not know is unreadable, never an answer and never "no address" (issue 40, item 11).

Windows forms are the recordings of tests/data/windows-outputs/ (each with its public source). Where a test needs
an output of a structure the reader does not know (a header in another display language, whose real text no
citable recording holds), it takes a recording and replaces a header with the obvious stand-in ``<unread words>``:
not a claim of what Windows prints. The busybox forms were recorded on this project's build machine with Debian's
busybox-static 1.35.0 (the local cluster's Linux images' busybox) asking a DNS responder on 127.0.0.2 that
answered each form (and, for the last two, nothing, or no listener at all).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wincon.cluster.exec import ExecResult
from wincon.commandline.errors import UnreadableOutput
from wincon.network import flows
from wincon.windows import connectivity as conn

CORPUS = Path(__file__).resolve().parent.parent / "data" / "windows-outputs"
UNREAD = "<unread words>"


def command_output(name: str) -> str:
    """A recording without the terminal's prompt and typed command line (``PS C:\\> nslookup ...``)."""
    return re.sub(r"^(?:PS )?[A-Za-z]:\\[^>\n]*>.*\n", "", (CORPUS / name).read_text(), flags=re.MULTILINE)


def read(text: str, exit_code: int = 1, stderr: str = "") -> conn.Lookup:
    return conn.parse_lookup("nslookup", text, exit_code, stderr)


# ----------------------------------------------------------------------------- a server header it does not read


@pytest.mark.parametrize(
    ("recording", "server_address"),
    [
        ("nslookup-windows-timeout.txt", "10.0.0.10"),
        ("nslookup-windows-container-server-failed.txt", "192.168.0.100"),
        ("nslookup-windows-container-non-existent-domain.txt", "192.168.0.100"),
    ],
)
def test_a_server_header_in_unread_words_never_makes_the_servers_address_an_answer(recording, server_address):
    """Failed before (c48de23): with its ``Server:`` header in other words, the server block was not known as such
    and its ``Address:`` line was read as the answer, so a timeout, a server failure or an NXDOMAIN read as the
    name resolving to the DNS server's address (Lookup.ok). Now: unreadable, a suite error quoting the line."""
    text = command_output(recording)
    assert "Server:" in text and server_address in text
    reworded = text.replace("Server:", f"{UNREAD}:")
    with pytest.raises(UnreadableOutput, match=re.escape(f"{UNREAD}:")):
        read(reworded)
    # ...so the resolver is neither silent nor answered: the dial's fail-fast record is not touched either way.
    result = ExecResult(1, reworded, "")
    assert not flows.resolver_silent("nslookup", result) and not flows.resolver_answered("nslookup", result)
    # The recording itself reads as what it is: no address, never the server's.
    assert server_address not in read(text).addresses and not read(text).ok


def test_an_answer_header_in_unread_words_is_unreadable():
    """The recorded one-address answer with its ``Name:`` header replaced: the address line then stands under no
    answer line the reader knows. Before, it was read as an answer (Lookup.ok) whatever the header said."""
    text = command_output("nslookup-windows-container-single-address.txt")
    assert read(text, 0).addresses == ("172.19.145.123",)
    with pytest.raises(UnreadableOutput, match=re.escape(f"{UNREAD}:    bss")):
        read(text.replace("Name:", f"{UNREAD}:"), 0)


def test_an_address_line_outside_any_answer_is_unreadable():
    """The recorded two-address answer with its ``Name:`` line dropped: ``Addresses:`` under the
    ``Non-authoritative answer:`` header alone is a structure the reader does not know."""
    second = re.split(r"^C:\\>.*\n", (CORPUS / "nslookup-windows-servercore-ltsc2022.txt").read_text(), flags=re.M)[2]
    assert read(second, 0).addresses == ("2607:f8b0:4005:80e::2004", "216.58.195.68")
    without_name = "\n".join(line for line in second.split("\n") if not line.startswith("Name:"))
    with pytest.raises(UnreadableOutput, match="Addresses:"):
        read(without_name, 0)


def test_a_line_of_unknown_words_beside_an_answer_still_makes_it_unreadable():
    """An unknown line anywhere (here after the recorded answer) means a structure the reader does not know."""
    text = command_output("nslookup-windows-container-single-address.txt") + f"{UNREAD}\n"
    with pytest.raises(UnreadableOutput, match=re.escape(UNREAD)):
        read(text, 0)


# ----------------------------------------------------------------------------- busybox (the Linux controls)

BUSYBOX_SERVER = "Server:\t\t127.0.0.2\nAddress:\t127.0.0.2:53\n\n"
BUSYBOX_A_AAAA = (
    BUSYBOX_SERVER + "Non-authoritative answer:\nName:\tweb.ns.svc.cluster.local\nAddress: 10.0.12.7\n\n"
    "Non-authoritative answer:\nName:\tweb.ns.svc.cluster.local\nAddress: ::1\n\n"
)
BUSYBOX_CNAME = (
    BUSYBOX_SERVER + "Non-authoritative answer:\n"
    "web.ns.svc.cluster.local\tcanonical name = netserver.ns.svc.cluster.local\n"
    "Name:\tnetserver.ns.svc.cluster.local\nAddress: 10.0.12.7\n\n"
    "Non-authoritative answer:\nweb.ns.svc.cluster.local\tcanonical name = netserver.ns.svc.cluster.local\n\n"
)
BUSYBOX_NO_AAAA = (
    BUSYBOX_SERVER + "Non-authoritative answer:\nName:\tweb.ns.svc.cluster.local\nAddress: 10.0.12.7\n\n"
    "Non-authoritative answer:\n\n"
)


def busybox_failed(rcode: str) -> str:
    line = f"** server can't find web.ns.svc.cluster.local.: {rcode}\n\n"
    return BUSYBOX_SERVER + line + line


BUSYBOX_SILENT = ";; connection timed out; no servers could be reached\n\n"
BUSYBOX_NO_LISTENER_STDERR = "nslookup: write to '127.0.0.2': Connection refused\n"


def test_busybox_answers_are_read_inside_their_answer_only():
    both = read(BUSYBOX_A_AAAA, 0)
    assert both.ok and both.addresses == ("10.0.12.7", "::1") and "127.0.0.2" not in both.addresses
    cname = read(BUSYBOX_CNAME, 0)
    assert cname.addresses == ("10.0.12.7",) and cname.aliases == ("web.ns.svc.cluster.local",)
    assert cname.name == "netserver.ns.svc.cluster.local"
    assert read(BUSYBOX_NO_AAAA, 0).addresses == ("10.0.12.7",)


@pytest.mark.parametrize("rcode", ["NXDOMAIN", "SERVFAIL", "REFUSED"])
def test_busybox_failures_are_no_answer_and_only_nxdomain_is_not_found(rcode):
    lookup = read(busybox_failed(rcode))
    assert not lookup.ok and lookup.addresses == () and rcode in (lookup.error or "")
    assert lookup.not_found is (rcode == "NXDOMAIN")
    assert flows.resolver_answered("nslookup", ExecResult(1, busybox_failed(rcode), ""))


# busybox's failed read, in the form its nslookup.c send_queries prints it (bb_perror_msg("read")): constructed
# from the source, not recorded.
BUSYBOX_READ_REFUSED_STDERR = "nslookup: read: Connection refused\n"


@pytest.mark.parametrize("stderr", ["", BUSYBOX_NO_LISTENER_STDERR, BUSYBOX_READ_REFUSED_STDERR])
def test_busybox_without_a_server_is_silent(stderr):
    lookup = read(BUSYBOX_SILENT, 1, stderr)
    assert not lookup.ok and "no servers could be reached" in (lookup.error or "")
    assert flows.resolver_silent("nslookup", ExecResult(1, BUSYBOX_SILENT, stderr))
