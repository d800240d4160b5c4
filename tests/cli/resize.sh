#!/usr/bin/env bash
# End-to-end checks of `tally admit` for in-place pod resizes (UPDATE pods/resize;
# contract section 5, docs/resize.md), run by ctest from the repository root:
#   bash tests/cli/resize.sh path/to/tally
# Each case is a directory tests/resize/<case>/ with state.yaml (the state, its
# header comment derives the expectation) and review.json (the AdmissionReview).
# The expectations below were derived by hand from the rules, not from tally.
set -u
TALLY=${1:?usage: resize.sh path/to/tally}
DIR=tests/resize
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
declare -A seen

# run CASE: admits the case's review against its state into $tmp/CASE.json.
run() {
  local c=$1 rc
  seen[$c]=1
  if [ ! -f "$DIR/$c/state.yaml" ] || [ ! -f "$DIR/$c/review.json" ]; then
    bad "$c: no such case in $DIR"
    return 1
  fi
  "$TALLY" admit "$DIR/$c/state.yaml" <"$DIR/$c/review.json" >"$tmp/$c.json" 2>"$tmp/$c.err"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    bad "$c: exit $rc ($(head -c 300 "$tmp/$c.err"))"
    return 1
  fi
  if ! jq -e . "$tmp/$c.json" >/dev/null 2>&1; then
    bad "$c: stdout is not JSON"
    return 1
  fi
  local uid
  uid=$(jq -r .response.uid "$tmp/$c.json")
  [ "$uid" == "resize-$c" ] && ok || bad "$c: uid '$uid', want 'resize-$c'"
}

field() { jq -r "$2" "$tmp/$1.json"; }

# deny CASE EXACT-MESSAGE
deny() {
  local c=$1 want=$2
  run "$c" || return
  local allowed code reason msg
  allowed=$(field "$c" .response.allowed)
  code=$(field "$c" '.response.status.code // ""')
  reason=$(field "$c" '.response.status.reason // ""')
  msg=$(field "$c" '.response.status.message // ""')
  [ "$allowed" == false ] && ok || { bad "$c: allowed=$allowed, want false"; return; }
  [ "$code" == 403 ] && [ "$reason" == Forbidden ] && ok || bad "$c: status $code $reason, want 403 Forbidden"
  [ "$msg" == "$want" ] && ok || bad "$c: message
     got:  $msg
     want: $want"
}

# deny_has CASE SUBSTRING... : denied, the message holds every substring
deny_has() {
  local c=$1
  shift
  run "$c" || return
  local allowed msg
  allowed=$(field "$c" .response.allowed)
  msg=$(field "$c" '.response.status.message // ""')
  [ "$allowed" == false ] && ok || { bad "$c: allowed=$allowed, want false"; return; }
  [ "$(field "$c" .response.status.code)" == 403 ] && [ "$(field "$c" .response.status.reason)" == Forbidden ] \
    && ok || bad "$c: not 403 Forbidden"
  for s in "$@"; do
    [[ "$msg" == *"$s"* ]] && ok || bad "$c: message '$msg' lacks '$s'"
  done
}

# allow CASE : allowed, no status
allow() {
  local c=$1
  run "$c" || return
  local allowed
  allowed=$(field "$c" .response.allowed)
  [ "$allowed" == true ] && ok || { bad "$c: allowed=$allowed, want true ($(field "$c" '.response.status.message // ""'))"; return; }
  [ "$(field "$c" '.response.status // "none"')" == none ] && ok || bad "$c: allowed but has a status"
}

# allow_warn CASE SUBSTRING... : allowed, and one warning holds every substring
allow_warn() {
  local c=$1
  shift
  allow "$c"
  [ -f "$tmp/$c.json" ] || return
  local w
  w=$(field "$c" '(.response.warnings // []) | join("\n")')
  local hit=0 line s all
  while IFS= read -r line; do
    all=1
    for s in "$@"; do [[ "$line" == *"$s"* ]] || all=0; done
    [ "$all" -eq 1 ] && hit=1
  done <<<"$w"
  [ "$hit" -eq 1 ] && ok || bad "$c: no warning with: $* (warnings: ${w:-none})"
}

P='resize rejected: pod team-a/trainer (PodGroup pg-trainer)'
SEED="$P CPU upsize would push queue team-a Allocated (1000m + 2000m) over limit (2000m)"

