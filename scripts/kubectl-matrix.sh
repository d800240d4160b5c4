#!/usr/bin/env bash
# tests/cli/kube_apiserver.sh (the test API server against kubectl) with every versioned kubectl
# on this machine (kubectl.1.NN next to the kubectl on PATH, e.g. /usr/lib/google-cloud-sdk/bin),
# with the slower checks on (KUBE_FULL=1) and the server's own tests once, at the end.
#   scripts/kubectl-matrix.sh [KUBECTL...]
# Exits 1 when any version fails.
set -u
cd "$(dirname "$0")/.." || exit 1
if [ $# -gt 0 ]; then
  bins=("$@")
else
  dir=$(dirname "$(readlink -f "$(command -v kubectl)")")
  mapfile -t bins < <(ls "$dir"/kubectl.1.* 2>/dev/null | sort -t. -k3 -n)
fi
[ ${#bins[@]} -gt 0 ] || { echo "kubectl-matrix: no versioned kubectl found"; exit 1; }
failed=()
for k in "${bins[@]}"; do
  echo "=== $k"
  if ! KUBECTL="$k" KUBE_FULL=1 KUBE_UNIT=0 timeout 600 bash tests/cli/kube_apiserver.sh; then
    failed+=("$k")
  fi
done
echo "=== server tests"
timeout 300 python3 tests/kube/run_tests.py || failed+=("tests/kube/run_tests.py")
if [ ${#failed[@]} -gt 0 ]; then
  echo "kubectl-matrix: FAILED: ${failed[*]}"
  exit 1
fi
echo "kubectl-matrix: all ${#bins[@]} kubectl versions passed"
