#!/usr/bin/env bash
# Entry point of the Prow jobs (ci/prow/*.yaml): install wincon (and the Azure CLI for AKS jobs) into a
# virtualenv, log in to the cloud with the credentials Prow's presets mount, then run pipeline.sh with
# the job's arguments with --artifacts $ARTIFACTS. Prow's own uploader is the publisher here: it copies
# $ARTIFACTS (the runs' junit_*.xml, logs) to gs://<decoration bucket>/logs/<job>/<build>/artifacts/
# and writes started.json and finished.json, into which it merges $ARTIFACTS/metadata.json (the run's
# Kubernetes version, Windows builds, CNI...) for TestGrid's column headers. Publishing the same runs
# again with `wincon publish` would show every test twice.
#
# Usage: ci/scripts/prow.sh [--dry-run] PIPELINE ARGS...   (see ci/scripts/pipeline.sh --help)
# Credentials, from Prow presets (never printed):
#   AKS: AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_SUBSCRIPTION_ID and AZURE_FEDERATED_TOKEN_FILE
#        (workload identity federation);
#   GCS and GKE: GOOGLE_APPLICATION_CREDENTIALS (a credentials file, or workload identity on the build cluster).
set -o errexit -o nounset -o pipefail
SCRIPT_NAME=prow.sh
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "${HERE}/../.." && pwd -P)"
# shellcheck source=ci/scripts/lib.sh
source "${HERE}/lib.sh"

args=()
cloud=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) DRY_RUN=true; args+=("$1"); shift ;;
    --cloud) need_value "$@"; cloud=$2; args+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,/^set -o/p' "${BASH_SOURCE[0]}" | sed -e '/^set -o/d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
export DRY_RUN
[[ -n "${ARTIFACTS:-}" ]] || die "${EXIT_USAGE}" "ARTIFACTS is not set" "run under Prow's decoration (decorate: true), or export ARTIFACTS=DIR"

venv="${WINCON_VENV:-${TMPDIR:-/tmp}/wincon-venv}"
run python3 -m venv "${venv}"
run "${venv}/bin/python" -m pip install --quiet --upgrade pip
run "${venv}/bin/python" -m pip install --quiet -e "${ROOT}"
if [[ "${cloud}" == aks ]] && ! command -v az >/dev/null 2>&1; then
  run "${venv}/bin/python" -m pip install --quiet azure-cli
fi
[[ "${DRY_RUN}" == true ]] || export PATH="${venv}/bin:${PATH}"

case "${cloud}" in
  aks)
    require_env AZURE_CLIENT_ID AZURE_TENANT_ID AZURE_SUBSCRIPTION_ID AZURE_FEDERATED_TOKEN_FILE
    if [[ "${DRY_RUN}" != true ]]; then
      AZURE_FEDERATED_TOKEN="$(<"${AZURE_FEDERATED_TOKEN_FILE}")"
      export AZURE_FEDERATED_TOKEN
    fi
    run az login --service-principal --username "${AZURE_CLIENT_ID:-AZURE_CLIENT_ID}" \
      --tenant "${AZURE_TENANT_ID:-AZURE_TENANT_ID}" --federated-token "${AZURE_FEDERATED_TOKEN:-<token>}" --output none
    run az account set --subscription "${AZURE_SUBSCRIPTION_ID:-AZURE_SUBSCRIPTION_ID}"
    ;;
esac
if [[ -n "${GOOGLE_APPLICATION_CREDENTIALS:-}" ]]; then
  run gcloud auth login --cred-file="${GOOGLE_APPLICATION_CREDENTIALS}" --quiet
fi

exec "${HERE}/pipeline.sh" "${args[@]}" --artifacts "${ARTIFACTS}"
