#!/usr/bin/env bash
# A GKE cluster for wincon: a VPC-native cluster with its Linux default pool plus one Windows Server
# LTSC containerd node pool (image type WINDOWS_LTSC_CONTAINERD) per Windows Server version.
#
# Usage: ci/scripts/gke.sh up|down|logs [options]
#   up     create the cluster and the Windows pools; write the kubeconfig
#   down   delete the cluster; safe to run twice
#   check  validate the options and exit (0: fine, 4: usage error)
#   logs   save cluster state, node logs and the Windows nodes' serial console under --artifacts
# Options:
#   --cluster-name NAME    cluster name (default: $GKE_CLUSTER_NAME or wincon-<date>)
#   --project PROJECT      Google Cloud project (default: $GKE_PROJECT, else gcloud's configured project)
#   --zone ZONE            zone (default: $GKE_ZONE or us-central1-a)
#   --kubernetes-version X.Y[.Z]  cluster version (default: GKE's default in the release channel; --k8s-version:
#                          its old spelling)
#   --windows LIST         Windows Server versions, comma-separated: ltsc2019, ltsc2022 (default: ltsc2022)
#   --windows-nodes N      nodes per Windows pool (default: 2)
#   --machine-type TYPE    machine type of every pool (default: n2-standard-4)
#   --kubeconfig FILE      where `up` writes the kubeconfig (default: ./kubeconfig-<cluster-name>)
#   --artifacts DIR        where `logs` writes (default: ./artifacts)
#   --dry-run              print the gcloud/kubectl commands; needs no credentials and runs nothing
# Credentials: gcloud's application default or activated credentials (in CI: google-github-actions/auth
# with workload identity federation); the kubeconfig uses gke-gcloud-auth-plugin.
# Exit codes: 0 done, 3 a cloud command failed, 4 bad usage.
set -o errexit -o nounset -o pipefail
SCRIPT_NAME=gke.sh
# shellcheck source=ci/scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $# -ge 1 ]] || { usage >&2; exit "${EXIT_USAGE}"; }
action=$1
shift
check_action "${action}"

cluster=${GKE_CLUSTER_NAME:-wincon-$(date -u +%Y%m%d%H%M)}
project=${GKE_PROJECT:-}
zone=${GKE_ZONE:-us-central1-a}
k8s_version=""
windows="ltsc2022"
windows_nodes=2
machine_type="n2-standard-4"
kubeconfig=""
artifacts="artifacts"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --cluster-name) need_value "$@"; cluster=$2; shift 2 ;;
    --project) need_value "$@"; project=$2; shift 2 ;;
    --zone) need_value "$@"; zone=$2; shift 2 ;;
    --kubernetes-version|--k8s-version)
      [[ $1 == --k8s-version ]] && deprecated "$1" --kubernetes-version
      need_value "$@"; k8s_version=$2; shift 2 ;;
    --windows) need_value "$@"; windows=$2; shift 2 ;;
    --windows-nodes) need_value "$@"; windows_nodes=$2; shift 2 ;;
    --machine-type) need_value "$@"; machine_type=$2; shift 2 ;;
    --kubeconfig) need_value "$@"; kubeconfig=$2; shift 2 ;;
    --artifacts) need_value "$@"; artifacts=$2; shift 2 ;;
    --dry-run) DRY_RUN=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "${EXIT_USAGE}" "unknown option '$1'" "see ci/scripts/gke.sh --help" ;;
  esac
done
kubeconfig=${kubeconfig:-kubeconfig-${cluster}}
[[ "${cluster}" =~ ^[a-z]([a-z0-9-]{0,38}[a-z0-9])?$ ]] || die "${EXIT_USAGE}" "cluster name '${cluster}' is not a valid GKE name" "use lower-case letters, digits and dashes (at most 40), starting with a letter"
[[ "${windows_nodes}" =~ ^[1-9][0-9]*$ ]] || die "${EXIT_USAGE}" "--windows-nodes '${windows_nodes}' is not a positive number" "pass e.g. --windows-nodes 2"

IFS=',' read -r -a versions <<<"${windows}"
for version in "${versions[@]}"; do
  case "${version}" in
    ltsc2019|ltsc2022) ;;
    *) die "${EXIT_USAGE}" "GKE does not offer Windows version '${version}'" "use ltsc2019 or ltsc2022" ;;
  esac
done

where=(--zone "${zone}")
[[ -n "${project}" ]] && where+=(--project "${project}")

up() {
  require_tools gcloud kubectl
  local create=(gcloud container clusters create "${cluster}" "${where[@]}" --enable-ip-alias
    --num-nodes 2 --machine-type "${machine_type}" --labels wincon=ci --quiet)
  [[ -n "${k8s_version}" ]] && create+=(--cluster-version "${k8s_version}")
  run "${create[@]}"
  local version
  for version in "${versions[@]}"; do
    run gcloud container node-pools create "win-${version}" --cluster "${cluster}" "${where[@]}" \
      --image-type WINDOWS_LTSC_CONTAINERD --windows-os-version "${version}" \
      --num-nodes "${windows_nodes}" --machine-type "${machine_type}" --quiet
  done
  if [[ "${DRY_RUN}" == true ]]; then
    printf 'KUBECONFIG=%s ' "${kubeconfig}"
    show gcloud container clusters get-credentials "${cluster}" "${where[@]}"
  else
    KUBECONFIG="${kubeconfig}" run gcloud container clusters get-credentials "${cluster}" "${where[@]}"
  fi
  run kubectl --kubeconfig "${kubeconfig}" wait --for=condition=Ready nodes --all --timeout=20m
}

down() {
  require_tools gcloud
  if [[ "${DRY_RUN}" != true ]]; then
    local state
    state=$(gcloud container clusters describe "${cluster}" "${where[@]}" --format='value(status)' 2>/dev/null || true)
    if [[ -z "${state}" ]]; then
      log "cluster ${cluster} does not exist: nothing to delete"
      return 0
    elif [[ "${state}" == STOPPING ]]; then
      log "cluster ${cluster} is already being deleted"
      return 0
    fi
  fi
  run gcloud container clusters delete "${cluster}" "${where[@]}" --quiet
}

logs() {
  require_tools gcloud kubectl
  run mkdir -p "${artifacts}/cluster" "${artifacts}/nodes"
  local collect=("$(dirname "${BASH_SOURCE[0]}")/collect-logs.sh" --kubeconfig "${kubeconfig}" --artifacts "${artifacts}")
  if [[ "${DRY_RUN}" == true ]]; then
    show gcloud container clusters describe "${cluster}" "${where[@]}" --format json
    printf '# for each Windows node NODE:\n'
    show gcloud compute instances get-serial-port-output NODE "${where[@]}" --port 1
    "${collect[@]}" --dry-run
    return 0
  fi
  try gcloud container clusters describe "${cluster}" "${where[@]}" --format json >"${artifacts}/cluster/gke.json" || true
  local node
  while read -r node; do
    [[ -n "${node}" ]] || continue
    try gcloud compute instances get-serial-port-output "${node}" "${where[@]}" --port 1 \
      >"${artifacts}/nodes/${node}-serial-1.log" 2>&1 || true
  done < <(kubectl --kubeconfig "${kubeconfig}" get nodes -l kubernetes.io/os=windows -o name 2>/dev/null | sed 's|^node/||')
  "${collect[@]}"
}

check() { return 0; }  # the options were validated above

"${action}"
