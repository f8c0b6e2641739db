#!/usr/bin/env bash
# An AKS cluster for wincon: a Linux system pool plus one Windows node pool per Windows Server version.
#
# Usage: ci/scripts/aks.sh up|down|logs [options]
#   up     create the resource group, the cluster (Azure CNI) and the Windows pools; write the kubeconfig
#   down   delete the resource group (and with it the cluster); safe to run twice
#   check  validate the options and exit (0: fine, 4: usage error)
#   logs   save cluster state and node logs under --artifacts
# Options:
#   --cluster-name NAME      cluster name (default: $AKS_CLUSTER_NAME or wincon-<date>)
#   --resource-group RG      resource group (default: $AKS_RESOURCE_GROUP or <cluster-name>-rg)
#   --location LOCATION      Azure region (default: $AKS_LOCATION or westus2)
#   --kubernetes-version X.Y[.Z]  Kubernetes version (default: AKS's default; --k8s-version: old spelling)
#   --windows LIST           Windows Server versions, comma-separated: ltsc2019, ltsc2022, ltsc2025
#                            (default: ltsc2025). AKS offers Windows Server 2019 pools up to Kubernetes 1.32 and
#                            Windows Server 2022 pools up to 1.34 ("Announcing the 3-year retirement of Windows
#                            Server 2022 on Azure Kubernetes Service", 2024-03-15: 1.34 is the last version).
#   --windows-nodes N        nodes per Windows pool (default: 2)
#   --vm-size SIZE           VM size of every pool (default: Standard_D4s_v5)
#   --network-plugin-mode M  "" for Azure CNI (default) or "overlay" for Azure CNI Overlay
#   --kubeconfig FILE        where `up` writes the kubeconfig (default: ./kubeconfig-<cluster-name>)
#   --artifacts DIR          where `logs` writes (default: ./artifacts)
#   --dry-run                print the az/kubectl commands; needs no credentials and runs nothing
# Credentials: an `az login` session (in CI: azure/login with OIDC). AKS_WINDOWS_ADMIN_PASSWORD, if set,
# becomes the Windows nodes' admin password (never printed); otherwise AKS generates one.
# Exit codes: 0 done, 3 a cloud command failed, 4 bad usage.
set -o errexit -o nounset -o pipefail
SCRIPT_NAME=aks.sh
# shellcheck source=ci/scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $# -ge 1 ]] || { usage >&2; exit "${EXIT_USAGE}"; }
action=$1
shift
check_action "${action}"

cluster=${AKS_CLUSTER_NAME:-wincon-$(date -u +%Y%m%d%H%M)}
group=${AKS_RESOURCE_GROUP:-}
location=${AKS_LOCATION:-westus2}
k8s_version=""
windows="ltsc2025"
windows_nodes=2
vm_size="Standard_D4s_v5"
plugin_mode=""
kubeconfig=""
artifacts="artifacts"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --cluster-name) need_value "$@"; cluster=$2; shift 2 ;;
    --resource-group) need_value "$@"; group=$2; shift 2 ;;
    --location) need_value "$@"; location=$2; shift 2 ;;
    --kubernetes-version|--k8s-version)
      [[ $1 == --k8s-version ]] && deprecated "$1" --kubernetes-version
      need_value "$@"; k8s_version=$2; shift 2 ;;
    --windows) need_value "$@"; windows=$2; shift 2 ;;
    --windows-nodes) need_value "$@"; windows_nodes=$2; shift 2 ;;
    --vm-size) need_value "$@"; vm_size=$2; shift 2 ;;
    --network-plugin-mode) [[ $# -ge 2 ]] || die "${EXIT_USAGE}" "--network-plugin-mode needs a value" "use overlay or \"\""; plugin_mode=$2; shift 2 ;;
    --kubeconfig) need_value "$@"; kubeconfig=$2; shift 2 ;;
    --artifacts) need_value "$@"; artifacts=$2; shift 2 ;;
    --dry-run) DRY_RUN=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "${EXIT_USAGE}" "unknown option '$1'" "see ci/scripts/aks.sh --help" ;;
  esac
done
group=${group:-${cluster}-rg}
kubeconfig=${kubeconfig:-kubeconfig-${cluster}}
[[ "${cluster}" =~ ^[a-zA-Z0-9][a-zA-Z0-9-]{0,61}$ ]] || die "${EXIT_USAGE}" "cluster name '${cluster}' is not a valid AKS name" "use letters, digits and dashes (at most 63)"
[[ "${windows_nodes}" =~ ^[1-9][0-9]*$ ]] || die "${EXIT_USAGE}" "--windows-nodes '${windows_nodes}' is not a positive number" "pass e.g. --windows-nodes 2"
[[ -z "${plugin_mode}" || "${plugin_mode}" == overlay ]] || die "${EXIT_USAGE}" "--network-plugin-mode '${plugin_mode}' is not supported" "use overlay or \"\""

