#!/usr/bin/env bash
# The wincon CI pipeline, the same in GitHub Actions and Prow: create a cluster, pre-pull the images,
# run the suite, publish to the dashboard, collect logs, and always tear the cluster down.
#
# Usage: ci/scripts/pipeline.sh --cloud aks|gke|kubeconfig [options] [-- EXTRA PYTEST ARGS]
#   --mode nightly|gate    nightly (default): the parallel tests with -n WORKERS and -m "not serial and not
#                          disruptive", then the serial and disruptive tests alone (-n 0), each published
#                          as its own TestGrid build (JOB and JOB-serial).
#                          gate: the required tests of --kubernetes-version (gating/required.yaml), one at a
#                          time, then `wincon gate` (exit 11 when a required test failed or is missing).
#   --cloud C              aks or gke: create (and delete) a cluster with ci/scripts/C.sh;
#                          kubeconfig: use --kubeconfig as it is, create and delete nothing
#   --job NAME             job name on the dashboard (default: wincon-<cloud>-<windows>)
#   --publish DEST         where `wincon publish` sends results: gs://BUCKET/logs, a directory, or an
#                          allure-docker-service URL; JOB (and JOB-serial) is appended to gs:// and
#                          directory destinations (default: no publishing)
#   --artifacts DIR        results and logs go here (default: $ARTIFACTS or ./artifacts); a created
#                          cluster's kubeconfig goes to $TMPDIR/wincon-kubeconfig-<cluster>, never here
#   --windows LIST         Windows Server versions of the node pools (default: ltsc2025 on aks, whose Windows
#                          Server 2022 pools end at Kubernetes 1.34; ltsc2022 elsewhere)
#   --kubernetes-version X.Y  Kubernetes version of the cluster (X.Y, X.Y.Z, or with --cloud kubeconfig a
#                          pre-release such as v1.38.0-beta.0); required with --mode gate, whose required
#                          list is that of its minor (--k8s-version: its old spelling, deprecated)
#   --cluster-name NAME    cluster name (default: wincon-<run id>)
#   --kubeconfig FILE      with --cloud kubeconfig: the cluster to test
#   --workers N            pytest-xdist workers of the parallel phase (default: 4)
#   --allow-disruptive     run the disruptive checks (they reboot, shut down, page or taint a Windows node):
#                          always with --cloud aks or gke (the cluster is this job's own); with --cloud
#                          kubeconfig only when given (the cluster is someone else's)
#   --keep-cluster         do not delete the cluster at the end (it is still deleted on --cloud errors)
#   --dry-run              print every command (cloud, wincon, pytest) and run nothing; no credentials needed
# Cloud options (location, project...) come from the environment of ci/scripts/aks.sh and gke.sh.
# Exit code: the first failure's, as wincon's: 1 tests failed, 2 interrupted, 3 infrastructure
# (cluster, pre-pull), 4 usage, 5 no tests, 9 publish, 11 gate.
set -o errexit -o nounset -o pipefail
SCRIPT_NAME=pipeline.sh
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "${HERE}/../.." && pwd -P)"
# shellcheck source=ci/scripts/lib.sh
source "${HERE}/lib.sh"

mode=nightly
cloud=""
job=""
publish=""
artifacts=${ARTIFACTS:-artifacts}
windows=""
k8s_version=""
cluster=""
kubeconfig=""
workers=4
keep=false
allow_disruptive=false
extra=()