# Charge table: no resize in progress -> spec.
deny none-over-limit "$SEED"
# Quantities tally cannot hold exactly are a denial that says so; one past 64 bits prints whole.
TOO='is too large (expected a Kubernetes quantity such as 500m, 4Gi, 2); tally cannot decide this resize exactly'
deny cpu-unrepresentable "resize rejected: request.object spec.containers[0].resources.requests.cpu: \"2e29\" $TOO"
deny cpu-1e308 "resize rejected: request.object spec.containers[0].resources.requests.cpu: \"1e308\" $TOO"
deny cpu-past-64-bits "$P CPU upsize would push queue team-a Allocated (1000m + 9999999999999999999000m) over limit (2000m)"
allow none-equal-limit
allow foreign-resource-names
deny none-one-milli-over "$P CPU upsize would push queue team-a Allocated (1000m + 1001m) over limit (2000m)"
# Pending or in progress -> max(spec, actual, allocated).
deny pending-deferred "$P CPU upsize would push queue team-a Allocated (2000m + 1000m) over limit (2500m)"
deny pending-unobserved "$P CPU upsize would push queue team-a Allocated (2000m + 1000m) over limit (2500m)"
deny in-progress-downsize-then-upsize "$P CPU upsize would push queue team-a Allocated (2500m + 500m) over limit (2800m)"
allow in-progress-downsize-back-up
deny in-progress-allocated-term "$P CPU upsize would push queue team-a Allocated (2000m + 500m) over limit (2400m)"
# Infeasible -> actual only.
deny infeasible-over "$P CPU upsize would push queue team-a Allocated (1500m + 1000m) over limit (2000m)"
allow infeasible-fits
# Pod-level delta: redistribution, downsizes, sidecars, init containers.
allow redistribute-full-queue
deny redistribute-plus-growth "$P CPU upsize would push queue team-a Allocated (2000m + 500m) over limit (2000m)"
allow downsize-over-limit
allow downsize-cpu-and-memory
deny sidecar-upsize "$P CPU upsize would push queue team-a Allocated (1500m + 1000m) over limit (2000m)"
allow init-container-keeps-spec
deny init-container-peak-exceeded "$P CPU upsize would push queue team-a Allocated (3000m + 1000m) over limit (3500m)"
# Hierarchy.
deny hierarchy-ancestor-limit "$P CPU upsize would push queue dept Allocated (2500m + 1000m) over limit (3000m)"
deny hierarchy-skips-queue-without-resources "$P CPU upsize would push queue org Allocated (2500m + 1000m) over limit (2000m)"
deny hierarchy-leaf-quota-before-parent-limit "$P CPU upsize would push queue team-a AllocatedNonPreemptible (1000m + 1000m) over quota (1200m)"
# Memory, in bytes (queue memory is MB = 10^6 bytes).
deny memory-over-limit "$P memory upsize would push queue team-a Allocated (2147483648 + 2147483648 bytes) over limit (4000000000 bytes)"
allow memory-mb-is-1e6
deny memory-mb-one-under "$P memory upsize would push queue team-a Allocated (2147483648 + 2147483648 bytes) over limit (4294000000 bytes)"
deny cpu-before-memory "$P CPU upsize would push queue team-a Allocated (1000m + 1000m) over limit (1500m)"
# Quota: non-preemptible pods only.
deny quota-priorityclass-100 "$P CPU upsize would push queue team-a AllocatedNonPreemptible (1200m + 1000m) over quota (1500m)"
deny quota-preemptibility-field "$P CPU upsize would push queue team-a AllocatedNonPreemptible (1200m + 1000m) over quota (1500m)"
allow quota-priorityclass-99
allow quota-explicit-preemptible
allow quota-equal
deny limit-before-quota "$P CPU upsize would push queue team-a Allocated (1000m + 1000m) over limit (1500m)"
deny quota-memory "$P memory upsize would push queue team-a AllocatedNonPreemptible (1000000000 + 1000000000 bytes) over quota (1500000000 bytes)"
# Bounds: -1 unbounded, other values bounds (negative memory: unbounded).
deny cpu-limit-zero "$P CPU upsize would push queue team-a Allocated (1000m + 1000m) over limit (0m)"
deny cpu-limit-omitted "$P CPU upsize would push queue team-a Allocated (1000m + 1000m) over limit (0m)"
deny cpu-limit-minus-two "$P CPU upsize would push queue team-a Allocated (1000m + 1000m) over limit (-2m)"
allow unbounded
allow memory-limit-negative
deny memory-limit-zero "$P memory upsize would push queue team-a Allocated (1073741824 + 1073741824 bytes) over limit (0 bytes)"
# Config switches.
allow config-validate-quota-false
allow config-validate-quota-false-ignores-block
deny config-validate-quota-true "$SEED"
deny strict-finite-limit "$P CPU upsize not permitted on queue team-a with finite CPU limit (100000m)"
deny strict-finite-quota-non-preemptible "$P non-preemptible CPU upsize not permitted on queue team-a with finite CPU quota (50000m)"
allow strict-finite-quota-preemptible
allow strict-unbounded
allow strict-other-resource-bounded
deny strict-memory-limit "$P memory upsize not permitted on queue team-a with finite memory limit (8000000000 bytes)"
deny strict-ancestor "$P CPU upsize not permitted on queue dept with finite CPU limit (64000m)"
allow strict-downsize
# Which queue; lookup failures admit with a warning; foreign pods.
deny no-annotation-queue-label "resize rejected: pod team-a/trainer (PodGroup <none>) CPU upsize would push queue team-a Allocated (1000m + 2000m) over limit (2000m)"
deny no-annotation-default-queue "resize rejected: pod team-a/trainer (PodGroup <none>) CPU upsize would push queue default-queue Allocated (1000m + 1000m) over limit (1500m)"
deny podgroup-queue-beats-label "$SEED"
allow_warn podgroup-missing pg-gone team-a/trainer
allow_warn queue-missing ghost team-a/trainer
allow not-kai-scheduler
# GPU cannot be resized in place.
deny_has gpu-change "resize rejected: pod team-a/trainer" nvidia.com/gpu
allow gpu-unchanged
# Nor can one extended resource be swapped for another (old and new each hold one).
deny extended-resource-swap "resize rejected: pod team-a/trainer: only cpu and memory can be resized in place, but example.com/dev-a of container main changes"
# Usage comes from the bound pods of the state, with the reviewed pod as oldObject.
deny usage-ignores-status-low "$P CPU upsize would push queue team-a Allocated (1800m + 500m) over limit (2000m)"
allow usage-ignores-status-high
allow usage-bound-pods-only
deny stale-copy-replaced "$P CPU upsize would push queue team-a Allocated (1500m + 1000m) over limit (2400m)"
deny pod-not-in-state "$SEED"
deny usage-other-pods-mid-resize "$P CPU upsize would push queue team-a Allocated (3000m + 1000m) over limit (3500m)"
# A pod that is not bound holds nothing: its resize is admitted unchecked, strict mode or not (issue 15 item 9).
allow unbound-pod-admitted
allow unbound-pod-strict-admitted
# Preemptibility from the pod's own class, or the globalDefault class.
deny no-annotation-pod-priorityclass "resize rejected: pod team-a/trainer (PodGroup <none>) CPU upsize would push queue team-a AllocatedNonPreemptible (1000m + 1000m) over quota (1500m)"
deny quota-global-default "$P CPU upsize would push queue team-a AllocatedNonPreemptible (1000m + 1000m) over quota (1500m)"
allow strict-redistribute
# An ancestor that cannot be looked up: admitted with a warning.
allow_warn ancestor-queue-missing missing-dept
# Dry run: the same decision, the same response apart from the uid.
deny dry-run-denied "$SEED"
allow dry-run-admitted
for pair in dry-run-denied:none-over-limit dry-run-admitted:none-equal-limit; do
  a=${pair%%:*} b=${pair#*:}
  if [ -f "$tmp/$a.json" ] && [ -f "$tmp/$b.json" ]; then
    [ "$(jq -S 'del(.response.uid)' "$tmp/$a.json")" == "$(jq -S 'del(.response.uid)' "$tmp/$b.json")" ] \
      && ok || bad "$a: response differs from $b's"
  fi
done

# Every case directory has an expectation above.
for d in "$DIR"/*/; do
  c=$(basename "$d")
  [ -n "${seen[$c]:-}" ] || bad "$c: case directory without an expectation in tests/cli/resize.sh"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
