"""The local cluster's RuntimeClass with Pod Overhead (wincon/localcluster/overhead.py): an add-on of extras.MODULES
that creates the RuntimeClass the stats checks' Linux controls name (wincon.checks.overhead), on every IP family."""

from __future__ import annotations

import sys
from types import SimpleNamespace as NS

from kubernetes import client

from wincon.checks import overhead as checks
from wincon.localcluster import extras, kuberouter, overhead


def test_its_runtime_class_is_the_one_the_checks_name_with_a_handler_the_real_nodes_serve():
    (rc,) = overhead.objects(NS(nodes=[NS(name="worker-0")]))
    assert rc["kind"] == "RuntimeClass" and rc["apiVersion"] == "node.k8s.io/v1"
    assert (rc["metadata"]["name"], rc["handler"]) == (checks.OVERHEAD_RUNTIME_CLASS, checks.OVERHEAD_HANDLER)
    assert rc["overhead"]["podFixed"]["memory"] == "512Mi"
    assert rc["scheduling"]["nodeSelector"] == {"kubernetes.io/os": "linux"}


def test_it_is_an_add_on_before_kube_router_on_every_family():
    assert overhead in extras.MODULES and extras.MODULES[-1] is kuberouter
    assert set(overhead.IP_FAMILIES) == {"ipv4", "dual", "ipv6"}


def test_it_is_available_once_the_runtime_class_reads_back_with_its_overhead(monkeypatch):
    answers = [NS(overhead=None), NS(overhead=NS(pod_fixed={"memory": "512Mi", "cpu": "10m"}))]
    monkeypatch.setattr(client, "NodeV1Api", lambda api: NS(read_runtime_class=lambda name, **_: answers.pop(0)))
    assert overhead.available(None) is None
    assert overhead.available(None) is True


def test_without_a_real_node_it_creates_nothing(capsys):
    assert overhead.start(NS(nodes=[]), sys.stdout) is False
    assert "not created" in capsys.readouterr().out
