#!/usr/bin/env bash
# The live mode end to end (contract section 9, docs/live.md), run by ctest from the repository root:
#   bash tests/cli/live.sh path/to/tally
# Against the test API server (tests/kube/apiserver.py, which tests/cli/kube_apiserver.sh proves
# faithful with the real kubectl):
#   - one-shot: `simulate --kubeconfig` equals `simulate` of the same objects as files, byte for
#     byte; `snapshot` then `simulate FILE` equals `simulate --kubeconfig`; live `validate` names
#     objects by API path at 1:1; every kubeconfig context (token, certificate files and data, token
#     file, exec plugin, insecure) and --in-cluster; absent kinds are one note, not an error;
#     unreachable servers, refused credentials and RBAC refusals exit 1 with what to fix;
#   - serve: decisions on the live state, changed by kubectl; watches dropped mid-event, histories
#     compacted and restarted (relists); and readiness (503) while the watch is broken.
# Every wait is bounded; every process is killed on exit.
set -u
TALLY=$(realpath "${1:?usage: live.sh path/to/tally}")
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
for tool in curl openssl jq python3 kubectl; do
  command -v "$tool" >/dev/null || { echo "live.sh: $tool is missing (scripts/deps.sh test)"; exit 1; }
done
NOW=2026-11-24T12:00:00Z

source tests/cli/lib/kubectl.sh
# apiserver DIR [ARGS...]: starts the test API server; sets API_URL, API_CA, KC, API_PID.
apiserver() {
  local dir=$1
  shift
  rm -f "$dir/ready.json"
  python3 tests/kube/apiserver.py --dir "$dir" "$@" >"$dir.log" 2>&1 &
  API_PID=$!
  pids+=("$API_PID")
  for _ in $(seq 1 100); do [ -s "$dir/ready.json" ] && break; sleep 0.1; done
  [ -s "$dir/ready.json" ] || { echo "live.sh: the test API server did not start:"; cat "$dir.log"; exit 1; }
  API_URL=$(jq -r .url "$dir/ready.json")
  API_CA=$(jq -r .ca "$dir/ready.json")
  KC="$dir/kubeconfig"
  KUBECTL_BIN=$(tally_kubectl "$dir/ready.json")
}
control() { curl -sf --cacert "$API_CA" -X POST -H 'Content-Type: application/json' "$API_URL/_test/$1" -d "${2:-{\}}" >/dev/null; }
# put FILE.json: every object of a List (or one object) straight into the store.
put() { jq -c 'if .kind == "List" then .items[] else . end' "$1" | while read -r o; do control put "{\"object\":$o}"; done; }
# tojson FILE.yaml: the objects as a JSON List (kubectl parses the YAML).
tojson() { "$KUBECTL_BIN" --kubeconfig "$KC" create --validate=false --dry-run=client -o json -f "$1" | jq -s '{apiVersion:"v1",kind:"List",items:([.[] | if .kind == "List" then .items[] else . end])}'; }

# ---- one-shot commands ---------------------------------------------------------------------
# Every object carries metadata.managedFields, as a real API server keeps it: tally reads none
# of it (the parser skips it), answers equal the files' and snapshots leave it out.
jq '.items |= map(.metadata.managedFields = [{manager: "kubectl-client-side-apply", operation: "Update",
  apiVersion: .apiVersion, time: "2026-11-29T10:00:00Z", fieldsType: "FieldsV1",
  fieldsV1: {"f:metadata": {"f:labels": {".": {}}}, "f:spec": {}}}])' \
  tests/live/example-cluster.json >"$tmp/seed-managed.json"
apiserver "$tmp/k" --seed "$tmp/seed-managed.json"