# os_sku VERSION: the AKS --os-sku of a Windows Server version; pool_name VERSION: a Windows pool name (<= 6 chars).
os_sku() {
  case "$1" in
    ltsc2019) echo Windows2019 ;;
    ltsc2022) echo Windows2022 ;;
    ltsc2025) echo Windows2025 ;;
    *) die "${EXIT_USAGE}" "unknown Windows version '$1'" "use ltsc2019, ltsc2022 or ltsc2025" ;;
  esac
}
pool_name() { echo "win${1#ltsc20}"; }

IFS=',' read -r -a versions <<<"${windows}"
for version in "${versions[@]}"; do
  os_sku "${version}" >/dev/null
  if [[ -n "${k8s_version}" ]]; then
    minor=${k8s_version#v}
    minor=${minor#1.}
    minor=${minor%%.*}
    if [[ "${version}" == ltsc2019 && "${minor}" =~ ^[0-9]+$ ]] && (( minor >= 33 )); then
      die "${EXIT_USAGE}" "AKS does not offer Windows Server 2019 node pools on Kubernetes ${k8s_version}" \
        "use --kubernetes-version 1.32 (or earlier) for ltsc2019, or drop ltsc2019 from --windows"
    fi
    if [[ "${version}" == ltsc2022 && "${minor}" =~ ^[0-9]+$ ]] && (( minor >= 35 )); then
      die "${EXIT_USAGE}" "AKS does not offer Windows Server 2022 node pools on Kubernetes ${k8s_version}" \
        "use ltsc2025, or --kubernetes-version 1.34 (or earlier) for ltsc2022"
    fi
  fi
done

up() {
  require_tools az kubectl
  local create=(az aks create --resource-group "${group}" --name "${cluster}" --location "${location}"
    --node-count 2 --node-vm-size "${vm_size}" --network-plugin azure --generate-ssh-keys
    --tags wincon=ci --output none)
  [[ -n "${plugin_mode}" ]] && create+=(--network-plugin-mode "${plugin_mode}")
  [[ -n "${k8s_version}" ]] && create+=(--kubernetes-version "${k8s_version}")
  if [[ -n "${AKS_WINDOWS_ADMIN_PASSWORD:-}" ]]; then
    create+=(--windows-admin-username azureuser --windows-admin-password "${AKS_WINDOWS_ADMIN_PASSWORD}")
  fi
  run az group create --name "${group}" --location "${location}" --tags wincon=ci --output none
  run "${create[@]}"
  local version pool
  for version in "${versions[@]}"; do
    pool=(az aks nodepool add --resource-group "${group}" --cluster-name "${cluster}" --name "$(pool_name "${version}")"
      --os-type Windows --os-sku "$(os_sku "${version}")" --node-count "${windows_nodes}"
      --node-vm-size "${vm_size}" --output none)
    [[ -n "${k8s_version}" ]] && pool+=(--kubernetes-version "${k8s_version}")
    run "${pool[@]}"
  done
  run az aks get-credentials --resource-group "${group}" --name "${cluster}" --file "${kubeconfig}" --overwrite-existing
  run kubectl --kubeconfig "${kubeconfig}" wait --for=condition=Ready nodes --all --timeout=20m
}

down() {
  require_tools az
  if [[ "${DRY_RUN}" != true ]]; then
    local state
    state=$(az group show --name "${group}" --query properties.provisioningState --output tsv 2>/dev/null || true)
    if [[ -z "${state}" ]]; then
      log "resource group ${group} does not exist: nothing to delete"
      return 0
    elif [[ "${state}" == Deleting ]]; then
      log "resource group ${group} is already being deleted"
      return 0
    fi
  fi
  run az group delete --name "${group}" --yes --no-wait
}

logs() {
  require_tools az kubectl
  run mkdir -p "${artifacts}/cluster"
  if [[ "${DRY_RUN}" == true ]]; then
    show az aks show --resource-group "${group}" --name "${cluster}" --output json
    show az aks nodepool list --resource-group "${group}" --cluster-name "${cluster}" --output table
  else
    try az aks show --resource-group "${group}" --name "${cluster}" --output json >"${artifacts}/cluster/aks.json" || true
    try az aks nodepool list --resource-group "${group}" --cluster-name "${cluster}" --output table \
      >"${artifacts}/cluster/nodepools.txt" || true
  fi
  local collect=("$(dirname "${BASH_SOURCE[0]}")/collect-logs.sh" --kubeconfig "${kubeconfig}" --artifacts "${artifacts}")
  [[ "${DRY_RUN}" == true ]] && collect+=(--dry-run)
  "${collect[@]}"
}

check() { return 0; }  # the options were validated above

"${action}"
