"""Fault injection (issue 21, dual-stack): IPv6 between pods refused, the dual-stack controls fail.

Against a local cluster started with ``--ip-family dual``, the two dual-stack Linux controls
(``suites/networking/test_ipv6.py``: pod to pod over IPv6, pod to an IPv6 ClusterIP) first run as they are,
where they must pass; then every real node's namespace rejects forwarded IPv6 TCP from the pod range
(ip6tables ``REJECT`` in FORWARD: bridged traffic between pods of a node crosses it too, with
bridge-nf-call-ip6tables on) while IPv4 is left alone, and the same controls must fail, never pass, xfail or
skip. The rules are removed afterwards.

``WINCON_FAULT_CLUSTER=<name>`` runs it on a cluster of that name (brought down at the end) instead of a fresh
``faults-ipv6-<hex>``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.conftest import assert_broken, node_namespaces, own_cluster, run_checks
from wincon.localcluster import ipfamily, netns
from wincon.localcluster.topology import Topology

pytestmark = pytest.mark.xdist_group("faults-ipv6")  # its own dual-stack cluster: not the shared one's group

DUAL_STACK = ("suites/networking/test_ipv6.py", "dual_stack_cluster")
REJECT = ["FORWARD", "-s", ipfamily.POD_RANGE6, "-p", "tcp", "-m", "comment", "--comment", "wincon: fault ipv6"]
REJECT += ["-j", "REJECT", "--reject-with", "tcp-reset"]


@pytest.fixture(scope="module")
def dual_cluster(localcluster_binaries: Path) -> Iterator[tuple[str, Path]]:
    with own_cluster("faults-ipv6", Topology(ip_family="dual")) as found:
        yield found


def test_ipv6_refused_between_pods_fails_the_dual_stack_controls(dual_cluster, tmp_path):
    name, kubeconfig = dual_cluster
    before = run_checks(kubeconfig, DUAL_STACK, tmp_path)
    assert len(before.verdicts) == 2, before
    namespaces = node_namespaces(name)
    for ns in namespaces:
        netns.run(["ip6tables", "-w", "-I", *REJECT], netns=ns)
    try:
        after = run_checks(kubeconfig, DUAL_STACK, tmp_path)
    finally:
        for ns in namespaces:
            netns.run(["ip6tables", "-w", "-D", *REJECT], netns=ns, check=False)
    assert_broken("IPv6 refused between pods", before, after)