while [[ $# -gt 0 ]]; do
  case "$1" in
    --mode) need_value "$@"; mode=$2; shift 2 ;;
    --cloud) need_value "$@"; cloud=$2; shift 2 ;;
    --job) need_value "$@"; job=$2; shift 2 ;;
    --publish) need_value "$@"; publish=$2; shift 2 ;;
    --artifacts) need_value "$@"; artifacts=$2; shift 2 ;;
    --windows) need_value "$@"; windows=$2; shift 2 ;;
    --kubernetes-version|--k8s-version)
      [[ $1 == --k8s-version ]] && deprecated "$1" --kubernetes-version
      need_value "$@"; k8s_version=$2; shift 2 ;;
    --cluster-name) need_value "$@"; cluster=$2; shift 2 ;;
    --kubeconfig) need_value "$@"; kubeconfig=$2; shift 2 ;;
    --workers) need_value "$@"; workers=$2; shift 2 ;;
    --keep-cluster) keep=true; shift ;;
    --allow-disruptive) allow_disruptive=true; shift ;;
    --dry-run) DRY_RUN=true; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) die "${EXIT_USAGE}" "unknown option '$1'" "see ci/scripts/pipeline.sh --help" ;;
  esac
done
export DRY_RUN

case "${mode}" in nightly|gate) ;; *) die "${EXIT_USAGE}" "--mode '${mode}' is not nightly or gate" "pass --mode nightly or --mode gate" ;; esac
case "${cloud}" in
  aks|gke) ;;
  kubeconfig) [[ -n "${kubeconfig}" ]] || die "${EXIT_USAGE}" "--cloud kubeconfig needs --kubeconfig FILE" "pass the kubeconfig of the cluster to test" ;;
  "") die "${EXIT_USAGE}" "--cloud is required" "pass --cloud aks, gke or kubeconfig" ;;
  *) die "${EXIT_USAGE}" "--cloud '${cloud}' is not aks, gke or kubeconfig" "pass --cloud aks, gke or kubeconfig" ;;
esac
[[ "${workers}" =~ ^[0-9]+$ ]] || die "${EXIT_USAGE}" "--workers '${workers}' is not a number" "pass e.g. --workers 4"
if [[ "${mode}" == gate && ! "${k8s_version}" =~ ^v?[0-9]+\.[0-9]+(\.[0-9]+(-(alpha|beta|rc)\.[0-9]+)?)?$ ]]; then
  die "${EXIT_USAGE}" "--mode gate needs --kubernetes-version X.Y or a release such as v1.38.0-beta.0 (its minor's required list applies)" "pass e.g. --kubernetes-version 1.37"
fi
# A pre-release (v1.38.0-beta.0) is no version AKS or GKE create clusters at: it is tested on a cluster built
# from it, given with --cloud kubeconfig.
if [[ "${k8s_version}" == *-* && "${cloud}" != kubeconfig ]]; then
  die "${EXIT_USAGE}" "--kubernetes-version ${k8s_version} is a pre-release, which ${cloud} does not offer" \
    "run it with --cloud kubeconfig --kubeconfig FILE on a cluster built from that release"
fi

# The disruptive checks are opt-in: a cluster this job creates (and deletes) is its own to disrupt.
if [[ "${cloud}" != kubeconfig ]]; then allow_disruptive=true; fi
disruptive=()
if [[ "${allow_disruptive}" == true ]]; then disruptive=(--allow-disruptive); fi

if [[ -z "${windows}" ]]; then
  if [[ "${cloud}" == aks ]]; then windows=ltsc2025; else windows=ltsc2022; fi
fi

