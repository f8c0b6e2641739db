"""wincon/checks/node.py: the per-OS command lines, the kubelet answers' parsing, NodeAllocatable arithmetic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from wincon.checks import cpu, node

METRICS = """# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 1234.5 1700000000000
node_memory_working_set_bytes 2.5e+09 1700000000000
container_memory_working_set_bytes{container="main",namespace="ns",pod="p-0"} 1.2e+07 1700000000000
container_cpu_usage_seconds_total{container="main",namespace="ns",pod="p-0"} 0.25 1700000000000
scrape_error 0
not a sample line
"""


def test_parse_metrics_reads_names_labels_and_values_and_skips_the_rest():
    samples = node.parse_metrics(METRICS)
    assert [s.name for s in samples] == [
        "node_cpu_usage_seconds_total",
        "node_memory_working_set_bytes",
        "container_memory_working_set_bytes",
        "container_cpu_usage_seconds_total",
        "scrape_error",
    ]
    working_set = samples[2]
    assert working_set.labels == {"container": "main", "namespace": "ns", "pod": "p-0"}
    assert working_set.value == 1.2e7


def test_parse_metrics_unescapes_label_values():
    (sample,) = node.parse_metrics('m{path="C:\\\\data",q="say \\"hi\\""} 1\n')
    assert sample.labels == {"path": "C:\\data", "q": 'say "hi"'}


CONFIG = {
    "kubeReserved": {"cpu": "500m", "memory": "1Gi"},
    "systemReserved": {"memory": "2Gi"},
    "evictionHard": {"memory.available": "500Mi", "nodefs.available": "10%"},
}


def test_allocatable_memory_is_capacity_minus_both_reservations_and_the_hard_eviction_threshold():
    res = node.reservations(CONFIG, "memory", "16Gi")
    assert res.expected_allocatable == Decimal(16 * 2**30 - 2**30 - 2 * 2**30 - 500 * 2**20)
    assert "evictionHard" in res.describe()


def test_cpu_has_no_eviction_threshold_and_a_percentage_threshold_is_of_capacity():
    cpu = node.reservations(CONFIG, "cpu", "4")
    assert cpu.expected_allocatable == Decimal("3.5") and cpu.hard_eviction == 0
    memory = node.reservations({"evictionHard": {"memory.available": "5%"}}, "memory", "10Gi")
    assert memory.hard_eviction == Decimal(10 * 2**30) * 5 / 100


def test_nothing_reserved_names_a_kubelet_without_reservations_and_none_with_any():
    reason = "the kubelet of n reserves no CPU or memory (kubeReserved, systemReserved unset)"
    assert node.nothing_reserved({"evictionHard": {"memory.available": "100Mi"}}, "n") == reason
    assert node.nothing_reserved({"kubeReserved": {"cpu": "0"}, "systemReserved": {"memory": "0%"}}, "n") == reason
    assert node.nothing_reserved({"kubeReserved": {"cpu": "100m"}}, "n") is None
    assert node.nothing_reserved({"systemReserved": {"memory": "5%"}}, "n") is None


def test_kubelet_config_unwraps_configz_and_refuses_anything_else():
    assert node.kubelet_config({"kubeletconfig": {"a": 1}}) == {"a": 1}
    with pytest.raises(ValueError):
        node.kubelet_config({"componentconfig": {}})


def test_extended_resources_are_what_allocatable_has_beyond_the_standard_ones():
    allocatable = {
        "cpu": "4",
        "memory": "8Gi",
        "pods": "110",
        "ephemeral-storage": "100Gi",
        "hugepages-2Mi": "0",
        "microsoft.com/directx": "1",
        "example.com/none": "0",
    }
    assert node.extended_resources(allocatable) == {"microsoft.com/directx": "1"}


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 11)]
    assert (node.percentile(values, 0.5), node.percentile(values, 0.9), node.percentile(values, 0.99)) == (5, 9, 10)
    with pytest.raises(ValueError):
        node.percentile([], 0.5)


def test_pod_stats_problems_name_what_is_missing_and_nothing_for_live_stats():
    live = {
        "podRef": {"name": "p"},
        "cpu": {"usageCoreNanoSeconds": 10},
        "memory": {"workingSetBytes": 10},
        "containers": [{"name": "c", "logs": {"availableBytes": 5}}],
    }
    assert node.pod_stats_problems(live) == []
    dead = {"podRef": {"name": "p"}, "cpu": {"usageCoreNanoSeconds": 0}, "containers": [{"name": "c"}]}
    problems = node.pod_stats_problems(dead)
    assert any("cpu" in p for p in problems) and any("workingSetBytes" in p for p in problems)
    assert any("log stats" in p for p in problems)


def test_summary_pods_keeps_the_namespace_only():
    summary = {"pods": [{"podRef": {"namespace": "a", "name": "x"}}, {"podRef": {"namespace": "b", "name": "y"}}]}
    assert [p["podRef"]["name"] for p in node.summary_pods(summary, "a")] == ["x"]


def test_summary_problems_name_a_missing_or_extra_pod_and_a_pod_without_live_stats():
    def pod(name: str, cpu: int) -> dict:
        return {
            "podRef": {"namespace": "ns", "name": name},
            "cpu": {"usageCoreNanoSeconds": cpu},
            "memory": {"workingSetBytes": 10},
            "containers": [{"name": "c", "logs": {"availableBytes": 5}}],
        }

    summary = {"pods": [pod("a", 10), pod("b", 10), {"podRef": {"namespace": "other", "name": "z"}}]}
    assert node.summary_problems(summary, "ns", {"a", "b"}) == []
    assert node.summary_problems(summary, "ns", {"a", "b", "c"}) == ["lists pods ['a', 'b'], expected ['a', 'b', 'c']"]
    stale = {"pods": [pod("a", 10), pod("b", 0)]}  # a pod Ready a moment ago, not yet sampled
    assert node.summary_problems(stale, "ns", {"a", "b"}) == ["b: cpu.usageCoreNanoSeconds is 0"]


def test_resource_metrics_problems_need_node_series_and_each_pods_live_series():
    pod_series = """pod_memory_working_set_bytes{namespace="ns",pod="p-0"} 2.0e+07 1700000000000
