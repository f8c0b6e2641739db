#!/usr/bin/env bash
# The README's two commands as a fresh machine runs them (issue 41): a clean clone of this checkout's HEAD (or
# --ref REF) in a new temporary directory, with empty caches of its own (GOPATH, GOMODCACHE, GOCACHE,
# WINCON_CACHE, pip's and npm's caches) and no .venv, runs `bash .ci/run` there (set-up and build, `make main`,
# `make test`, each phase timed) under cluster names of its own, so a cluster already running here is untouched.
# It prints the phase times and the whole run's time, and removes the clone and its caches afterwards (--keep
# keeps them). What it cannot empty: Debian packages already installed on this machine (apt installs them once
# per machine; the first `make` on a new machine pays a few minutes more for them).
set -euo pipefail
usage() {
  cat <<'USAGE'
usage: ci/fresh-check.sh [--ref REF] [--keep] [--dry-run]
  --ref REF   the commit to check (default: HEAD of this checkout)
  --keep      keep the temporary clone and its caches (their path is printed)
  --dry-run   print what would run and exit
USAGE
}
ref=HEAD keep=0 dry=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --ref) ref=${2:?--ref needs a commit}; shift 2 ;;
    --keep) keep=1; shift ;;
    --dry-run) dry=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "fresh-check: unknown option $1" >&2; usage >&2; exit 4 ;;
  esac
done
repo=$(cd "$(dirname "$0")/.." && pwd)
commit=$(git -C "$repo" rev-parse --verify "$ref^{commit}")
# Short paths: a kubelet's unix sockets live under WINCON_CACHE/clusters/<name>/ and a socket path has at most 107
# bytes (the first run, under /tmp/wincon-fresh.XXXXXX/wincon-cache and fresh-<hex>-ipf, hit that limit: "bind: invalid
# argument" for the kubelet's pod-resources socket).
if [[ $dry -eq 1 ]]; then work=${FRESH_CHECK_DIR:-/tmp/wf.XXXXXX}; else work=${FRESH_CHECK_DIR:-$(mktemp -d /tmp/wf.XXXXXX)}; fi
suffix=$(printf '%s' "$work" | md5sum | cut -c1-6)
env_vars=(
  "GOPATH=$work/gopath" "GOMODCACHE=$work/gopath/pkg/mod" "GOCACHE=$work/gocache" "WINCON_CACHE=$work/c"
  "PIP_CACHE_DIR=$work/pip-cache" "npm_config_cache=$work/npm-cache"
  "CLUSTER=f$suffix" "WINCON_CLUSTER_NAME=ft$suffix" "CI=true"
)
if [[ $dry -eq 1 ]]; then
  echo "git clone --quiet $repo $work/wincon && git -C $work/wincon checkout --quiet $commit"
  echo "cd $work/wincon && env ${env_vars[*]} bash .ci/run"
  exit 0
fi
# shellcheck disable=SC2329  # invoked by the EXIT trap
cleanup() {
  if [[ $keep -eq 0 ]]; then
    chmod -R u+w "$work" 2>/dev/null || true  # the Go module cache is read-only
    rm -rf "$work"
  else
    echo "fresh-check: kept $work"
  fi
}
trap cleanup EXIT
git clone --quiet "$repo" "$work/wincon"
git -C "$work/wincon" checkout --quiet "$commit"
echo "fresh-check: $commit in $work/wincon, caches empty under $work"
began=$(date +%s)
status=0
(cd "$work/wincon" && env "${env_vars[@]}" bash .ci/run) || status=$?
echo "fresh-check: the README's two commands on empty caches took $(( $(date +%s) - began )) s (exit $status)"
exit "$status"
