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
        "suites", "--wincon-profile", "profile.json", "--limitations", "limitations.yaml", "-rA"
    )


@pytest.mark.parametrize(
    ("capability", "profile", "reason"),
    [
        ("load-balancer", {"cloud": "kwok"}, "*no LoadBalancer provider*"),
        ("network-policy", {"cni": "flannel"}, "*CNI (flannel) enforces no NetworkPolicy*"),
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
        ("network-policy", {"cni": "calico"}),
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