"$TALLY" simulate -o json --now $NOW --kubeconfig "$KC" >"$tmp/live.json" 2>"$tmp/live.err"
"$TALLY" simulate -o json --now $NOW examples/cluster >"$tmp/file.json" 2>/dev/null
cmp -s "$tmp/live.json" "$tmp/file.json" && ok || bad "simulate --kubeconfig differs from simulate of the same files"
"$TALLY" simulate --now $NOW --kubeconfig "$KC" >"$tmp/live.txt" 2>/dev/null
"$TALLY" simulate --now $NOW examples/cluster >"$tmp/file.txt" 2>/dev/null
# The closing `tally explain` lines name each one's own source; the rest is the same.
grep -q "^  tally explain --kubeconfig $KC pod " "$tmp/live.txt" && ok || bad "live explain lines do not name --kubeconfig"
unsource() { sed -E 's/^  tally explain .* (pod|run) ([^ ]+)$/  tally explain SOURCE \1 \2/' "$1"; }
cmp -s <(unsource "$tmp/live.txt") <(unsource "$tmp/file.txt") && ok || bad "the table of simulate --kubeconfig differs"
"$TALLY" explain --now $NOW --kubeconfig "$KC" pod team-a/ablation-lr-sweep-3-xz7pq >"$tmp/ex1" 2>/dev/null
"$TALLY" explain --now $NOW examples/cluster pod team-a/ablation-lr-sweep-3-xz7pq >"$tmp/ex2" 2>/dev/null
cmp -s "$tmp/ex1" "$tmp/ex2" && ok || bad "explain --kubeconfig differs from explain of the files"

"$TALLY" snapshot --kubeconfig "$KC" -o "$tmp/snap.json" 2>/dev/null && ok || bad "snapshot failed"
jq -e '.kind == "List" and (.now | test("Z$")) and ([.items[] | .metadata.managedFields] | all(. == null))' \
  "$tmp/snap.json" >/dev/null && ok || bad "snapshot lacks now, or keeps managedFields"
jq -e '[.items[] | [.apiVersion, .kind, (.metadata.namespace // ""), .metadata.name]] as $k | $k == ($k | sort)' \
  "$tmp/snap.json" >/dev/null && ok || bad "snapshot items are not sorted by (apiVersion, kind, namespace, name)"
NOWSNAP=$(jq -r .now "$tmp/snap.json")
"$TALLY" simulate -o json "$tmp/snap.json" >"$tmp/s1.json" 2>/dev/null
"$TALLY" simulate -o json --now "$NOWSNAP" --kubeconfig "$KC" >"$tmp/s2.json" 2>/dev/null
cmp -s "$tmp/s1.json" "$tmp/s2.json" && ok || bad "simulate of the snapshot differs from simulate --kubeconfig at its time"
"$TALLY" simulate -o json --now $NOW "$tmp/snap.json" >"$tmp/s3.json" 2>/dev/null
cmp -s "$tmp/s3.json" "$tmp/file.json" && ok || bad "simulate of the snapshot differs from simulate of the files"

# Live validate: an object the API server took without tally's rules (a Queue with no resources).
control put '{"object":{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"bare"},"spec":{}}}'
"$TALLY" validate --kubeconfig "$KC" >"$tmp/val.out" 2>"$tmp/val.err"
grep -q '^/apis/scheduling.run.ai/v2/queues/bare:1:1: warning: Queue bare: spec.resources: ' "$tmp/val.out" && ok \
  || { bad "live validate does not name the object by its API path at 1:1"; cat "$tmp/val.out"; }
control delete '{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","name":"bare"}'

# The CRDs come from the API server too (contract sections 2 and 4): a Queue stored as an older
# CRD allowed it (an unknown field, a string priority) is checked against the server's Queue CRD.
control put '{"object":{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"strict"},"spec":{"priority":"high","foo":1,"resources":{"cpu":{"quota":-1,"limit":-1},"memory":{"quota":-1,"limit":-1},"gpu":{"quota":-1,"limit":-1}}}}}'
"$TALLY" validate --kubeconfig "$KC" >"$tmp/val.out" 2>"$tmp/val.err"
grep -q '^/apis/scheduling.run.ai/v2/queues/strict:1:1: error: Queue strict: spec.foo: unknown field "spec.foo"' "$tmp/val.out" && ok \
  || { bad "live validate does not check objects against the server's CRD (unknown field)"; cat "$tmp/val.out"; }
