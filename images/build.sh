#!/usr/bin/env bash
# Build, push and assemble wincon's own Windows test images (images/catalog.yaml, `upstream: false`).
#
# For each image and each Windows Server version: `docker buildx build --platform windows/amd64`
# pushed as <name>:<tag>-windows-amd64-<version>; then one manifest list <name>:<tag> whose entries are
# annotated with the os.version read from the base image each entry was built on (docker manifest
# inspect), so a node's container runtime picks the entry matching its build.
#
# Usage: images/build.sh [--dry-run] [--image KEY]... [--versions ltsc2019,ltsc2022,...]
#                        [--registry REGISTRY] [--image-repo-list FILE] [--catalog FILE]
#
#   --dry-run            print the exact commands, run nothing (no docker needed)
#   --image KEY          build only this catalog image (repeatable, or a comma list); default: all own images
#   --versions LIST      Windows versions to build (default: every version the image lists)
#   --registry REGISTRY  push to this registry path instead of the catalog's winconRegistry
#   --image-repo-list F  override catalog registries (upstream KUBE_TEST_REPO_LIST format), e.g. the
#                        base image registry (microsoftRegistry) when it is mirrored
#   --catalog FILE       another catalog (default: images/catalog.yaml)
#
# Needs (unless --dry-run): docker 20.10+ with buildx, python3 with PyYAML; `docker login` to the registry.
# Exit codes: 0 done, 3 a docker command failed, 4 bad usage (as wincon's).
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
HELPER="images/lib/catalog.py"
EXIT_INFRA=3
EXIT_USAGE=4

dry_run=false
images=()
versions=""
registry=""
repo_list=""
catalog="images/catalog.yaml"

usage() { sed -n '2,/^set -o/p' "${BASH_SOURCE[0]}" | sed -e '/^set -o/d' -e 's/^# \{0,1\}//'; }
die_usage() { printf 'images/build.sh: error: %s\n  fix: %s\n' "$1" "$2" >&2; exit "${EXIT_USAGE}"; }
die_infra() { printf 'images/build.sh: error: %s\n  fix: %s\n' "$1" "$2" >&2; exit "${EXIT_INFRA}"; }

need_value() { [[ $# -ge 2 && -n "$2" && "$2" != --* ]] || die_usage "$1 needs a value" "see images/build.sh --help"; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) dry_run=true; shift ;;
    --image) need_value "$@"; IFS=',' read -r -a more <<<"$2"; images+=("${more[@]}"); shift 2 ;;
    --versions) need_value "$@"; versions="$2"; shift 2 ;;
    --registry) need_value "$@"; registry="$2"; shift 2 ;;
    --image-repo-list) need_value "$@"; repo_list="$(cd "$(dirname "$2")" && pwd -P)/$(basename "$2")"; shift 2 ;;
    --catalog) need_value "$@"; catalog="$(cd "$(dirname "$2")" && pwd -P)/$(basename "$2")"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die_usage "unknown option '$1'" "see images/build.sh --help" ;;
  esac
done

cd "${ROOT}"
command -v python3 >/dev/null || die_infra "python3 is not installed" "install python3 with PyYAML"

# Print a command the way it runs: words that need quoting are quoted for bash.
show() {
  local out="" word
  for word in "$@"; do
    if [[ "${word}" =~ ^[A-Za-z0-9_./:=@,+%-]+$ ]]; then out+="${word} "; elif [[ "${word}" != *"'"* ]]; then out+="'${word}' "; else out+="$(printf '%q' "${word}") "; fi
  done
  printf '%s\n' "${out% }"
}

# Run (or, with --dry-run, print) one command; a failure names the command.
run() {
  if ${dry_run}; then show "$@"; return 0; fi
  printf '+ %s\n' "$(show "$@")" >&2
  "$@" || die_infra "command failed: $(show "$@")" "read the output above; re-running build.sh is safe"
}

if ! ${dry_run}; then
  command -v docker >/dev/null || die_infra "docker is not installed" "install docker 20.10+ with the buildx plugin"
  docker buildx version >/dev/null 2>&1 || die_infra "docker buildx is not available" "install the docker buildx plugin"
  docker manifest --help >/dev/null 2>&1 || die_infra "docker manifest is not available" "use docker 20.10 or later"
fi

plan_args=(plan --catalog "${catalog}")
[[ -n "${repo_list}" ]] && plan_args+=(--image-repo-list "${repo_list}")
[[ -n "${registry}" ]] && plan_args+=(--registry "${registry}")
[[ ${#images[@]} -gt 0 ]] && plan_args+=(--images "$(IFS=','; echo "${images[*]}")")
[[ -n "${versions}" ]] && plan_args+=(--versions "${versions}")
plan="$(python3 "${HELPER}" "${plan_args[@]}")" || exit "${EXIT_USAGE}"

# Build records of the current image: "version build ref base dockerfile context args".
current_list=""
entries=()

finish_image() {
  [[ -n "${current_list}" ]] || return 0
  if [[ ${#entries[@]} -eq 0 ]]; then
    printf 'images/build.sh: %s has none of the requested versions; skipped\n' "${current_list}" >&2
    return 0
  fi
  local refs=() entry version build ref base var
  for entry in "${entries[@]}"; do
    IFS=$'\t' read -r version build ref base _ <<<"${entry}"
    refs+=("${ref}")
  done
  run docker manifest create --amend "${current_list}" "${refs[@]}"
  for entry in "${entries[@]}"; do
    IFS=$'\t' read -r version build ref base _ <<<"${entry}"
    var="os_version_${version}"
    if ${dry_run}; then
      # The printed lines are a runnable script: the $(...) and ${...} are meant literally.
      # shellcheck disable=SC2016
      printf '%s=$(docker manifest inspect %s | python3 %s os-version --build %s --ref %s)\n' \
        "${var}" "${base}" "${HELPER}" "${build}" "${base}"
      # shellcheck disable=SC2016
      printf 'docker manifest annotate --os windows --arch amd64 --os-version "${%s}" %s %s\n' \
        "${var}" "${current_list}" "${ref}"
    else
      local manifest os_version
      manifest="$(docker manifest inspect "${base}")" \
        || die_infra "cannot inspect base image ${base}" "check the registry is reachable and the tag exists"
      os_version="$(python3 "${HELPER}" os-version --build "${build}" --ref "${base}" <<<"${manifest}")" \
        || exit "${EXIT_INFRA}"
      run docker manifest annotate --os windows --arch amd64 --os-version "${os_version}" "${current_list}" "${ref}"
    fi
  done
  run docker manifest push --purge "${current_list}"
}

while IFS=$'\t' read -r kind key a b c d e f g; do
  case "${kind}" in
    image)
      finish_image
      current_list="${a}"
      entries=()
      ;;
    build)
      # a=version b=build c=ref d=base e=Dockerfile f=context g="K=V K=V"
      build_cmd=(docker buildx build --platform windows/amd64 --provenance=false --sbom=false --pull --push)
      read -r -a kv <<<"${g}"
      for arg in "${kv[@]}"; do build_cmd+=(--build-arg "${arg}"); done
      build_cmd+=(--label "org.opencontainers.image.version=${c##*:}" --label "io.wincon.image=${key}")
      build_cmd+=(--tag "${c}" --file "${e}" "${f}")
      run "${build_cmd[@]}"
      entries+=("${a}"$'\t'"${b}"$'\t'"${c}"$'\t'"${d}")
      ;;
    "") ;;
    *) die_infra "unexpected plan record '${kind}'" "report this bug" ;;
  esac
done <<<"${plan}"
finish_image
