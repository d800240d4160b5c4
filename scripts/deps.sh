#!/usr/bin/env bash
# Installs the Debian packages tally needs to build, test and run, but only
# those that are missing: dpkg -s first, apt-get only when something is absent.
# Usage: scripts/deps.sh [build|test|extra|bench|webbench|browser]
#   (test, extra and bench include build; webbench adds wrk and nginx for the
#   webhook benchmark, scripts/bench-webhook.sh; browser adds Debian's headless
#   Chromium and a font for the HTML report's browser test, tests/browser/)
set -euo pipefail
level=${1:-build}
# libmicrohttpd-dev: the HTTPS server of `tally serve` (its GnuTLS comes with it).
pkgs=(build-essential cmake pkg-config libfyaml-dev libmicrohttpd-dev)
case "$level" in
  build) ;;
  test) pkgs+=(libcmocka-dev jq openssl curl) ;;
  extra) pkgs+=(libcmocka-dev jq openssl curl clang libclang-rt-14-dev valgrind time) ;;
  bench) pkgs+=(libcmocka-dev jq openssl curl valgrind time hyperfine) ;;
  webbench) pkgs+=(wrk nginx openssl curl) ;;
  browser) pkgs+=(chromium fonts-dejavu-core) ;;
  *) echo "deps.sh: unknown level '$level' (build, test, extra, bench, webbench, browser)" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
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