grep -q '^/apis/scheduling.run.ai/v2/queues/strict:1:1: error: Queue strict: spec.priority: .*integer' "$tmp/val.out" && ok \
  || { bad "live validate does not check objects against the server's CRD (type)"; cat "$tmp/val.out"; }
# Only the CRDs of tally's groups are read: a CRD of another group is left out of a snapshot.
control put '{"object":{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","names":{"plural":"widgets","singular":"widget","kind":"Widget"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}}'
"$TALLY" snapshot --kubeconfig "$KC" -o "$tmp/snap-crd.json" 2>/dev/null
[ "$(jq -r '[.items[] | select(.kind == "CustomResourceDefinition") | .metadata.name] | join(" ")' "$tmp/snap-crd.json")" \
  = "accountedresources.scheduling.run.ai configs.kai.scheduler podgroups.scheduling.run.ai queues.scheduling.run.ai runs.kruntimes.io runtimes.kruntimes.io" ] && ok \
  || bad "a snapshot should hold the CRDs of tally's groups and no other: $(jq -r '[.items[] | select(.kind == "CustomResourceDefinition") | .metadata.name] | join(" ")' "$tmp/snap-crd.json")"
# The same file gives the same findings (named by file and line there).
"$TALLY" validate "$tmp/snap-crd.json" 2>/dev/null | grep -q 'error: Queue strict: spec.foo: unknown field "spec.foo"' && ok \
  || bad "validate of the snapshot does not check the Queue against the CRD it holds"
# An anonymized snapshot keeps the CRDs as they are (a schema is not the user's data).
"$TALLY" snapshot --kubeconfig "$KC" --anonymize -o "$tmp/snap-anon.json" 2>/dev/null
cmp -s <(jq -S '[.items[] | select(.kind == "CustomResourceDefinition")]' "$tmp/snap-crd.json") \
  <(jq -S '[.items[] | select(.kind == "CustomResourceDefinition")]' "$tmp/snap-anon.json") && ok \
  || bad "--anonymize changed a CRD"
control delete '{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","name":"strict"}'
control delete '{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","name":"widgets.example.com"}'

# Every context of the kubeconfig reads the same cluster.
for ctx in token cert cert-data tokenfile exec insecure; do
  "$TALLY" simulate -o json --now $NOW --kubeconfig "$KC" --context $ctx >"$tmp/ctx.json" 2>"$tmp/ctx.err"
  cmp -s "$tmp/ctx.json" "$tmp/file.json" && ok || { bad "context $ctx"; head -3 "$tmp/ctx.err"; }
done
[ "$(wc -l <"$tmp/k/exec.log")" -ge 1 ] && ok || bad "the exec plugin did not run"
# The ExecCredential is cached until its expirationTimestamp: once for a whole LIST of every kind...
runs0=$(wc -l <"$tmp/k/exec.log")
"$TALLY" simulate --kubeconfig "$KC" --context exec >/dev/null 2>&1
[ $(( $(wc -l <"$tmp/k/exec.log") - runs0 )) -eq 1 ] && ok || bad "a valid exec credential should be fetched once"
# ...and again for every request when it is already expired.
echo '{"expiry_seconds": -10}' >"$tmp/k/exec.json"
runs0=$(wc -l <"$tmp/k/exec.log")
"$TALLY" simulate --kubeconfig "$KC" --context exec >/dev/null 2>&1
[ $(( $(wc -l <"$tmp/k/exec.log") - runs0 )) -gt 5 ] && ok || bad "an expired exec credential must be fetched again"
echo '{"fail": "no credentials for you"}' >"$tmp/k/exec.json"
"$TALLY" simulate --kubeconfig "$KC" --context exec >/dev/null 2>"$tmp/e0"
[ $? -eq 1 ] && grep -q 'exec: ".*" failed with exit status 1' "$tmp/e0" && grep -q 'no credentials for you' "$tmp/e0" && ok \
  || { bad "a failing exec plugin"; cat "$tmp/e0"; }