run_id=${WINCON_RUN_ID:-${BUILD_ID:-${GITHUB_RUN_ID:-$(date -u +%Y%m%d%H%M%S)}}}
job=${job:-wincon-${cloud}-${windows//,/-}}
cluster=${cluster:-wincon-${run_id}}
cluster=$(printf '%s' "${cluster}" | tr 'A-Z_.' 'a-z--' | cut -c1-40)
artifacts=$(realpath -m "${artifacts}")
[[ -n "${kubeconfig}" ]] && kubeconfig=$(realpath -m "${kubeconfig}")
cd "${ROOT}"  # pytest node ids, gating/required.yaml and suites/ are relative to the repository
results="${artifacts}/results"
# The kubeconfig holds credentials: it stays out of the artifacts, which are uploaded (often world-readable).
[[ "${cloud}" != kubeconfig ]] && kubeconfig="${WINCON_KUBECONFIG_DIR:-${TMPDIR:-/tmp}}/wincon-kubeconfig-${cluster}"

cloud_args=(--cluster-name "${cluster}" --windows "${windows}" --kubeconfig "${kubeconfig}" --artifacts "${artifacts}")
[[ -n "${k8s_version}" ]] && cloud_args+=(--kubernetes-version "${k8s_version}")
[[ "${DRY_RUN}" == true ]] && cloud_args+=(--dry-run)

if [[ "${cloud}" != kubeconfig ]]; then
  # Bad cloud options are a usage error before anything is created.
  "${HERE}/${cloud}.sh" check "${cloud_args[@]}" || exit "${EXIT_USAGE}"
fi

status=0            # the first failure's exit code
cluster_created=false
record() { # record RC STEP: keep the first failure
  if [[ "$1" -ne 0 ]]; then
    log "${2} exited $1"
    [[ ${status} -ne 0 ]] || status=$1
  fi
}

# shellcheck disable=SC2329  # invoked by the EXIT trap
finish() {
  local rc=$?
  trap - EXIT INT TERM
  [[ ${status} -ne 0 ]] || status=${rc}
  if [[ "${cloud}" != kubeconfig && ${cluster_created} == true ]] || [[ "${cloud}" == kubeconfig ]]; then
    log "collecting logs into ${artifacts}"
    if [[ "${cloud}" == kubeconfig ]]; then
      local collect=("${HERE}/collect-logs.sh" --kubeconfig "${kubeconfig}" --artifacts "${artifacts}")
      [[ "${DRY_RUN}" == true ]] && collect+=(--dry-run)
      "${collect[@]}" || true
    else
      "${HERE}/${cloud}.sh" logs "${cloud_args[@]}" || log "log collection failed; going on with the teardown"
    fi
  fi
  if [[ "${cloud}" != kubeconfig && ${cluster_created} == true ]]; then
    if [[ ${keep} == true && ${status} -ne ${EXIT_INFRA} ]]; then
      log "--keep-cluster: cluster ${cluster} is left running; delete it with: ci/scripts/${cloud}.sh down --cluster-name ${cluster}"
    else
      log "tearing down cluster ${cluster}"
      "${HERE}/${cloud}.sh" down "${cloud_args[@]}" || log "TEARDOWN FAILED: delete cluster ${cluster} by hand (ci/scripts/${cloud}.sh down)"
    fi
  fi
  log "done: exit ${status}"
  exit "${status}"
}
trap finish EXIT
# shellcheck disable=SC2329  # invoked by the INT and TERM traps
interrupted() {
  log "interrupted: stopping the running step, then logs and teardown"
  status=${EXIT_INTERRUPTED}
  stop_child 60
  exit "${EXIT_INTERRUPTED}"
}
trap interrupted INT TERM

run mkdir -p "${results}"

# 1. The cluster.
if [[ "${cloud}" != kubeconfig ]]; then
  cluster_created=true  # from here on, whatever happens, logs are collected and the cluster is deleted
  rc=0
  in_background "${HERE}/${cloud}.sh" up "${cloud_args[@]}" || rc=$?
  if [[ ${rc} -ne 0 ]]; then
    record "${EXIT_INFRA}" "cluster creation (${cloud}.sh up, exit ${rc})"
    exit "${EXIT_INFRA}"
  fi
fi

# 2. Pre-pull: Windows images take 10 to 30 minutes to pull; tests must not pay for it.
rc=0
run wincon prepull --kubeconfig "${kubeconfig}" || rc=$?
if [[ ${rc} -ne 0 ]]; then
  record "${EXIT_INFRA}" "wincon prepull (exit ${rc})"
  exit "${EXIT_INFRA}"
fi

pytest_common=(pytest --kubeconfig "${kubeconfig}")

publish_to() { # publish_to RESULTS JOB
  [[ -n "${publish}" ]] || return 0
  local dest=${publish}
  case "${dest}" in
    http://*|https://*) ;;
    *) dest="${dest%/}/$2" ;;
  esac
  local rc=0
  run wincon publish "$1" --to "${dest}" || rc=$?
  record "${rc}" "wincon publish $1"
}

# prow_metadata RESULTS: under Prow, hand the run's profile (Kubernetes version, Windows builds, CNI...)
# to Prow's finished.json through $ARTIFACTS/metadata.json, so TestGrid can show it as column headers.
prow_metadata() {
  [[ -n "${PROW_JOB_ID:-}" && -n "${ARTIFACTS:-}" ]] || return 0
  if [[ "${DRY_RUN}" == true ]]; then
    show python3 "${HERE}/prow_metadata.py" "$1/finished.json" "${ARTIFACTS}/metadata.json"
  else
    python3 "${HERE}/prow_metadata.py" "$1/finished.json" "${ARTIFACTS}/metadata.json" || log "could not write ${ARTIFACTS}/metadata.json"
  fi
}

if [[ "${mode}" == nightly ]]; then
  # 3. The parallel tests.
  rc=0
  run "${pytest_common[@]}" suites --run-id "${run_id}-parallel" --results-dir "${results}/parallel" \
    --results-context parallel -n "${workers}" -m "not serial and not disruptive" "${extra[@]}" || rc=$?
  record "${rc}" "parallel tests"
  # 4. The serial and disruptive tests, alone on the cluster.
  rc=0
  run "${pytest_common[@]}" suites --run-id "${run_id}-serial" --results-dir "${results}/serial" \
    --results-context serial -n 0 -m "serial or disruptive" "${disruptive[@]}" "${extra[@]}" || rc=$?
  if [[ ${rc} -eq ${EXIT_NO_TESTS} ]]; then
    log "no serial or disruptive tests were selected"
    rc=0
  fi
  record "${rc}" "serial and disruptive tests"
  # 5. Publish each phase as its own TestGrid build.
  publish_to "${results}/parallel" "${job}"
  [[ "${DRY_RUN}" == true || -f "${results}/serial/started.json" ]] && publish_to "${results}/serial" "${job}-serial"
  prow_metadata "${results}/parallel"
else
  # 3. The required tests of this Kubernetes minor, one at a time (they include serial ones).
  minor=${k8s_version#v}
  minor=$(printf '%s' "${minor}" | cut -d. -f1-2)
  required="${artifacts}/required-tests.txt"
  rc=0
  if [[ "${DRY_RUN}" == true ]]; then
    printf '%s > %s\n' "$(show python3 "${HERE}/required_tests.py" --kubernetes-version "${minor}")" "${required}"
  else
    python3 "${HERE}/required_tests.py" --kubernetes-version "${minor}" >"${required}" || rc=$?
  fi
  if [[ ${rc} -ne 0 ]]; then
    record "${rc}" "listing the required tests"
    exit "${rc}"
  fi
  rc=0
  run "${pytest_common[@]}" --run-id "${run_id}-gate" --results-dir "${results}/gate" --results-context gate \
    -n 0 "@${required}" "${disruptive[@]}" "${extra[@]}" || rc=$?
  record "${rc}" "required tests"
  publish_to "${results}/gate" "${job}"
  prow_metadata "${results}/gate"
  # 4. The verdict: its exit code (11 when a required test failed, errored or is missing) wins over
  #    the test run's, since the gate is what this job is for.
  rc=0
  run wincon gate "${results}/gate" --kubernetes-version "${minor}" || rc=$?
  if [[ ${rc} -ne 0 ]]; then
    log "release gate for Kubernetes ${minor}: NO (exit ${rc})"
    status=${rc}
  else
    log "release gate for Kubernetes ${minor}: yes (the gate's verdict is this job's result)"
    status=0
  fi
fi
exit "${status}"
