"""`@pytest.mark.requires(capability)`: decided at collection from the profile, so the plan and the run agree."""

import json
import textwrap

import pytest

from tests.unit.test_plugin import LIMITS

BODY = """
import pytest

@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0201")
@pytest.mark.requires("{capability}")
def test_needs_it():
    assert True
"""


def run(pytester, capability, **profile):
    pytester.makefile(".yaml", limitations=LIMITS)
    pytester.mkdir("suites")
    (pytester.path / "suites" / "test_s.py").write_text(textwrap.dedent(BODY.format(capability=capability)))
    nodes = [{"name": "w", "os": "windows", "arch": "amd64", "ready": True, "simulated": False, "windows_build": 20348}]
    data = {"server_version": "v1.34.4", "cni": "flannel", "cloud": "azure", "nodes": nodes, **profile}
    (pytester.path / "profile.json").write_text(json.dumps(data))
    return pytester.runpytest_subprocess(
        "suites", "--profile-file", "profile.json", "--limitations", "limitations.yaml", "-rA"
    )


@pytest.mark.parametrize(
    ("capability", "profile", "reason"),
    [
        ("load-balancer", {"cloud": "kwok"}, "*no LoadBalancer provider*"),
        (
            "network-policy",
            {"network_policy": "none", "network_policy_source": "node label x"},
            "*no NetworkPolicy engine on the Windows nodes (node label x*",
        ),
        ("dual-stack", {"ip_families": ["IPv4"]}, "*not IPv4/IPv6 dual-stack*families IPv4*"),
        ("ipv6-single-stack", {"ip_families": ["IPv4", "IPv6"]}, "*not IPv6 single-stack*"),
    ],
)
def test_a_missing_capability_skips_at_collection_with_its_reason(pytester, capability, profile, reason):
    result = run(pytester, capability, **profile)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([reason])


@pytest.mark.parametrize(
    ("capability", "profile"),
    [
        ("load-balancer", {"cloud": "azure"}),  # unknown: the check's own probe decides at run time
        ("network-policy", {"network_policy": "calico"}),
        # The pod network says nothing of the policy engine: flannel with an unknown engine runs (it used to
        # skip at collection, although the module said the item runs where the profile cannot tell).
        ("network-policy", {"cni": "flannel"}),
        ("network-policy", {"cni": "azure-cni", "network_policy": "unknown"}),
        ("dual-stack", {"ip_families": ["IPv4", "IPv6"]}),
        ("dual-stack", {"ip_families": []}),  # unknown
    ],
)
def test_a_present_or_unknown_capability_runs(pytester, capability, profile):
    run(pytester, capability, **profile).assert_outcomes(passed=1)


def test_an_unknown_capability_is_a_usage_error(pytester):
    result = run(pytester, "teleportation")
    result.stderr.fnmatch_lines(["*requires unknown capability 'teleportation'*"])
    assert result.ret == 4


def test_network_policy_override_alone(pytester):
    """--network-policy sets the policy engine alone: the pod network (and the limitations it decides) stays."""
    result = run(pytester, "network-policy", network_policy="calico")
    result.assert_outcomes(passed=1)
    none = pytester.runpytest_subprocess(
        "suites",
        "--profile-file",
        "profile.json",
        "--limitations",
        "limitations.yaml",
        "-rA",
        "--network-policy",
        "none",
    )
    none.assert_outcomes(skipped=1)
    none.stdout.fnmatch_lines(["*pod network: flannel ?detected?; network policy: none ?--network-policy?*"])


def test_cni_override_leaves_the_policy_engine_alone(pytester):
    """--cni calico used to make NetworkPolicy enforced (and --cni flannel not): it names the pod network only."""
    result = run(pytester, "network-policy", network_policy="none", network_policy_source="node label x")
    result.assert_outcomes(skipped=1)
    calico = pytester.runpytest_subprocess(
        "suites", "--profile-file", "profile.json", "--limitations", "limitations.yaml", "-rA", "--cni", "calico"
    )
    calico.assert_outcomes(skipped=1)
    calico.stdout.fnmatch_lines(["*pod network: calico ?--cni?; network policy: none ?node label x?*"])
