#!/usr/bin/env bash
# Save what explains a failed run, from any cluster: nodes, events, kube-system pods, wincon's leftover
# namespaces, and each node's kubelet and containerd logs through the kubelet's node log endpoints.
# Best effort: a command that fails is logged and the rest still runs; the exit code is always 0.
#
# Usage: ci/scripts/collect-logs.sh --kubeconfig FILE [--artifacts DIR] [--dry-run]
#   --kubeconfig FILE  the cluster (default: $KUBECONFIG)
#   --artifacts DIR    output directory (default: ./artifacts); files go to DIR/cluster and DIR/nodes
#   --dry-run          print the kubectl commands (NODE stands for each node's name); runs nothing
set -o errexit -o nounset -o pipefail
SCRIPT_NAME=collect-logs.sh
# shellcheck source=ci/scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

kubeconfig=${KUBECONFIG:-}
artifacts="artifacts"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kubeconfig) need_value "$@"; kubeconfig=$2; shift 2 ;;
    --artifacts) need_value "$@"; artifacts=$2; shift 2 ;;
    --dry-run) DRY_RUN=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "${EXIT_USAGE}" "unknown option '$1'" "see ci/scripts/collect-logs.sh --help" ;;
  esac
done
[[ -n "${kubeconfig}" ]] || die "${EXIT_USAGE}" "no kubeconfig" "pass --kubeconfig FILE or set KUBECONFIG"
require_tools kubectl

k=(kubectl --kubeconfig "${kubeconfig}")
# Cluster-wide state: FILE then the kubectl arguments.
cluster_state=(
  "nodes.txt|get nodes -o wide --show-labels"
  "nodes.yaml|get nodes -o yaml"
  "events.txt|get events --all-namespaces --sort-by=.lastTimestamp"
  "kube-system-pods.txt|get pods --namespace kube-system -o wide"
  "wincon-namespaces.txt|get namespaces -l app.kubernetes.io/managed-by=wincon --show-labels"
  "wincon-pods.txt|get pods --all-namespaces -l app.kubernetes.io/managed-by=wincon -o wide"
)
# Per node: FILE suffix then the kubelet endpoint (node log query needs the NodeLogQuery feature; else empty).
node_logs=(
  "describe.txt|"
  "kubelet.log|/proxy/logs/?query=kubelet&tailLines=5000"
  "containerd.log|/proxy/logs/?query=containerd&tailLines=5000"
  "kube-proxy.log|/proxy/logs/?query=kube-proxy&tailLines=5000"
  "log-dir.txt|/proxy/logs/"
)

if [[ "${DRY_RUN}" == true ]]; then
  show mkdir -p "${artifacts}/cluster" "${artifacts}/nodes"
  for entry in "${cluster_state[@]}"; do
    read -r -a words <<<"${entry#*|}"
    printf '%s > %s\n' "$(show "${k[@]}" "${words[@]}")" "${artifacts}/cluster/${entry%%|*}"
  done
  printf '# for each node NODE (%s):\n' "$(show "${k[@]}" get nodes -o name)"
  for entry in "${node_logs[@]}"; do
    if [[ -z "${entry#*|}" ]]; then
      printf '%s > %s\n' "$(show "${k[@]}" describe node NODE)" "${artifacts}/nodes/NODE-${entry%%|*}"
    else
      printf '%s > %s\n' "$(show "${k[@]}" get --raw "/api/v1/nodes/NODE${entry#*|}")" "${artifacts}/nodes/NODE-${entry%%|*}"
    fi
  done
  exit 0
fi

mkdir -p "${artifacts}/cluster" "${artifacts}/nodes"
for entry in "${cluster_state[@]}"; do
  read -r -a words <<<"${entry#*|}"
  try "${k[@]}" "${words[@]}" >"${artifacts}/cluster/${entry%%|*}" 2>&1 || true
done
nodes=()
while read -r node; do
  [[ -n "${node}" ]] && nodes+=("${node#node/}")
done < <("${k[@]}" get nodes -o name 2>/dev/null || true)
for node in "${nodes[@]}"; do
  for entry in "${node_logs[@]}"; do
    out="${artifacts}/nodes/${node}-${entry%%|*}"
    if [[ -z "${entry#*|}" ]]; then
      try "${k[@]}" describe node "${node}" >"${out}" 2>&1 || true
    else
      try "${k[@]}" get --raw "/api/v1/nodes/${node}${entry#*|}" >"${out}" 2>&1 || true
    fi
  done
done
log "logs of ${#nodes[@]} nodes saved under ${artifacts}"
exit 0
