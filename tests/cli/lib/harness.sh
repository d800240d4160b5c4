# tests/cli/lib/harness.sh: the frame the newer command-line tests share, sourced after `set -u`:
#   source tests/cli/lib/harness.sh NAME TOOL...
# gives the pass/fail counters and ok/bad, a temp dir $tmp, the array pids (every process in it
# is killed with SIGKILL on exit, and $tmp removed), and checks that each TOOL is on PATH.
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
pids=()
harness_cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap harness_cleanup EXIT
harness_name=$1
shift
for tool in "$@"; do
  command -v "$tool" >/dev/null || { echo "$harness_name: $tool is missing (scripts/deps.sh test)"; exit 1; }
done
