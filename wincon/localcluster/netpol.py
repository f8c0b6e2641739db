"""Whether this machine's kernel can carry the NetworkPolicy engine issue 21 names, asked in a scratch namespace.

sigs.k8s.io/kube-network-policies (v0.7.0 is served by the Go module proxy; v0.1.0, its only release with an
iptables path, is refused) decides each new connection in userspace: its nftables rules hand packets to an
nfnetlink queue with the nftables ``queue`` expression (pkg/networkpolicy/controller.go:813 and :929 of v0.7.0,
``expr.Queue``). The kernel must therefore have both nfnetlink_queue and the nftables queue expression
(CONFIG_NFT_QUEUE). Where the expression is missing the engine still starts: it ignores the error of its rule
sync (controller.go:397, ``_ = c.syncNFTablesRules(ctx)``) and then enforces nothing, so the policy controls
would fail for a reason that is the machine's, not the cluster's. This module asks the kernel first.

The question is asked the way the engine would program it, in a network namespace of the probe's own (never
the host's ruleset, never a node's), which is deleted before the answer is returned:
``python3 -m wincon.localcluster.netpol`` prints the answer (exit 0: the kernel takes the rule; 1: it refuses).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ENGINE = "kube-network-policies"
MODULE = "sigs.k8s.io/kube-network-policies"
VERSION = "v0.7.0"
QUEUE_ID = 100  # the engine's --nfqueue-id default
TABLE = "wincon-netpol-probe"
NETNS_DIR = Path("/run/netns")
PROC_QUEUE = "/proc/net/netfilter/nfnetlink_queue"


def probe_netns() -> str:
    """The scratch namespace's name: of this process alone, so probes of several sessions never meet."""
    return f"wincon-netpol-probe-{os.getpid()}"


QUEUE_STATEMENT = f"queue num {QUEUE_ID} bypass"


def ruleset(statement: str = QUEUE_STATEMENT) -> str:
    """The probe's ruleset: one forward chain sending new connections to the engine's queue, as the engine does
    (``bypass``: even where it is taken, no packet would wait for a listener; the namespace has no traffic).
    Another ``statement`` (``counter``) makes the same ruleset without the queue: the probe's own control."""
    return (
        f"table inet {TABLE} {{\n"
        f"  chain forward {{\n"
        f"    type filter hook forward priority -5; policy accept;\n"
        f"    ct state new {statement}\n"
        f"  }}\n"
        f"}}\n"
    )


@dataclass(frozen=True)
class KernelAnswer:
    """What the kernel said: whether it has nfnetlink_queue, and whether it took an nftables queue rule."""

    nfnetlink_queue: bool
    queue_rule_error: str | None  # None: the rule was taken; else nft's own words

    @property
    def can_run_engine(self) -> bool:
        return self.nfnetlink_queue and self.queue_rule_error is None

    def describe(self) -> str:
        if self.can_run_engine:
            return f"this kernel takes an nftables queue rule and has nfnetlink_queue: {ENGINE} can enforce here"
        missing = []
        if not self.nfnetlink_queue:
            missing.append(f"no nfnetlink_queue ({PROC_QUEUE} is absent)")
        if self.queue_rule_error is not None:
            missing.append(f"an nftables queue rule is refused: {self.queue_rule_error}")
        return f"{ENGINE} {VERSION} cannot enforce on this kernel: " + "; ".join(missing)


def first_error(stderr: str) -> str:
    """nft's first ``Error:`` line (it follows with the rule and a caret line), or its first line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return next((line for line in lines if "Error:" in line), lines[0] if lines else "no output")


def ask_kernel(statement: str = QUEUE_STATEMENT, timeout: float = 20.0) -> KernelAnswer:
    """Add the probe's ruleset in a scratch namespace and read the kernel's answer; the namespace is deleted."""
    ns = probe_netns()
    subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True, text=True, timeout=timeout)
    try:
        has_queue = (
            subprocess.run(
                ["ip", "netns", "exec", ns, "test", "-e", PROC_QUEUE], capture_output=True, timeout=timeout
            ).returncode
            == 0
        )
        result = subprocess.run(
            ["ip", "netns", "exec", ns, "nft", "-f", "-"],
            input=ruleset(statement),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        error = None if result.returncode == 0 else first_error(result.stderr or result.stdout)
    finally:
        subprocess.run(["ip", "netns", "delete", ns], capture_output=True, timeout=timeout)
    return KernelAnswer(has_queue, error)


def main() -> int:
    answer = ask_kernel()
    print(answer.describe())
    return 0 if answer.can_run_engine else 1


if __name__ == "__main__":
    sys.exit(main())