rm -f "$tmp/k/exec.json"
KUBECONFIG="$KC" "$TALLY" simulate -o json --now $NOW --context token >"$tmp/env.json" 2>/dev/null
cmp -s "$tmp/env.json" "$tmp/file.json" && ok || bad "\$KUBECONFIG is not read"

# --in-cluster: the service account's token, CA and namespace.
mkdir -p "$tmp/sa"
jq -r .token "$tmp/k/ready.json" >"$tmp/sa/token"
cp "$API_CA" "$tmp/sa/ca.crt"
echo tally-system >"$tmp/sa/namespace"
PORT=$(jq -r .port "$tmp/k/ready.json")
TALLY_SERVICEACCOUNT_DIR="$tmp/sa" KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=$PORT \
  "$TALLY" simulate -o json --now $NOW --in-cluster >"$tmp/ic.json" 2>"$tmp/ic.err"
cmp -s "$tmp/ic.json" "$tmp/file.json" && ok || { bad "--in-cluster"; head -3 "$tmp/ic.err"; }
# ...but the server certificate is for 127.0.0.1, and the CA must be the service account's.
echo "-----BEGIN CERTIFICATE-----" >"$tmp/sa/ca.crt"
TALLY_SERVICEACCOUNT_DIR="$tmp/sa" KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=$PORT \
  "$TALLY" simulate --in-cluster >/dev/null 2>"$tmp/ic.err"
[ $? -eq 1 ] && grep -q 'TLS with the API server' "$tmp/ic.err" && ok || { bad "a bad service account CA"; cat "$tmp/ic.err"; }

# Absent kinds: a note each, and the rest is read.
control omit-group '{"group":"kruntimes.io"}'
"$TALLY" simulate -o json --now $NOW --kubeconfig "$KC" >"$tmp/abs.json" 2>"$tmp/abs.err"
rc=$?
[ $rc -eq 0 ] && grep -q 'note: the API server does not serve kruntimes.io Run' "$tmp/abs.err" && ok \
  || { bad "an absent group is not a note (rc $rc)"; cat "$tmp/abs.err"; }
jq -e '.runs == [] and (.pods | length) > 0' "$tmp/abs.json" >/dev/null && ok || bad "absent kruntimes: runs should be empty"
control serve-group '{"group":"kruntimes.io"}'

# Failures exit 1 and say what to fix.
sed "s#server: .*#server: https://127.0.0.1:1#" "$KC" >"$tmp/down.kc"
"$TALLY" simulate --kubeconfig "$tmp/down.kc" >/dev/null 2>"$tmp/e1"
[ $? -eq 1 ] && grep -q 'cannot reach the API server at https://127.0.0.1:1' "$tmp/e1" && ok || { bad "unreachable"; cat "$tmp/e1"; }
"$TALLY" simulate --kubeconfig "$KC" --context limited >/dev/null 2>"$tmp/e2"
[ $? -eq 1 ] && grep -q '403 Forbidden' "$tmp/e2" && grep -q 'grant verb "list"' "$tmp/e2" && ok || { bad "RBAC refusal"; cat "$tmp/e2"; }
# Every kind but the CRDs: the commands go on, with one note that the CRD checks are skipped.
control rbac '{"user":"limited","allow":[{"verbs":["get","list","watch"],"apiGroups":["","scheduling.k8s.io","scheduling.run.ai","kai.scheduler","resource.k8s.io","kruntimes.io"],"resources":["*"]}]}'
"$TALLY" simulate -o json --now $NOW --kubeconfig "$KC" --context limited >"$tmp/lim.json" 2>"$tmp/e2b"
[ $? -eq 0 ] && cmp -s "$tmp/lim.json" "$tmp/file.json" \
  && grep -q '^note: objects are not checked against their CustomResourceDefinitions: .*403' "$tmp/e2b" && ok \
  || { bad "a refused LIST of CRDs should be a note"; cat "$tmp/e2b"; }
