"""The NetworkPolicy engine's kernel probe (wincon/localcluster/netpol.py) against this machine's real kernel.

No cluster is needed: the probe programs a scratch network namespace of its own. The same ruleset without the
queue statement (``counter``) must be taken there, so that a refusal of the queue rule is the kernel's answer
about the queue expression alone, not about nftables or the namespace; and neither the namespace nor the probe's
table may be left behind, in the host's ruleset least of all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable

import pytest

from wincon.localcluster import netpol

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    pytest.mark.skipif(shutil.which("nft") is None, reason="nft (Debian's nftables) is not installed"),
]


def _netns() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _host_tables() -> str:
    return subprocess.run(["nft", "list", "tables"], capture_output=True, text=True, check=True).stdout


def test_the_same_ruleset_without_the_queue_is_taken_in_the_probes_namespace() -> None:
    answer = netpol.ask_kernel("counter")
    assert answer.queue_rule_error is None, answer.describe()
    assert netpol.probe_netns() not in _netns()


def test_the_kernel_answers_the_queue_rule_and_the_probe_leaves_nothing_behind(
    record_property: Callable[[str, object], None],
) -> None:
    answer = netpol.ask_kernel()
    record_property("kernel_answer", answer.describe())
    print(answer.describe())
    if answer.queue_rule_error is not None:
        assert "Error:" in answer.queue_rule_error, answer.queue_rule_error  # nft's own refusal, not a crash
    assert netpol.probe_netns() not in _netns()
    assert netpol.TABLE not in _host_tables()  # the host's ruleset was never programmed