pod_memory_working_set_bytes{namespace="other",pod="p-1"} 2.0e+07 1700000000000
"""
    samples = node.parse_metrics(METRICS + pod_series)
    assert node.resource_metrics_problems(samples, "ns", ["p-0"]) == []
    missing = node.resource_metrics_problems(samples, "ns", ["p-1"])  # p-1 has series in another namespace only
    assert missing == [
        "no container_cpu_usage_seconds_total for pod p-1",
        "no container_memory_working_set_bytes for pod p-1",
        "pod_memory_working_set_bytes of p-1: []",
    ]
    unsampled = node.parse_metrics(METRICS.replace("1.2e+07", "0") + pod_series.replace("2.0e+07", "0"))
    assert node.resource_metrics_problems(unsampled, "ns", ["p-0"]) == [
        "container_memory_working_set_bytes of p-0 is [0.0]",
        "pod_memory_working_set_bytes of p-0: [0.0]",
    ]
    no_node = [s for s in samples if not s.name.startswith("node_")]
    assert node.resource_metrics_problems(no_node, "ns", ["p-0"]) == [
        "no node_cpu_usage_seconds_total",
        "no node_memory_working_set_bytes",
    ]


@pytest.mark.parametrize(
    "build",
    [
        lambda os_name: node.write_file_command(os_name, "p", "t"),
        lambda os_name: node.read_file_command(os_name, "p"),
        node.user_name_command,
        node.group_membership_command,
        lambda os_name: node.path_exists_command(os_name, "p"),
        node.reboot_command,
        node.shutdown_command,
        node.idle_command,
        lambda os_name: node.api_query_command(os_name, "/version"),
        node.video_controller_command,
    ],
)
def test_every_command_has_a_windows_and_a_linux_form(build):
    windows, linux = build("windows"), build("linux")
    assert windows and linux and windows != linux
    assert all(isinstance(part, str) for part in windows + linux)
    with pytest.raises(ValueError):
        build("darwin")


def test_udp_command_names_the_target_and_quotes_it_for_powershell():
    script = node.udp_send_command("windows", "fd00::5", 8081)[-1]
    assert "'fd00::5', 8081" in script
    # busybox nc has no UDP: a Linux form would be a command that can never work (a check that cannot pass).
    with pytest.raises(ValueError, match="dial_command"):
        node.udp_send_command("linux", "10.0.0.1", 8081)


def test_api_query_reads_the_token_under_the_sandbox_mount_point_only_when_asked():
    assert "CONTAINER_SANDBOX_MOUNT_POINT" in node.api_query_command("windows", "/version", sandbox=True)[-1]
    assert "CONTAINER_SANDBOX_MOUNT_POINT" not in node.api_query_command("windows", "/version")[-1]


# --------------------------------------------------------------------------- wincon/checks/cpu.py


def cpu_entry(namespace: str, name: str, *samples: tuple[str, int]) -> dict:
    containers = [{"name": f"c{i}", "cpu": {"time": t, "usageCoreNanoSeconds": n}} for i, (t, n) in enumerate(samples)]
    return {"podRef": {"namespace": namespace, "name": name}, "containers": containers}


def test_cpu_seconds_sums_the_containers_at_their_latest_sample_in_its_namespace_only():
    summary = {
        "pods": [
            cpu_entry("other", "busy", ("2026-11-28T15:00:09Z", 9_000_000_000)),
            cpu_entry("ns", "busy", ("2026-11-28T15:00:00Z", 1_500_000_000), ("2026-11-28T15:00:02Z", 500_000_000)),
            {"podRef": {"namespace": "ns", "name": "new"}, "containers": [{"name": "c", "cpu": {}}]},
        ]
    }
    assert cpu.cpu_seconds(summary, "ns", "busy") == (datetime(2026, 11, 28, 15, 0, 2, tzinfo=UTC), 2.0)
    assert cpu.cpu_seconds(summary, "ns", "new") is None  # listed, never sampled
    assert cpu.cpu_seconds(summary, "ns", "idle") is None


def test_window_cores_reads_every_named_pod_over_the_same_readings_at_least_the_window_apart():
    at = datetime(2026, 11, 28, 15, 0, tzinfo=UTC)

    def reading(seconds: float, used: dict[str, float], lag: dict[str, float] | None = None) -> dict:
        lag = lag or {}
        return {n: (at + timedelta(seconds=seconds - lag.get(n, 0.0)), u) for n, u in used.items()}

    history = [reading(0, {"a": 0.0, "b": 0.0}), reading(10, {"a": 5.0, "b": 10.0})]
    assert cpu.window_cores(history, ("a", "b")) is None  # 10 s apart: not yet a window
    history.append(reading(20, {"a": 10.0, "b": 20.0}, lag={"b": 1.0}))  # b sampled 1 s earlier: its span is 19 s
    assert cpu.window_cores(history, ("a", "b")) is None
    history.append(reading(25, {"a": 12.5, "b": 25.0}))
    # From the latest reading at least 20 s before the last (the first: the one at 10 s is 15 s before), for both pods.
    assert cpu.window_cores(history, ("a", "b")) == {"a": 0.5, "b": 1.0}
    assert cpu.window_cores(history, ("a",)) == {"a": 0.5}


@pytest.mark.parametrize(
    ("limited", "twin", "judges"),
    [
        (0.55, 0.10, True),  # over the ceiling: the limit did not hold, whatever the twin read
        (0.50, 0.75, True),  # the load shown, the twin given 1.5 times the limit beside it
        (0.50, 0.74, False),  # the twin not shown to get more than the limit allows
        (0.24, 1.50, False),  # the limited load never ran
        (0.30, 0.30, False),  # both starved: nothing about the limit
    ],
)
def test_judges_the_cap_needs_the_limit_exceeded_or_the_twin_shown_over_it(limited, twin, judges):
    assert cpu.judges_the_cap((limited, twin)) is judges
