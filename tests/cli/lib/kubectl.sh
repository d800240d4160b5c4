# tests/cli/lib/kubectl.sh: sourced by the command-line tests that drive the real kubectl.
#
# tally_kubectl READY_JSON: prints the kubectl to call against the test API server whose ready.json
# is READY_JSON. $KUBECTL when it is set. Otherwise, where `kubectl` on PATH is a version dispatcher
# with kubectl.MAJOR.MINOR binaries next to it (the Google Cloud SDK's, as on this machine), the one
# the dispatcher would run for that server's /version: the same kubectl, without the dispatcher's own
# process and /version request on every call (together they cost as much CPU as kubectl itself, and
# the polling in these tests calls it hundreds of times). Else plain `kubectl`.
tally_kubectl() {
  if [ -n "${KUBECTL:-}" ]; then
    echo "$KUBECTL"
    return
  fi
  local real url mm
  real=$(readlink -f "$(command -v kubectl)" 2>/dev/null) || { echo kubectl; return; }
  url=$(jq -r .url "$1" 2>/dev/null)
  mm=$(curl -sSk --max-time 10 "$url/version" 2>/dev/null | jq -r '.major + "." + .minor' 2>/dev/null)
  if [ -n "$mm" ] && [ -x "$(dirname "$real")/kubectl.$mm" ]; then
    echo "$(dirname "$real")/kubectl.$mm"
  else
    echo kubectl
  fi
}
