"""The real Linux nodes' kubelet configuration (wincon/localcluster/dataplane.py)."""

from __future__ import annotations

from decimal import Decimal

import yaml

from wincon.checks.node import nothing_reserved, reservations
from wincon.localcluster import dataplane


def _config(index: int, tmp_path) -> dict:
    plan = dataplane.Plan("wincon-h6", "172.30.9.0/24", "172.30.9.1", "172.30.9.254")
    node = dataplane.RealNode(f"worker-{index}", index, f"172.30.9.{2 + index}", f"10.244.{4 + index}.0/24")
    return yaml.safe_load(dataplane._kubelet_config(plan, node, tmp_path, "/wincon-wincon-h6-" + node.name))


def test_worker_0_reserves_cpu_and_memory_and_the_other_workers_do_not(tmp_path):
    first, second = _config(0, tmp_path), _config(1, tmp_path)
    assert first["kubeReserved"] == {"cpu": "100m", "memory": "128Mi"}
    assert first["systemReserved"] == {"cpu": "100m", "memory": "128Mi"}
    assert nothing_reserved(first, "worker-0") is None  # the node suite's reserved-CPU check runs against it
    assert reservations(first, "cpu", "2").expected_allocatable == Decimal("1.8")
    assert "kubeReserved" not in second and "systemReserved" not in second
    assert nothing_reserved(second, "worker-1") == (
        "the kubelet of worker-1 reserves no CPU or memory (kubeReserved, systemReserved unset)"
    )


def test_a_process_dead_of_used_up_inotify_instances_gets_the_fix_not_a_plain_retry():
    """Seen here with four clusters up: a kubelet exits with `inotify_init: too many open files`."""
    tail = "    E1124 05:20:11 kubelet: failed to create cAdvisor: inotify_init: too many open files"
    hint = dataplane.exit_hint(tail)
    assert hint is not None and "fs.inotify.max_user_instances" in hint and "cluster down --cluster-name" in hint
    limit = int(dataplane.INOTIFY_LIMIT.read_text())  # what `up` left it at: the fix names a higher figure
    assert f"fs.inotify.max_user_instances = {limit};" in hint
    assert f"`sysctl -w fs.inotify.max_user_instances={2 * limit}`" in hint
    assert dataplane.exit_hint("    panic: listen tcp 172.30.1.2:10250: bind: address already in use") is None
