"""A pod reaches a NodePort Service on another node's InternalIP in the Service's IP family: the target upstream's
Windows NodePort check dials from v1.36.3 (test/e2e/windows/service.go:52-88, "should be able to create a functioning
NodePort service for Windows": a random Ready schedulable node of any OS, its InternalIP of svc.Spec.IPFamilies[0],
asserted non-empty, :64-67; before, at v1.35.4, e2enode.PickIP's first ExternalIP). The suite's other NodePort
checks dial the client's own node (test_services.py) or reach a Windows node from another one; here the Windows pod
is the client and the node is another one, chosen as upstream chooses it but by name (wincon.checks.node
nodeport_target), so every run dials the same node. Its Linux control: the same dial from a Linux pod.
"""

from __future__ import annotations

import pytest

from wincon.checks.node import internal_ips_of_family, nodeport_target
from wincon.cluster.client import call
from wincon.network.pods import pod_names
from wincon.windows import connectivity as conn
from wincon.windows import forms

pytestmark = [pytest.mark.networking]


@pytest.mark.test_id("f71a8295-9a65-437c-b372-391e838b29ec")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Services")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_pod_reaches_nodeport_on_another_nodes_internal_ip(kube, wincon, checks, client, server_nodeport, servers):
    """Windows "services can utilize ... NodePort" (002_8a7e76f95009f44f.txt, Services): a pod dials http://<InternalIP>:<nodePort> of another Ready, untainted node, the address of the Service's first IP family, and every endpoint answers (upstream v1.36.3 test/e2e/windows/service.go:64-67 and :86)."""
    node = nodeport_target(wincon.profile.nodes, exclude=client.node)
    if node is None:
        pytest.skip(f"no Ready, untainted node with a data plane other than the client's node {client.node}")
    family = (server_nodeport.raw.spec.ip_families or ["IPv4"])[0]
    addresses = call(kube.core.read_node, node.name).status.addresses or []
    ips = internal_ips_of_family(addresses, family)
    assert ips, f"node {node.name} has no InternalIP of the Service's family {family}: {addresses}"
    port = server_nodeport.node_ports["http"]
    outcome = checks.dial(client, ips[0], port, "http", pod_names(servers))
    assert outcome.reached_all, f"{conn.host_port(ips[0], port)} on node {node.name}: {outcome.describe()}"
