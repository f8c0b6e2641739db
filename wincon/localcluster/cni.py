"""The objects a CNI (and kube-proxy and cluster DNS) really deploy, so CNI detection meets what it meets
on a real cluster: same namespaces, names, labels, ConfigMap keys and DaemonSet shapes as the upstream
manifests (flannel's kube-flannel.yml with sig-windows-tools' Windows overlay, the tigera operator's
calico-system, AKS's azure-cns, antrea.yml + antrea-windows.yml, kubeadm's kube-proxy and CoreDNS).

The pods of these DaemonSets land on the nodes of the matching OS (``kubernetes.io/os`` selector) and kwok
marks them Running; nothing inside them runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from wincon.documents import releases

Obj = dict[str, Any]

FLANNEL_NETWORK = "10.244.0.0/16"
# Flannel on hybrid Linux/Windows clusters: the Windows overlay (win-overlay) only speaks VXLAN with
# VNI 4096 on UDP 4789, so kube-flannel-cfg is set to those values for every node.
FLANNEL_WINDOWS_VNI = 4096
FLANNEL_WINDOWS_PORT = 4789
DNS_CLUSTER_IP = "10.0.0.10"
WINDOWS_TOLERATIONS = [{"operator": "Exists"}]
SIMULATED_ONLY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "type", "operator": "In", "values": ["kwok"]}]}]
        }
    }
}
REAL_ONLY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "type", "operator": "DoesNotExist"}]}]
        }
    }
}
LINUX_TOLERATIONS = [{"operator": "Exists"}]


def _namespace(name: str, labels: dict[str, str] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}


def _service_account(name: str, namespace: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}}


def _config_map(name: str, namespace: str, data: dict[str, str], labels: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "data": data,
    }


def _container(
    name: str,
    image: str,
    command: list[str] | None = None,
    args: list[str] | None = None,
    env: dict[str, str] | None = None,
    privileged: bool = False,
) -> Obj:
    container: Obj = {"name": name, "image": image}
    if command:
        container["command"] = command
    if args:
        container["args"] = args
    container["env"] = [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
    ] + [{"name": k, "value": v} for k, v in (env or {}).items()]
    if privileged:
        container["securityContext"] = {"privileged": True}
    container["resources"] = {"requests": {"cpu": "100m", "memory": "50Mi"}}
    return container


def _daemonset(
    name: str,
    namespace: str,
    os_name: str,
    labels: dict[str, str],
    containers: list[Obj],
    service_account: str,
    host_network: bool = True,
    volumes: list[Obj] | None = None,
) -> Obj:
    pod_spec: Obj = {
        "nodeSelector": {"kubernetes.io/os": os_name},
        # Made for detection only: their pods must never land on a real node (they would pull images).
        "affinity": SIMULATED_ONLY,
        "serviceAccountName": service_account,
        "hostNetwork": host_network,
        "priorityClassName": "system-node-critical",
        "tolerations": WINDOWS_TOLERATIONS if os_name == "windows" else LINUX_TOLERATIONS,
        "containers": containers,
    }
    if os_name == "windows":
        # HostProcess containers, as sig-windows-tools and the CNI vendors deploy their Windows agents.
        pod_spec["securityContext"] = {"windowsOptions": {"hostProcess": True, "runAsUserName": "NT AUTHORITY\\system"}}
    if volumes:
        pod_spec["volumes"] = volumes
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "selector": {"matchLabels": dict(labels)},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec},
        },
    }


def _config_volume(name: str, config_map: str) -> Obj:
    return {"name": name, "configMap": {"name": config_map}}


def flannel(backend: str) -> list[Obj]:
    """flannel (namespace kube-flannel): kube-flannel.yml plus sig-windows-tools' flannel for Windows."""
    ns = "kube-flannel"
    labels = {"tier": "node", "app": "flannel", "k8s-app": "flannel"}
    backend_conf: dict[str, Any] = {"Type": backend}
    if backend == "vxlan":
        backend_conf.update({"VNI": FLANNEL_WINDOWS_VNI, "Port": FLANNEL_WINDOWS_PORT})
    net_conf = {"Network": FLANNEL_NETWORK, "EnableNFTables": False, "Backend": backend_conf}
    cni_conf = {
        "name": "cbr0",
        "cniVersion": "0.3.1",
        "plugins": [
            {"type": "flannel", "delegate": {"hairpinMode": True, "isDefaultGateway": True}},
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    windows_delegate = "win-overlay" if backend == "vxlan" else "win-bridge"
    windows_cni_conf = {
        "name": "flannel.4096" if backend == "vxlan" else "cbr0",
        "cniVersion": "0.3.0",
        "type": "flannel",
        "capabilities": {"portMappings": True, "dns": True},
        "delegate": {"type": windows_delegate, "policies": []},
    }
    windows_net = "vxlan0" if backend == "vxlan" else "cbr0"
    return [
        _namespace(ns, {"k8s-app": "flannel", "pod-security.kubernetes.io/enforce": "privileged"}),
        _service_account("flannel", ns),
        _config_map(
            "kube-flannel-cfg",
            ns,
            {"cni-conf.json": json.dumps(cni_conf, indent=2), "net-conf.json": json.dumps(net_conf, indent=2)},
            labels,
        ),
        _config_map(
            "kube-flannel-windows-cfg",
            ns,
            {
                "cni-conf-containerd.json": json.dumps(windows_cni_conf, indent=2),
                "run.ps1": f"$env:KUBE_NETWORK = '{windows_net}'\nflanneld.exe --kube-subnet-mgr --iface $env:POD_IP\n",
            },
            labels,
        ),
        _daemonset(
            "kube-flannel-ds",
            ns,
            "linux",
            labels,
            [
                _container(
                    "kube-flannel",
                    "ghcr.io/flannel-io/flannel:v0.26.7",
                    ["/opt/bin/flanneld"],
                    ["--ip-masq", "--kube-subnet-mgr"],
                    privileged=True,
                )
            ],
            "flannel",
            volumes=[_config_volume("flannel-cfg", "kube-flannel-cfg")],
        ),
        _daemonset(
            "kube-flannel-ds-windows-amd64",
            ns,
            "windows",
            {**labels, "app": "flannel-windows"},
            [
                _container(
                    "kube-flannel",
                    "sigwindowstools/flannel:v0.26.7-hostprocess",
                    ["powershell"],
                    ["-file", "$env:CONTAINER_SANDBOX_MOUNT_POINT/mounts/kube-flannel-windows/run.ps1"],
                    env={"KUBE_NETWORK": windows_net},
                )
            ],
            "flannel",
            volumes=[
                _config_volume("flannel-cfg", "kube-flannel-cfg"),
                _config_volume("flannel-windows-cfg", "kube-flannel-windows-cfg"),
            ],
        ),
    ]


def calico() -> list[Obj]:
    """Calico as the tigera operator installs it (namespace calico-system), VXLAN for Windows."""
    ns = "calico-system"
    return [
        _namespace(ns, {"name": ns, "pod-security.kubernetes.io/enforce": "privileged"}),
        _service_account("calico-node", ns),
        _service_account("calico-cni-plugin", ns),
        _daemonset(
            "calico-node",
            ns,
            "linux",
            {"k8s-app": "calico-node"},
            [
                _container(
                    "calico-node",
                    "quay.io/calico/node:v3.30.2",
                    env={"CALICO_NETWORKING_BACKEND": "vxlan", "CALICO_IPV4POOL_VXLAN": "Always"},
                    privileged=True,
                )
            ],
            "calico-node",
        ),
        _daemonset(
            "calico-node-windows",
            ns,
            "windows",
            {"k8s-app": "calico-node-windows"},
            [
                _container(
                    "felix",
                    "quay.io/calico/node-windows:v3.30.2",
                    ["$env:CONTAINER_SANDBOX_MOUNT_POINT/CalicoWindows/calico-node.exe"],
                    ["-felix"],
                    env={"CALICO_NETWORKING_BACKEND": "vxlan", "KUBE_NETWORK": "Calico.*"},
                ),
                _container(
                    "node",
                    "quay.io/calico/node-windows:v3.30.2",
                    ["$env:CONTAINER_SANDBOX_MOUNT_POINT/CalicoWindows/calico-node.exe"],
                    ["-startup"],
                    env={"CALICO_NETWORKING_BACKEND": "vxlan"},
                ),
            ],
            "calico-node",
        ),
    ]


def azure_cni() -> list[Obj]:
    """AKS's Azure CNI objects in kube-system: azure-cns on both OSes and the ip-masq agent."""
    ns = "kube-system"
    masq_conf = "nonMasqueradeCIDRs:\n  - 10.224.0.0/12\nmasqLinkLocal: true\n"
    cns_labels = {"k8s-app": "azure-cns", "kubernetes.azure.com/managedby": "aks"}
    return [
        _service_account("azure-cns", ns),
        _service_account("azure-ip-masq-agent", ns),
        _config_map(
            "azure-ip-masq-agent-config",
            ns,
            {"ip-masq-agent": masq_conf},
            {"component": "ip-masq-agent", "kubernetes.io/cluster-service": "true"},
        ),
        _daemonset(
            "azure-cns",
            ns,
            "linux",
            cns_labels,
            [
                _container(
                    "cns-container",
                    "mcr.microsoft.com/containernetworking/azure-cns:v1.6.27",
                    args=["-c", "tcp://$(CNSIpAddress):$(CNSPort)", "-t", "$(CNSLogTarget)"],
                )
            ],
            "azure-cns",
        ),
        _daemonset(
            "azure-cns-win",
            ns,
            "windows",
            {"k8s-app": "azure-cns-win", "kubernetes.azure.com/managedby": "aks"},
            [
                _container(
                    "cns-container",
                    "mcr.microsoft.com/containernetworking/azure-cns:v1.6.27",
                    ["powershell.exe", "-command"],
                    ["azure-cns.exe -c tcp://$env:CNSIpAddress:$env:CNSPort -t $env:CNSLogTarget"],
                )
            ],
            "azure-cns",
        ),
        _daemonset(
            "azure-ip-masq-agent",
            ns,
            "linux",
            {"k8s-app": "azure-ip-masq-agent", "kubernetes.azure.com/managedby": "aks"},
            [_container("azure-ip-masq-agent", "mcr.microsoft.com/aks/ip-masq-agent-v2:v0.1.15", privileged=True)],
            "azure-ip-masq-agent",
            volumes=[_config_volume("azure-ip-masq-agent-config-volume", "azure-ip-masq-agent-config")],
        ),
    ]


def antrea() -> list[Obj]:
    """Antrea (antrea.yml and antrea-windows.yml) in kube-system, encap mode."""
    ns = "kube-system"
    agent_conf = "trafficEncapMode: encap\ntunnelType: geneve\n"
    windows_conf = "trafficEncapMode: encap\ntunnelType: vxlan\n"
    return [
        _service_account("antrea-agent", ns),
        _config_map("antrea-config", ns, {"antrea-agent.conf": agent_conf}, {"app": "antrea"}),
        _config_map("antrea-windows-config", ns, {"antrea-agent.conf": windows_conf}, {"app": "antrea"}),
        _daemonset(
            "antrea-agent",
            ns,
            "linux",
            {"app": "antrea", "component": "antrea-agent"},
            [_container("antrea-agent", "antrea/antrea-agent-ubuntu:v2.3.0", ["antrea-agent"], privileged=True)],
            "antrea-agent",
            volumes=[_config_volume("antrea-config", "antrea-config")],
        ),
        _daemonset(
            "antrea-agent-windows",
            ns,
            "windows",
            {"app": "antrea", "component": "antrea-agent-windows"},
            [
                _container(
                    "antrea-agent",
                    "antrea/antrea-windows:v2.3.0",
                    ["powershell"],
                    ["-file", "$env:CONTAINER_SANDBOX_MOUNT_POINT/var/lib/antrea-windows/Run-AntreaAgent.ps1"],
                )
            ],
            "antrea-agent",
            volumes=[_config_volume("antrea-windows-config", "antrea-windows-config")],
        ),
    ]


WIN_OVERLAY_REMOVED = releases.since("win-overlay-removed")  # wincon.documents.releases.MINORS


def kube_proxy(kube_version: str, cni: str) -> list[Obj]:
    """kube-proxy as kubeadm deploys it (iptables on Linux) plus sig-windows-tools' kube-proxy-windows."""
    ns = "kube-system"
    config_conf = (
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
        "kind: KubeProxyConfiguration\n"
        f"clusterCIDR: {FLANNEL_NETWORK}\n"
        "mode: iptables\n"
    )
    windows_network = {
        "flannel-vxlan": "vxlan0",
        "flannel-host-gw": "cbr0",
        "calico": "Calico",
        "azure-cni": "azure",
        "antrea": "antrea-hnsnetwork",
    }.get(cni, "")
    windows_args = [
        "--proxy-mode=kernelspace",
        "--hostname-override=$(NODE_NAME)",
        "--kubeconfig=$env:CONTAINER_SANDBOX_MOUNT_POINT/var/lib/kube-proxy/kubeconfig.conf",
        "--v=4",
    ]
    if windows_network:
        windows_args.append(f"--network-name={windows_network}")
    if cni == "flannel-vxlan" and not releases.at_least(kube_version, WIN_OVERLAY_REMOVED):
        # sig-windows-tools' overlay kube-proxy turns the gate on; 1.38 removed it (pkg/features/kube_features.go
        # at v1.38.0-beta.0 no longer names it), and a kube-proxy given a removed gate refuses to start.
        windows_args.append("--feature-gates=WinOverlay=true")
    labels = {"k8s-app": "kube-proxy"}
    return [
        _service_account("kube-proxy", ns),
        _config_map(
            "kube-proxy", ns, {"config.conf": config_conf, "kubeconfig.conf": _KUBECONFIG_CONF}, {"app": "kube-proxy"}
        ),
        _daemonset(
            "kube-proxy",
            ns,
            "linux",
            labels,
            [
                _container(
                    "kube-proxy",
                    f"registry.k8s.io/kube-proxy:{kube_version}",
                    [
                        "/usr/local/bin/kube-proxy",
                        "--config=/var/lib/kube-proxy/config.conf",
                        "--hostname-override=$(NODE_NAME)",
                    ],
                    privileged=True,
                )
            ],
            "kube-proxy",
            volumes=[_config_volume("kube-proxy", "kube-proxy")],
        ),
        _daemonset(
            "kube-proxy-windows",
            ns,
            "windows",
            {"k8s-app": "kube-proxy-windows"},
            [
                _container(
                    "kube-proxy",
                    f"sigwindowstools/kube-proxy:{kube_version}-flannel-hostprocess",
                    ["$env:CONTAINER_SANDBOX_MOUNT_POINT/kube-proxy/kube-proxy.exe"],
                    windows_args,
                )
            ],
            "kube-proxy",
            volumes=[_config_volume("kube-proxy", "kube-proxy")],
        ),
    ]


_KUBECONFIG_CONF = """apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    server: https://kubernetes.default.svc
  name: default
contexts:
- context:
    cluster: default
    namespace: default
    user: default
  name: default
current-context: default
users:
- name: default
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
"""


@dataclass(frozen=True)
class RealDns:
    """CoreDNS that really runs (on the real Linux nodes): its locally built image and its Corefile."""

    image: str
    corefile: str


def cluster_dns(real: RealDns | None = None) -> list[Obj]:
    """CoreDNS behind the kube-dns Service, as kubeadm and AKS name them; real when ``real`` is given."""
    ns = "kube-system"
    labels = {"k8s-app": "kube-dns"}
    corefile = (
        real.corefile
        if real
        else (
            ".:53 {\n    errors\n    health\n    ready\n"
            "    kubernetes cluster.local in-addr.arpa ip6.arpa {\n       pods insecure\n"
            "       fallthrough in-addr.arpa ip6.arpa\n    }\n"
            "    prometheus :9153\n    forward . /etc/resolv.conf\n    cache 30\n    loop\n    reload\n}\n"
        )
    )
    image = real.image if real else "registry.k8s.io/coredns/coredns:v1.12.1"
    container = _container("coredns", image, args=["-conf", "/etc/coredns/Corefile"])
    container["volumeMounts"] = [{"name": "config-volume", "mountPath": "/etc/coredns", "readOnly": True}]
    if real:
        container["imagePullPolicy"] = "IfNotPresent"
        container["readinessProbe"] = {"httpGet": {"path": "/ready", "port": 8181}, "periodSeconds": 2}
        container["livenessProbe"] = {
            "httpGet": {"path": "/health", "port": 8080},
            "initialDelaySeconds": 10,
            "periodSeconds": 10,
        }
    container["ports"] = [
        {"name": "dns", "containerPort": 53, "protocol": "UDP"},
        {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
        {"name": "metrics", "containerPort": 9153, "protocol": "TCP"},
    ]
    rbac = "rbac.authorization.k8s.io/v1"
    return [
        _service_account("coredns", ns),
        {
            "apiVersion": rbac,
            "kind": "ClusterRole",
            "metadata": {"name": "system:coredns"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["endpoints", "services", "pods", "namespaces"],
                    "verbs": ["list", "watch"],
                },
                {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
            ],
        },  # fmt: skip
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "system:coredns"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:coredns"},
            "subjects": [{"kind": "ServiceAccount", "name": "coredns", "namespace": ns}],
        },
        _config_map("coredns", ns, {"Corefile": corefile}),
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "coredns", "namespace": ns, "labels": dict(labels)},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": dict(labels)},
                "template": {
                    "metadata": {"labels": dict(labels)},
                    "spec": {
                        "serviceAccountName": "coredns",
                        "priorityClassName": "system-cluster-critical",
                        "nodeSelector": {"kubernetes.io/os": "linux"},
                        **({"affinity": REAL_ONLY, "dnsPolicy": "Default"} if real else {}),
                        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
                        "containers": [container],
                        "volumes": [{"name": "config-volume", "configMap": {"name": "coredns"}}],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "kube-dns",
                "namespace": ns,
                "labels": {**labels, "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"},
                "annotations": {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"},
            },
            "spec": {
                "type": "ClusterIP",
                "clusterIP": DNS_CLUSTER_IP,
                "selector": dict(labels),
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                    {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
                ],
            },
        },
    ]


def objects(cni: str, kube_version: str, dns: RealDns | None = None) -> list[Obj]:
    """Everything to create for `cni`, plus kube-proxy and cluster DNS (real if ``dns``), in creation order."""
    by_cni = {
        "flannel-vxlan": lambda: flannel("vxlan"),
        "flannel-host-gw": lambda: flannel("host-gw"),
        "calico": calico,
        "azure-cni": azure_cni,
        "antrea": antrea,
        "none": list,
    }
    if cni not in by_cni:
        raise ValueError(f"unknown CNI {cni!r}")
    return [*by_cni[cni](), *kube_proxy(kube_version, cni), *cluster_dns(dns)]


def daemonsets(cni: str, kube_version: str) -> list[tuple[str, str, str]]:
    """(namespace, name, os) of every DaemonSet :func:`objects` creates."""
    return [
        (
            o["metadata"]["namespace"],
            o["metadata"]["name"],
            o["spec"]["template"]["spec"]["nodeSelector"]["kubernetes.io/os"],
        )
        for o in objects(cni, kube_version)
        if o["kind"] == "DaemonSet"
    ]