control rbac '{"user":"limited","allow":[]}'
ADMIN=$(jq -r .token "$tmp/k/ready.json")
sed "s#$ADMIN#not-a-token#" "$KC" >"$tmp/badtok.kc"
"$TALLY" simulate --kubeconfig "$tmp/badtok.kc" --context token >/dev/null 2>"$tmp/e3"
[ $? -eq 1 ] && grep -q '401 Unauthorized' "$tmp/e3" && ok || { bad "refused token"; cat "$tmp/e3"; }
"$TALLY" simulate --kubeconfig "$tmp/none.kc" >/dev/null 2>"$tmp/e4"
[ $? -eq 1 ] && grep -q "kubeconfig $tmp/none.kc: cannot read" "$tmp/e4" && ok || { bad "missing kubeconfig"; cat "$tmp/e4"; }
"$TALLY" simulate --kubeconfig "$KC" --context nope >/dev/null 2>"$tmp/e5"
[ $? -eq 1 ] && grep -q 'context "nope" not found (contexts: ' "$tmp/e5" && ok || { bad "unknown context"; cat "$tmp/e5"; }
"$TALLY" simulate --kubeconfig "$KC" examples/cluster >/dev/null 2>&1
[ $? -eq 2 ] && ok || bad "paths and a live source together must be a usage error"
# The client's rate limit and User-Agent, as the server saw them.
control requests/clear
"$TALLY" simulate --kubeconfig "$KC" --kube-api-qps 20 --kube-api-burst 1 >/dev/null 2>&1
curl -s --cacert "$API_CA" "$API_URL/_test/requests" >"$tmp/reqs.json"
jq -e '[.requests[] | .userAgent] | length > 10 and all(. == "tally/0.1.0")' "$tmp/reqs.json" >/dev/null \
  && ok || bad "requests must carry User-Agent tally/<version>"
