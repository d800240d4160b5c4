#!/usr/bin/env bash
# Installs the Debian packages tally needs to build, test and run, but only
# those that are missing: dpkg -s first, apt-get only when something is absent.
# Usage: scripts/deps.sh [build|test|extra|bench|webbench|browser]
#   (test, extra and bench include build; webbench adds wrk and nginx for the
#   webhook benchmark, scripts/bench-webhook.sh; browser adds Debian's headless
#   Chromium and a font for the HTML report's browser test, tests/browser/)
# test also brings Debian's nodejs and npm for the manifest check (tests/cli/manifests.sh), unless a
# node of major version 18 or newer and an npm are already on PATH (whatever installed them).
set -euo pipefail
level=${1:-build}
# libmicrohttpd-dev: the HTTPS server of `tally serve` (its GnuTLS comes with it);
# libcurl4-openssl-dev: the Kubernetes API client of the live mode (src/kube/);
# libzip-dev: KAI snapshot ZIPs (src/kaisnap.c).
pkgs=(build-essential cmake pkg-config libfyaml-dev libmicrohttpd-dev libcurl4-openssl-dev libzip-dev)
case "$level" in
  build) ;;
  test) pkgs+=(libcmocka-dev jq openssl curl nodejs npm) ;;
  extra) pkgs+=(libcmocka-dev jq openssl curl clang libclang-rt-14-dev valgrind time) ;;
  bench) pkgs+=(libcmocka-dev jq openssl curl valgrind time hyperfine) ;;
  webbench) pkgs+=(wrk nginx openssl curl) ;;
  browser) pkgs+=(chromium fonts-dejavu-core) ;;
  *) echo "deps.sh: unknown level '$level' (build, test, extra, bench, webbench, browser)" >&2; exit 2 ;;
esac
# A node >= 18 with npm on PATH (Debian's or not) is enough: leave nodejs/npm out then.
node_ok() {
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || return 1
  local major
  major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null) || return 1
  [ "${major:-0}" -ge 18 ] 2>/dev/null
}
missing=()
for p in "${pkgs[@]}"; do
  case "$p" in nodejs|npm) node_ok && continue ;; esac
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "deps.sh: installing ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
