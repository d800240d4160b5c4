#!/usr/bin/env bash
# End-to-end checks of `tally admit` for Queue, AccountedResource and Run
# reviews (contract section 5), run by ctest from the repository root:
#   bash tests/cli/admit.sh path/to/tally
set -u
TALLY=${1:?usage: admit.sh path/to/tally}
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# review KIND GROUP/VERSION OPERATION OBJECT [OLDOBJECT] [DRYRUN]
review() {
  local kind=$1 gv=$2 op=$3 obj=$4 old=${5:-null} dry=${6:-false}
  local group=${gv%/*} version=${gv#*/}
  printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"uid-%s","kind":{"group":"%s","version":"%s","kind":"%s"},"operation":"%s","dryRun":%s,"object":%s,"oldObject":%s}}' \
    "$kind-$op" "$group" "$version" "$kind" "$op" "$dry" "$obj" "$old"
}

# expect NAME ALLOWED MESSAGE-SUBSTRING STATE... < review
expect() {
  local name=$1 allowed=$2 msg=$3
  shift 3
  local out rc
  out=$("$TALLY" admit "$@" 2>"$tmp/err"); rc=$?
  [ "$rc" -eq 0 ] || { bad "$name: exit $rc ($(cat "$tmp/err"))"; return; }
  local got_uid got_allowed got_msg got_code got_reason
  got_uid=$(jq -r .response.uid <<<"$out")
  got_allowed=$(jq -r .response.allowed <<<"$out")
  got_msg=$(jq -r '.response.status.message // ""' <<<"$out")
  [[ "$got_uid" == uid-* ]] && ok || bad "$name: uid not echoed ($got_uid)"
  [ "$got_allowed" == "$allowed" ] && ok || bad "$name: allowed=$got_allowed, want $allowed ($got_msg)"
  if [ "$allowed" == false ]; then
    got_code=$(jq -r .response.status.code <<<"$out")
    got_reason=$(jq -r .response.status.reason <<<"$out")
    [ "$got_code" == 403 ] && [ "$got_reason" == Forbidden ] && ok || bad "$name: status $got_code $got_reason"
  fi
  [[ "$got_msg" == *"$msg"* ]] && ok || bad "$name: message '$got_msg' lacks '$msg'"
  printf '%s' "$out" > "$tmp/last.json"
}

RUN='{"apiVersion":"kruntimes.io/v1alpha1","kind":"Run","metadata":{"name":"r1","namespace":"default"},"spec":{"runtime":"python","resources":{"requests":{"runs":"%s"}},"mode":{"task":{"args":["x"]}}}}'
run() { printf "$RUN" "$1"; }

expect run-create-valid true "" examples/cluster < <(review Run kruntimes.io/v1alpha1 CREATE "$(run 1)")
expect run-create-1k true "" examples/cluster < <(review Run kruntimes.io/v1alpha1 CREATE "$(run 1k)")
expect run-create-milli false 'spec.resources.requests.runs: resource request "runs" must be a non-negative integer' examples/cluster < <(review Run kruntimes.io/v1alpha1 CREATE "$(run 2000m)")
expect run-create-decimal false 'must be a non-negative integer' examples/cluster < <(review Run kruntimes.io/v1alpha1 CREATE "$(run 1.0)")
expect run-create-negative false 'must be a non-negative integer' examples/cluster < <(review Run kruntimes.io/v1alpha1 CREATE "$(run -1)")
expect run-update-resources false 'spec.resources: is immutable after Run creation' examples/cluster < <(review Run kruntimes.io/v1alpha1 UPDATE "$(run 2)" "$(run 1)")
expect run-update-same true "" examples/cluster < <(review Run kruntimes.io/v1alpha1 UPDATE "$(run 1)" "$(run 1)")
expect run-dry-run-same-decision true "" examples/cluster < <(review Run kruntimes.io/v1alpha1 UPDATE "$(run 1)" "$(run 1)" true)
expect run-dry-run-denied false 'immutable' examples/cluster < <(review Run kruntimes.io/v1alpha1 UPDATE "$(run 2)" "$(run 1)" true)

