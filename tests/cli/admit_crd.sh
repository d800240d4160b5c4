#!/usr/bin/env bash
# admit_crd.sh: `tally admit` and `tally serve` check a reviewed Queue or Run against the
# CustomResourceDefinition of its kind when the state holds one, as the API server would before
# any webhook (docs/admit.md, "Objects of a CRD in the state"): schema and unknown fields, CEL
# rules with the CRD's message, transition rules (oldSelf) on UPDATE, validation ratcheting of
# unchanged values, and a rule tally cannot evaluate as a warning, never a pass or a refusal.
# The CRDs are tests/admit-crd/ (written for this test); the rest of the state is examples/cluster.
#   bash tests/cli/admit_crd.sh path/to/tally
set -u
TALLY=$(realpath "${1:?usage: admit_crd.sh path/to/tally}")
source tests/cli/lib/harness.sh admit_crd.sh jq curl openssl
STATE=(examples/cluster tests/admit-crd)

# review KIND GROUP/VERSION OPERATION OBJECT [OLDOBJECT]: an AdmissionReview on stdout.
review() {
  local kind=$1 gv=$2 op=$3 obj=$4 old=${5:-null}
  printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"uid-%s","kind":{"group":"%s","version":"%s","kind":"%s"},"operation":"%s","object":%s,"oldObject":%s}}' \
    "$kind-$op" "${gv%/*}" "${gv#*/}" "$kind" "$op" "$obj" "$old"
}

# run SPEC-MEMBERS: a Run with spec {runtime: python, mode.task, ...SPEC-MEMBERS}.
run() {
  printf '{"apiVersion":"kruntimes.io/v1alpha1","kind":"Run","metadata":{"name":"r1","namespace":"default"},"spec":{"runtime":"python","mode":{"task":{"args":["x"]}}%s}}' "${1:+,$1}"
}

# expect NAME ALLOWED MESSAGE WARNING STATE... < review: allowed as given, the denial message
# containing MESSAGE and some warning containing WARNING (either may be "").
expect() {
  local name=$1 allowed=$2 msg=$3 warning=$4
  shift 4
  "$TALLY" admit "$@" >"$tmp/out.json" 2>"$tmp/err" || { bad "$name: exit $? ($(cat "$tmp/err"))"; return; }
  local got_allowed got_msg
  got_allowed=$(jq -r .response.allowed "$tmp/out.json")
  got_msg=$(jq -r '.response.status.message // ""' "$tmp/out.json")
  [ "$got_allowed" == "$allowed" ] && ok || bad "$name: allowed=$got_allowed, want $allowed ($got_msg)"
  [[ "$got_msg" == *"$msg"* ]] && ok || bad "$name: message '$got_msg' lacks '$msg'"
  if [ -n "$warning" ]; then
    jq -e --arg w "$warning" '[.response.warnings[]? | contains($w)] | any' "$tmp/out.json" >/dev/null \
      && ok || bad "$name: no warning with '$warning' ($(jq -c .response.warnings "$tmp/out.json"))"
  fi
}

R=kruntimes.io/v1alpha1
review Run $R CREATE "$(run)" >"$tmp/valid.json"
review Run $R CREATE "$(run '"source":{"inline":"print(1)","repoURL":"https://example.com/r.git"}')" >"$tmp/inline.json"
review Run $R CREATE "$(run '"source":{"commitSHA":"abc"}')" >"$tmp/sha.json"
review Run $R CREATE '{"apiVersion":"kruntimes.io/v1alpha1","kind":"Run","metadata":{"name":"r1","namespace":"default"},"spec":{"runtime":"python","mode":{"task":{},"function":{"handler":"h"}}}}' >"$tmp/both.json"
review Run $R CREATE "$(run '"args":["--fast"]')" >"$tmp/unknown.json"
review Run $R UPDATE "$(run '"cancelRequested":false')" "$(run '"cancelRequested":true')" >"$tmp/uncancel.json"
review Run $R UPDATE "$(run '"cancelRequested":true')" "$(run '"cancelRequested":false')" >"$tmp/cancel.json"
review Run $R UPDATE "$(run '"source":{"repoURL":"https://example.com/r.git"}')" "$(run)" >"$tmp/addsource.json"
review Run $R UPDATE "$(run '"priority":20,"cancelRequested":true')" "$(run '"priority":20')" >"$tmp/ratchet.json"
review Run $R UPDATE "$(run '"priority":30')" "$(run '"priority":20')" >"$tmp/raise.json"
review Run $R CREATE "$(run '"priority":20')" >"$tmp/high.json"
Q='{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"team-z"},"spec":{"parentQueue":"research","resources":{"cpu":{"quota":-1,"limit":-1},"memory":{"quota":-1,"limit":-1},"gpu":{"quota":-1,"limit":-1}}%s}}'
review Queue scheduling.run.ai/v2 CREATE "$(printf "$Q" '')" >"$tmp/q-valid.json"
review Queue scheduling.run.ai/v2 CREATE "$(printf "$Q" ',"resourceQuota":{"cpu":4}')" >"$tmp/q-unknown.json"
review Queue scheduling.run.ai/v2 CREATE "$(printf "$Q" ',"priority":-1')" >"$tmp/q-negative.json"

