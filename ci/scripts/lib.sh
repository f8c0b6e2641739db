# shellcheck shell=bash
# Shared helpers of the ci/scripts: printing or running commands (--dry-run), secret redaction,
# option checks and wincon's exit codes. Source it; it defines functions and constants only.

# Exit codes, as wincon's (wincon/commandline/errors.py).
readonly EXIT_OK=0 EXIT_TESTS_FAILED=1 EXIT_INTERRUPTED=2 EXIT_INFRA=3 EXIT_USAGE=4 EXIT_NO_TESTS=5 EXIT_PUBLISH=9
export EXIT_OK EXIT_TESTS_FAILED EXIT_INTERRUPTED EXIT_INFRA EXIT_USAGE EXIT_NO_TESTS EXIT_PUBLISH

# Environment variables whose values never appear in anything these scripts print.
WINCON_SECRET_VARS=(
  AKS_WINDOWS_ADMIN_PASSWORD AZURE_CLIENT_SECRET ARM_CLIENT_SECRET AZURE_CLIENT_CERTIFICATE_PASSWORD
  GOOGLE_OAUTH_ACCESS_TOKEN CLOUDSDK_AUTH_ACCESS_TOKEN WINCON_ALLURE_PASSWORD GITHUB_TOKEN AZURE_FEDERATED_TOKEN
)

DRY_RUN=${DRY_RUN:-false}
SCRIPT_NAME=${SCRIPT_NAME:-$(basename "$0")}

log() { printf '%s: %s\n' "${SCRIPT_NAME}" "$*" >&2; }
# deprecated OLD NEW: an old spelling of an option, still taken for one release, says which to use (docs/options.md).
deprecated() { printf '%s: warning: %s is deprecated, use %s (the old spelling goes in a later release)\n' \
  "${SCRIPT_NAME}" "$1" "$2" >&2; }

# usage: the running script's header comment (from line 2 up to its `set -o` line).
usage() { sed -n '2,/^set -o/p' "$0" | sed -e '/^set -o/d' -e 's/^# \{0,1\}//'; }

check_action() { # check_action ACTION: a cluster script's up|down|logs|check; --help prints the usage
  case "$1" in
    up|down|logs|check) ;;
    -h|--help) usage; exit 0 ;;
    *) die "${EXIT_USAGE}" "unknown action '$1'" "use up, down, logs or check" ;;
  esac
}

die() { # die CODE MESSAGE FIX
  printf '%s: error: %s\n' "${SCRIPT_NAME}" "$2" >&2
  [[ -n "${3:-}" ]] && printf '  fix: %s\n' "$3" >&2
  exit "$1"
}

need_value() { # need_value OPTION "$@"-rest: the option must be followed by a value
  [[ $# -ge 2 && -n "$2" && "$2" != --* ]] || die "${EXIT_USAGE}" "$1 needs a value" "see ${SCRIPT_NAME} --help"
}

# redact TEXT: replace the value of every secret variable that is set (and not trivially short).
redact() {
  local text=$1 name value
  for name in "${WINCON_SECRET_VARS[@]}"; do
    value=${!name:-}
    if [[ ${#value} -ge 4 ]]; then
      text=${text//"${value}"/<redacted:${name}>}
    fi
  done
  printf '%s' "${text}"
}

# show WORD...: the command as one line of bash, quoted where needed, secrets redacted.
show() {
  local out="" word clean
  for word in "$@"; do
    clean=$(redact "${word}")
    if [[ "${clean}" != "${word}" ]]; then
      out+="'${clean}' "
    elif [[ "${word}" =~ ^[A-Za-z0-9_./:=@,+%-]+$ ]]; then
      out+="${word} "
    elif [[ "${word}" != *"'"* ]]; then
      out+="'${word}' "
    else
      out+="$(printf '%q' "${word}") "
    fi
  done
  printf '%s\n' "${out% }"
}

# run WORD...: with DRY_RUN=true print the command on stdout; else log it on stderr and run it.
run() {
  if [[ "${DRY_RUN}" == true ]]; then
    show "$@"
    return 0
  fi
  printf '+ %s' "$(show "$@")" >&2
  printf '\n' >&2
  in_background "$@"
}

# in_background WORD...: run a command as a child and wait for it. Bash runs a trap only once the
# foreground command ends, so an hour-long pytest would delay the teardown on SIGTERM; `wait` returns
# at once instead, and the trap forwards the signal to the child (stop_child).
WINCON_CHILD=""
in_background() {
  local rc=0
  "$@" &
  WINCON_CHILD=$!
  wait "${WINCON_CHILD}" || rc=$?
  WINCON_CHILD=""
  return "${rc}"
}

# stop_child [SECONDS]: send SIGTERM to the running child (wincon cleans its namespaces on it) and wait
# for it to end, at most SECONDS (default 60); then SIGKILL.
stop_child() {
  local pid=${WINCON_CHILD} waited=0
  [[ -n "${pid}" ]] || return 0
  kill -TERM "${pid}" 2>/dev/null || return 0
  while kill -0 "${pid}" 2>/dev/null && (( waited < ${1:-60} )); do
    sleep 1
    waited=$((waited + 1))
  done
  kill -KILL "${pid}" 2>/dev/null || true
  WINCON_CHILD=""
}

# try WORD...: like run, but a failure is logged and returned instead of stopping the script.
try() {
  local rc=0
  run "$@" || rc=$?
  [[ ${rc} -eq 0 ]] || log "exit ${rc}: $(show "$@")"
  return "${rc}"
}

# require_tools TOOL...: outside --dry-run, each tool must be installed.
require_tools() {
  [[ "${DRY_RUN}" == true ]] && return 0
  local tool
  for tool in "$@"; do
    command -v "${tool}" >/dev/null 2>&1 || die "${EXIT_INFRA}" "${tool} is not installed" "install ${tool}, or use --dry-run to see the commands"
  done
}

# require_env VAR...: outside --dry-run, each variable must be set (its value is never printed).
require_env() {
  [[ "${DRY_RUN}" == true ]] && return 0
  local name
  for name in "$@"; do
    [[ -n "${!name:-}" ]] || die "${EXIT_USAGE}" "environment variable ${name} is not set" "export ${name}=... (see docs/clouds.md)"
  done
}

# windows_build VERSION: the OS build of a supported Windows Server version (images/catalog.yaml).
windows_build() {
  case "$1" in
    ltsc2019) echo 17763 ;;
    ltsc2022) echo 20348 ;;
    ltsc2025) echo 26100 ;;
    *) die "${EXIT_USAGE}" "unknown Windows version '$1'" "use ltsc2019, ltsc2022 or ltsc2025" ;;
  esac
}