Q='{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"team-z"},"spec":{"parentQueue":"research","resources":{"cpu":{"quota":-1,"limit":-1},"memory":{"quota":-1,"limit":-1},"gpu":{"quota":-1,"limit":-1}},"accountedResources":%s}}'
expect queue-valid true "" examples/cluster < <(review Queue scheduling.run.ai/v2 CREATE "$(printf "$Q" '[{"resourceRef":"gpu-h200","limit":"4"}]')")
expect queue-missing-accres false 'spec.accountedResources[0].resourceRef: AccountedResource "gpu-b300" does not exist' examples/cluster < <(review Queue scheduling.run.ai/v2 CREATE "$(printf "$Q" '[{"resourceRef":"gpu-b300","limit":"4"}]')")
expect queue-duplicate-ref false 'spec.accountedResources[1].resourceRef: duplicate resourceRef "gpu"' examples/cluster < <(review Queue scheduling.run.ai/v2 CREATE "$(printf "$Q" '[{"resourceRef":"gpu","limit":"4"},{"resourceRef":"gpu","limit":"8"}]')")
expect queue-missing-parent false 'parent queue "nowhere" does not exist' examples/cluster < <(review Queue scheduling.run.ai/v2 CREATE '{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"orphan"},"spec":{"parentQueue":"nowhere","resources":{"cpu":{"quota":1,"limit":1},"memory":{"quota":1,"limit":1},"gpu":{"quota":1,"limit":1}}}}')
# KAI's queue webhook: a Queue without spec.resources is denied (contract section 5), CREATE and UPDATE.
expect queue-no-resources false "resources must be specified" examples/cluster < <(review Queue scheduling.run.ai/v2 CREATE '{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"bare"},"spec":{}}')
jq -e '.response.status.message == "resources must be specified"' "$tmp/last.json" >/dev/null && ok || bad "queue-no-resources: not KAI's message"
expect queue-update-no-resources false "resources must be specified" examples/cluster < <(review Queue scheduling.run.ai/v2 UPDATE '{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"team-a"},"spec":{"parentQueue":"research"}}' '{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"team-a"},"spec":{"parentQueue":"research"}}')
# DELETE of a queue: denied while it has children (KAI's message, children in name order), else allowed.
qdel() { printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"uid-Queue-DELETE","kind":{"group":"scheduling.run.ai","version":"v2","kind":"Queue"},"operation":"DELETE","name":"%s","object":null,"oldObject":{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"%s"}}}}' "$1" "$1"; }
expect queue-delete-parent false "cannot delete queue research: it has child queues [team-a team-b]" examples/cluster < <(qdel research)
jq -e '.response.status.message == "cannot delete queue research: it has child queues [team-a team-b]"' "$tmp/last.json" >/dev/null && ok || bad "queue-delete-parent: not KAI's message"
expect queue-delete-leaf true "" examples/cluster < <(qdel team-a)
jq -e '(.response.warnings // []) | length == 0' "$tmp/last.json" >/dev/null && ok || bad "queue-delete-leaf: decided, so no 'does not decide' warning"

AR='{"apiVersion":"scheduling.run.ai/v1alpha1","kind":"AccountedResource","metadata":{"name":"x"},"spec":{"sources":[%s]}}'
expect accres-valid true "" examples/cluster < <(review AccountedResource scheduling.run.ai/v1alpha1 CREATE "$(printf "$AR" '{"resourceName":"nvidia.com/gpu","match":{"nodeLabels":{"nvidia.com/gpu.product":"B300"}}}')")
expect accres-two-sources false 'spec.sources[0]: must set exactly one of resourceName, dra, podAnnotation' examples/cluster < <(review AccountedResource scheduling.run.ai/v1alpha1 CREATE "$(printf "$AR" '{"resourceName":"nvidia.com/gpu","dra":{"deviceClassName":"gpu.nvidia.com"}}')")

# Kinds tally does not decide are allowed with a warning.
expect other-kind true "" examples/cluster < <(review Deployment apps/v1 CREATE '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}}')
jq -e '.response.warnings[0] | test("tally does not decide")' "$tmp/last.json" >/dev/null && ok || bad "other-kind: no warning"

# Not an AdmissionReview: exit 1, nothing on stdout.
out=$(echo '{"kind":"Pod"}' | "$TALLY" admit examples/cluster 2>/dev/null); rc=$?
[ "$rc" -eq 1 ] && [ -z "$out" ] && ok || bad "not a review: exit $rc '$out'"
out=$(echo 'not json at all: [' | "$TALLY" admit 2>/dev/null); rc=$?
[ "$rc" -eq 1 ] && ok || bad "garbage: exit $rc"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