# The server logs arrivals; a limiter that spaces sends by 50 ms makes N requests span at least
# (N - 1) x 50 ms. The span is checked, not each gap: under load (the sanitizer suite beside the
# plain one) one late arrival shortens the next gap without the limiter being wrong. Without a
# limiter the requests come a few ms apart and the span is a fraction of the bound.
python3 - "$tmp/reqs.json" <<'PY' && ok || bad "at --kube-api-qps 20 with a burst of 1, requests must be about 50 ms apart"
import json, sys, datetime
t = [datetime.datetime.strptime(r["time"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() for r in json.load(open(sys.argv[1]))["requests"]]
t = t[1:]  # the first answer waited for the TLS handshake
sys.exit(0 if len(t) > 10 and t[-1] - t[0] >= (len(t) - 1) * 0.050 - 0.030 else 1)
PY
kill "$API_PID"

# DRA at the newest version the server serves.
jq '.items |= map(if .apiVersion == "resource.k8s.io/v1" then .apiVersion = "resource.k8s.io/v1beta2" else . end)' \
  tests/live/example-cluster.json >"$tmp/dra-seed.json"
apiserver "$tmp/d" --dra-versions v1beta2 --seed "$tmp/dra-seed.json"
"$TALLY" snapshot --kubeconfig "$KC" -o "$tmp/dra.json" 2>/dev/null
jq -e '[.items[] | select(.kind == "DeviceClass") | .apiVersion] | length > 0 and all(. == "resource.k8s.io/v1beta2")' \
  "$tmp/dra.json" >/dev/null && ok || bad "DRA should fall back to v1beta2"
kill "$API_PID"

# ---- serve on the live state ---------------------------------------------------------------
apiserver "$tmp/s" --bookmark-interval 1
tojson tests/resize/none-over-limit/state.yaml >"$tmp/state.json"
put "$tmp/state.json"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=tally-live" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$tmp/tls.key" -out "$tmp/tls.crt" 2>/dev/null
control omit-group '{"group":"kruntimes.io"}'
"$TALLY" serve --listen 127.0.0.1:0 --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key" --kubeconfig "$KC" \
  --context tokenfile --watch-stale-after 2s --watch-idle-timeout 3s --discovery-interval 500ms \
  >"$tmp/serve.log" 2>&1 &
SERVE_PID=$!
pids+=("$SERVE_PID")
for _ in $(seq 1 100); do grep -q 'event=listening' "$tmp/serve.log" 2>/dev/null && break; sleep 0.1; done
SPORT=$(sed -n 's/.*event=listening.* port=\([0-9]*\).*/\1/p' "$tmp/serve.log" | head -1)
S="https://127.0.0.1:$SPORT"
get() { curl -s --cacert "$tmp/tls.crt" -o "$tmp/body" -w '%{http_code}' "$S$1"; }
review() { curl -s --cacert "$tmp/tls.crt" -o "$tmp/body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  --data-binary @"$1" "$S/validate/pods-resize"; }
until_ready() { for _ in $(seq 1 100); do [ "$(get /readyz)" = 200 ] && return 0; sleep 0.1; done; return 1; }
until_ready && ok || { bad "serve never became ready"; cat "$tmp/serve.log"; }
R=tests/resize/none-over-limit/review.json
[ "$(review $R)" = 200 ] && ok || bad "review not answered"
"$TALLY" admit tests/resize/none-over-limit/state.yaml <$R >"$tmp/admit.json" 2>/dev/null
jq -c .response "$tmp/body" >"$tmp/a1"
jq -c .response "$tmp/admit.json" >"$tmp/a2"
cmp -s "$tmp/a1" "$tmp/a2" && ok || bad "serve on the live state and admit on the files disagree"
jq -e '.response.allowed == false' "$tmp/body" >/dev/null && ok || bad "the upsize over the limit should be denied"

# The object webhooks check reviewed objects against the server's CRDs (listed by serve itself).
qreview() { curl -s --cacert "$tmp/tls.crt" -o "$tmp/qbody" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  --data-binary "$1" "$S/validate/queues"; }
QR='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"q1","kind":{"group":"scheduling.run.ai","version":"v2","kind":"Queue"},"resource":{"group":"scheduling.run.ai","version":"v2","resource":"queues"},"operation":"CREATE","name":"team-q","object":{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"team-q"},"spec":{"resourceQuota":{"cpu":4},"resources":{"cpu":{"quota":-1,"limit":-1},"memory":{"quota":-1,"limit":-1},"gpu":{"quota":-1,"limit":-1}}}}}}'
for _ in $(seq 1 50); do
  [ "$(qreview "$QR")" = 200 ] && jq -e '.response.status.message | test("unknown field \"spec.resourceQuota\"")' "$tmp/qbody" >/dev/null && break
  sleep 0.1
done
jq -e '.response.allowed == false and (.response.status.message | test("spec.resourceQuota: unknown field \"spec.resourceQuota\""))' "$tmp/qbody" >/dev/null && ok \
  || { bad "serve on the live state should check a reviewed Queue against the server's Queue CRD"; cat "$tmp/qbody"; echo; }

# kubectl raises the queue's limit: the next decision sees it.
"$KUBECTL_BIN" --kubeconfig "$KC" patch queues.scheduling.run.ai team-a --type merge \
  -p '{"spec":{"resources":{"cpu":{"limit":4000}}}}' >/dev/null 2>&1 || bad "kubectl patch of the queue"
allowed=no
for _ in $(seq 1 50); do
  review $R >/dev/null
  jq -e '.response.allowed' "$tmp/body" >/dev/null && { allowed=yes; break; }
  sleep 0.1
done
[ $allowed = yes ] && ok || bad "a raised limit did not reach the live state"

metric() { curl -s --cacert "$tmp/tls.crt" "$S/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
# The queue gauges come from the live ledger without any controller (docs/controllers.md).
curl -s --cacert "$tmp/tls.crt" "$S/metrics" | grep -q '^tally_queue_allocated{queue="' && ok \
  || bad "no tally_queue_allocated without --controllers"
# A watch cut in the middle of an event: restarted, nothing lost.
control fault '{"action":"drop-watch","resource":"pods","count":1,"after_events":0}'
"$KUBECTL_BIN" --kubeconfig "$KC" run live-probe --image=x --restart=Never >/dev/null 2>&1
for _ in $(seq 1 60); do [ "$(metric 'tally_objects{kind="Pod"}')" = 2 ] && break; sleep 0.1; done
[ "$(metric 'tally_objects{kind="Pod"}')" = 2 ] && ok || bad "a pod created across a dropped watch is missing"
# Compaction and a restored history: relists, and the state is still whole.
control compact
control restart
"$KUBECTL_BIN" --kubeconfig "$KC" delete pod live-probe --wait=false >/dev/null 2>&1
for _ in $(seq 1 80); do
  [ "$(metric 'tally_objects{kind="Pod"}')" = 1 ] && [ "${R_:=$(metric 'tally_watch_relists_total{kind="Pod"}')}" != 0 ] && break
  R_=
  sleep 0.1
done
[ "$(metric 'tally_objects{kind="Pod"}')" = 1 ] && ok || bad "a delete after a restored history was missed"
[ "$(metric 'tally_watch_relists_total{kind="Pod"}')" -ge 1 ] 2>/dev/null && ok || bad "no relist after a restored history"
until_ready && ok || bad "not ready after the relist"

# A CRD installed later: its kind is found at the next discovery and listed.
grep -q 'event=kind-absent kind=Runtime' "$tmp/serve.log" && ok || bad "kruntimes.io should have been absent"
control serve-group '{"group":"kruntimes.io"}'
control put '{"object":{"apiVersion":"kruntimes.io/v1alpha1","kind":"Runtime","metadata":{"name":"python","namespace":"default"},"spec":{"image":"python:3.12"}}}'
for _ in $(seq 1 60); do [ "$(metric 'tally_objects{kind="Runtime"}')" = 1 ] && break; sleep 0.1; done
[ "$(metric 'tally_objects{kind="Runtime"}')" = 1 ] && ok || bad "a kind served later was not picked up"

# The token file rotates (as kubelet rotates bound tokens): the old token stops working, and the
# next watch that reconnects is refused once, reads the file again and goes on.
echo "rotated-$$" >"$tmp/s/token"
control tokens '{"valid":[]}'
control fault '{"action":"drop-watch","resource":"pods","count":1}'
"$KUBECTL_BIN" --kubeconfig "$KC" --context cert run after-rotation --image=x --restart=Never >/dev/null 2>&1
for _ in $(seq 1 80); do [ "$(metric 'tally_objects{kind="Pod"}')" = 2 ] && break; sleep 0.1; done
[ "$(metric 'tally_objects{kind="Pod"}')" = 2 ] && ok || bad "the watch did not follow a rotated token file"

# The API server goes away: after --watch-stale-after, not ready and no decisions.
kill "$API_PID"
sleep 3.5
[ "$(get /readyz)" = 503 ] && ok || bad "/readyz should be 503 while the watches are broken"
[ "$(review $R)" = 503 ] && ok || bad "admission should answer 503 while the watches are broken"
grep -q 'the watch of .* has been broken' "$tmp/body" && ok || bad "the 503 should say which watch is broken"
[ "$(get /healthz)" = 200 ] && ok || bad "/healthz must stay 200"
kill -TERM "$SERVE_PID"
for _ in $(seq 1 60); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SERVE_PID" 2>/dev/null && bad "serve did not stop on SIGTERM" || ok

echo "live.sh: $pass passed, $fail failed"
[ $fail -eq 0 ]