expect run-valid true "" "" "${STATE[@]}" <"$tmp/valid.json"
expect run-inline-and-repo false 'spec.source: Invalid value: "object": inline and repoURL are mutually exclusive' \
  "spec.source: x-kubernetes-validations rule '!has(self.repoURL) || url(self.repoURL).getScheme() == 'https'' not evaluated" \
  "${STATE[@]}" <"$tmp/inline.json"
expect run-commit-without-repo false 'spec.source: Invalid value: "object": commitSHA requires repoURL' "" "${STATE[@]}" <"$tmp/sha.json"
expect run-task-and-function false 'spec.mode: Invalid value: "object": exactly one of task or function must be set' "" "${STATE[@]}" <"$tmp/both.json"
# ... once: the hand rule that says the same is not repeated when the CRD states it.
[ "$(jq -r .response.status.message "$tmp/out.json" | grep -o 'exactly one of task or function' | wc -l)" -eq 1 ] \
  && ok || bad "run-task-and-function: the problem is reported more than once: $(jq -r .response.status.message "$tmp/out.json")"
expect run-unknown-field false 'spec.args: unknown field "spec.args"' "" "${STATE[@]}" <"$tmp/unknown.json"
# transition rules, on UPDATE only
expect run-uncancel false 'spec: Invalid value: "object": cancelRequested cannot be unset' "" "${STATE[@]}" <"$tmp/uncancel.json"
expect run-cancel true "" "" "${STATE[@]}" <"$tmp/cancel.json"
expect run-add-source false 'spec: Invalid value: "object": runtime and source are immutable' "" "${STATE[@]}" <"$tmp/addsource.json"
# ratcheting: a value above the CRD's maximum that the update leaves as it was is not refused
expect run-ratchet true "" "" "${STATE[@]}" <"$tmp/ratchet.json"
expect run-raise false 'spec.priority: Invalid value: 30: should be less than or equal to 10' "" "${STATE[@]}" <"$tmp/raise.json"
expect run-create-high false 'spec.priority: Invalid value: 20: should be less than or equal to 10' "" "${STATE[@]}" <"$tmp/high.json"
expect queue-valid true "" "" "${STATE[@]}" <"$tmp/q-valid.json"
expect queue-unknown-field false 'spec.resourceQuota: unknown field "spec.resourceQuota"' "" "${STATE[@]}" <"$tmp/q-unknown.json"
expect queue-cel false 'spec: Invalid value: "object": priority must not be negative' "" "${STATE[@]}" <"$tmp/q-negative.json"
# Without the CRDs in the state, nothing checks what only they say.
expect run-inline-no-crd true "" "" examples/cluster <"$tmp/inline.json"
expect queue-unknown-no-crd true "" "" examples/cluster <"$tmp/q-unknown.json"

# serve decides the same reviews the same way (contract section 5: same answer, same state).
harness_serve "$TALLY" --state "${STATE[@]}"
for c in valid:runs inline:runs both:runs unknown:runs uncancel:runs ratchet:runs raise:runs \
         q-valid:queues q-unknown:queues q-negative:queues; do
  f=${c%%:*} ep=${c#*:}
  code=$(curl -sS --max-time 10 --cacert "$tmp/tls.crt" -o "$tmp/serve.json" -w '%{http_code}' \
    -H 'Content-Type: application/json' --data-binary @"$tmp/$f.json" "https://127.0.0.1:$PORT/validate/$ep")
  [ "$code" == 200 ] || { bad "serve $f: HTTP $code"; continue; }
  "$TALLY" admit "${STATE[@]}" <"$tmp/$f.json" >"$tmp/admit.json" 2>/dev/null
  want=$(jq -cS '.response | {uid, allowed, status, warnings}' "$tmp/admit.json")
  got=$(jq -cS '.response | {uid, allowed, status, warnings}' "$tmp/serve.json")
  [ "$got" == "$want" ] && ok || bad "serve $f: serve and admit differ
     serve: $got
     admit: $want"
done
[ "$(jq -r .response.allowed "$tmp/serve.json")" == false ] && ok || bad "serve: the last review (a negative priority) must be denied"

echo "admit_crd.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
