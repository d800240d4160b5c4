#!/usr/bin/env bash
# The runs controller and claim admission end to end (contract section 9, docs/controllers.md), run by
# ctest from the repository root:
#   bash tests/cli/runs.sh path/to/tally
# Against the test API server (tests/kube/apiserver.py) holding examples/cluster's kruntimes objects
# (tests/live/example-cluster.json) with fresh runtimed heartbeats:
#   - Pending Runs are bound as kruntimes' scheduler binds them (phase Scheduled, assignedPod,
#     assignedPodUID, condition Scheduled/Assigned), to the Pods `tally simulate` picks; the Run
#     that fits nowhere stays Pending with its message;
#   - the test plays runtimed (it cannot be built here): it claims Runs with the status update runtimed
#     sends, through a ValidatingWebhookConfiguration on runs/status. A claim that fits the Pod's
#     annotated capacity next to the Runs already claimed is allowed; one that does not is denied with
#     the reason, and the Run stays Scheduled; a claim on an unknown Pod is denied; other updates pass;
#   - a Run that ends frees its Pod: the waiting Run is bound there.
# Every wait is bounded; every process is killed on exit.
set -u
TALLY=$(realpath "${1:?usage: runs.sh path/to/tally}")
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
  command -v "$tool" >/dev/null || { echo "runs.sh: $tool is missing (scripts/deps.sh test)"; exit 1; }
done

# The kruntimes half of the example cluster, with heartbeats of now (runtimed beats every 5 s).
NOW=$(date -u +%Y-%m-%dT%H:%M:%SZ)
jq --arg now "$NOW" '.items |= map(select(.apiVersion == "kruntimes.io/v1alpha1" or .kind == "Namespace"
    or (.kind == "Pod" and .metadata.labels.runtime == "python"))
  | if .kind == "Pod" then .status.conditions |= map(if .type == "kruntimes.io/RuntimedReady"
      then .lastProbeTime = $now else . end) else . end)' tests/live/example-cluster.json >"$tmp/seed.json"
python3 tests/kube/apiserver.py --dir "$tmp/api" --seed "$tmp/seed.json" >"$tmp/api.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/api/ready.json" ] && break; sleep 0.1; done
[ -s "$tmp/api/ready.json" ] || { echo "runs.sh: the test API server did not start"; cat "$tmp/api.log"; exit 1; }
KC="$tmp/api/kubeconfig"
API_URL=$(jq -r .url "$tmp/api/ready.json")
API_CA=$(jq -r .ca "$tmp/api/ready.json")
source tests/cli/lib/kubectl.sh
KUBECTL_BIN=$(tally_kubectl "$tmp/api/ready.json")
k() { "$KUBECTL_BIN" --kubeconfig "$KC" "$@"; }
control() { curl -sf --cacert "$API_CA" -X POST -H 'Content-Type: application/json' "$API_URL/_test/$1" -d "$2" >/dev/null; }
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=tally-runs" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$tmp/tls.key" -out "$tmp/tls.crt" 2>/dev/null

"$TALLY" serve --listen 127.0.0.1:0 --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key" --kubeconfig "$KC" \
  --controllers runs --lease-duration 2s --renew-deadline 1500ms --retry-period 200ms >"$tmp/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q 'event=listening' "$tmp/serve.log" 2>/dev/null && break; sleep 0.05; done
PORT=$(sed -n 's/.*event=listening.* port=\([0-9]*\).*/\1/p' "$tmp/serve.log" | head -1)
for _ in $(seq 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$tmp/tls.crt" "https://127.0.0.1:$PORT/readyz")" = 200 ] && break
  sleep 0.05
done

# runtimed's heartbeat: every 5 s it sets its Pod's RuntimedReady lastProbeTime, which the scheduler
# wants at most 15 s old. The test plays it once the server is up and again before a Run ends, so
# that a slow start under load cannot leave the seeded heartbeats stale.
heartbeat() {
  local now
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  k get pods -l runtime=python -o json | jq -c --arg now "$now" '{objects: [.items[]
    | .status.conditions |= map(if .type == "kruntimes.io/RuntimedReady" then .lastProbeTime = $now else . end)]}' \
    | curl -sf --cacert "$API_CA" -X POST -H 'Content-Type: application/json' "$API_URL/_test/put" -d @- >/dev/null
}
heartbeat || bad "the heartbeat could not be written"

run() { k get runs.kruntimes.io "$1" -o json; }
field() { run "$1" | jq -r "$2"; }
until_phase() { for _ in $(seq 60); do [ "$(field "$1" .status.phase)" = "$2" ] && return 0; sleep 0.1; done; return 1; }

# The binds, as `tally simulate` places the same Runs.
until_phase train-resnet50-b Scheduled && ok || bad "train-resnet50-b should be Scheduled: $(field train-resnet50-b .status.phase)"
[ "$(field train-resnet50-b .status.assignedPod)" = runtime-python-7b9c6d5f4-h8wzn ] && ok \
  || bad "train-resnet50-b should go to the free GPU Pod: $(field train-resnet50-b .status.assignedPod)"
run train-resnet50-b | jq -e '.status.assignedPodUID | length > 0' >/dev/null && ok || bad "assignedPodUID missing"
run train-resnet50-b | jq -e '.status.conditions[] | select(.type == "Scheduled" and .status == "True" and .reason == "Assigned")' \
  >/dev/null && ok || bad "condition Scheduled/Assigned missing"
until_phase etl-hourly-1100 Scheduled && until_phase summarize-logs Scheduled && ok || bad "the runs-only Runs should be bound"
[ "$(field train-resnet50-c .status.phase)" = Pending ] && ok || bad "train-resnet50-c has no room and must stay Pending"
for _ in $(seq 30); do field train-resnet50-c .status.message | grep -q 'example.com/gpu' && break; sleep 0.1; done
field train-resnet50-c .status.message | grep -q 'no available Runtime Pod of runtime "python" has room for example.com/gpu' \
  && ok || bad "train-resnet50-c's message: $(field train-resnet50-c .status.message)"

# runtimed's claims go through /validate/runs-status.
CA=$(base64 -w0 "$tmp/tls.crt")
cat <<EOF | k apply -f - >/dev/null && ok || bad "the ValidatingWebhookConfiguration was refused"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: tally-claims
webhooks:
- name: claims.tally.dev
  clientConfig:
    url: https://127.0.0.1:$PORT/validate/runs-status
    caBundle: $CA
  rules: [{operations: [UPDATE], apiGroups: [kruntimes.io], apiVersions: [v1alpha1], resources: [runs/status]}]
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 5
EOF
# claim RUN: what runtimed sends: phase Running, startTime, condition Running/Claimed.
claim() {
  k patch runs.kruntimes.io "$1" --subresource status --type merge \
    -p "{\"status\":{\"phase\":\"Running\",\"startTime\":\"$NOW\"}}" 2>&1
}
out=$(claim train-resnet50-b)
[ $? -eq 0 ] && ok || bad "the claim of train-resnet50-b fits and must be allowed: $out"
[ "$(field train-resnet50-b .status.phase)" = Running ] && ok || bad "train-resnet50-b should be Running"
# A second GPU Run on the same Pod, assigned by someone else (a stale scheduler): its claim must not fit.
control put "{\"object\":{\"apiVersion\":\"kruntimes.io/v1alpha1\",\"kind\":\"Run\",\"metadata\":{\"name\":\"stale\",\"namespace\":\"default\"},\
\"spec\":{\"runtime\":\"python\",\"resources\":{\"requests\":{\"example.com/gpu\":\"1\"}}},\
\"status\":{\"phase\":\"Scheduled\",\"assignedPod\":\"runtime-python-7b9c6d5f4-h8wzn\"}}}"
for _ in $(seq 30); do [ "$(field stale .status.phase)" = Scheduled ] && break; sleep 0.1; done
sleep 0.3
out=$(claim stale)
[ $? -ne 0 ] && ok || bad "a claim over the Pod's GPU capacity must be denied"
echo "$out" | grep -q 'claim of Run default/stale refused: it needs example.com/gpu 1 on Runtime Pod runtime-python-7b9c6d5f4-h8wzn, which has 1 of which 1 is held' \
  && ok || bad "the denial's message: $out"
[ "$(field stale .status.phase)" = Scheduled ] && ok || bad "a refused claim leaves the Run Scheduled"
# An unknown Pod is denied; an update that is not a claim passes.
control put "{\"object\":{\"apiVersion\":\"kruntimes.io/v1alpha1\",\"kind\":\"Run\",\"metadata\":{\"name\":\"lost\",\"namespace\":\"default\"},\
\"spec\":{\"runtime\":\"python\"},\"status\":{\"phase\":\"Scheduled\",\"assignedPod\":\"no-such-pod\"}}}"
sleep 0.5
out=$(claim lost)
[ $? -ne 0 ] && echo "$out" | grep -q 'Pod no-such-pod is not in namespace default' && ok || bad "a claim on an unknown Pod: $out"
k patch runs.kruntimes.io etl-hourly-1100 --subresource status --type merge -p '{"status":{"message":"hello"}}' >/dev/null 2>&1 \
  && ok || bad "an update that is not a claim must pass"

heartbeat && ok || bad "the heartbeat could not be written"

# A Run ends: its Pod is free, and the waiting GPU Run is bound there.
for _ in 1 2 3; do
  k patch runs.kruntimes.io train-resnet50-a --subresource status --type merge -p '{"status":{"phase":"Succeeded"}}' \
    >"$tmp/end-a.out" 2>&1 && break
  sleep 0.5
done
[ "$(field train-resnet50-a .status.phase)" = Succeeded ] || bad "train-resnet50-a could not be ended: $(cat "$tmp/end-a.out")"
until_phase train-resnet50-c Scheduled && ok || { bad "train-resnet50-c should be bound once train-resnet50-a ended"; tail -20 "$tmp/serve.log"; }
[ "$(field train-resnet50-c .status.assignedPod)" = runtime-python-7b9c6d5f4-2xkqp ] && ok \
  || bad "train-resnet50-c should go to the freed Pod: $(field train-resnet50-c .status.assignedPod)"
# Runs that end before placement, written as kruntimes' scheduler writes them (issue 15 item 13): a cancel
# request and an invalid request by runstatus.SetTerminal (conditions Running and Completed False with the
# reason, completionTime); an affinity that does not compile with phase Failed and the message only.
put_run() {
  control put "{\"object\":{\"apiVersion\":\"kruntimes.io/v1alpha1\",\"kind\":\"Run\",\"metadata\":{\"name\":\"$1\",\
\"namespace\":\"default\",\"creationTimestamp\":\"$NOW\"},\"spec\":{\"runtime\":\"python\",\"mode\":{\"task\":{}},$2},\
\"status\":{\"phase\":\"Pending\"}}}"
}
put_run cancel-me '"cancelRequested":true'
put_run bad-request '"resources":{"requests":{"runs":"2000m"}}'
put_run bad-affinity '"affinity":{"runAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"topologyKey":"kruntimes.io/runtime-pod","labelSelector":{"matchExpressions":[{"key":"app","operator":"In"}]}}]}}'
terminal() { # RUN PHASE REASON MESSAGE
  run "$1" | jq -e --arg p "$2" --arg r "$3" --arg m "$4" '.status.phase == $p and .status.message == $m
    and (.status.completionTime | length > 0)
    and ([.status.conditions[] | select((.type == "Running" or .type == "Completed") and .status == "False"
      and .reason == $r and .message == $m)] | length == 2)' >/dev/null
}
until_phase cancel-me Cancelled && terminal cancel-me Cancelled Cancelled "cancelled by user" && ok \
  || bad "cancel-me should end Cancelled as SetTerminal writes it: $(run cancel-me | jq -c .status)"
until_phase bad-request Failed \
  && terminal bad-request Failed InvalidResources 'resource request "runs" must be a non-negative integer' && ok \
  || bad "bad-request should end Failed/InvalidResources as SetTerminal writes it: $(run bad-request | jq -c .status)"
aff_msg="pod selection failed: pre-filter run affinity: parse run affinity selector: values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
until_phase bad-affinity Failed && run bad-affinity | jq -e --arg m "$aff_msg" '.status.message == $m
  and (.status.conditions // [] | length == 0) and (.status.completionTime == null)' >/dev/null && ok \
  || bad "bad-affinity should end Failed with kruntimes' message only: $(run bad-affinity | jq -c .status)"
curl -s --cacert "$tmp/tls.crt" "https://127.0.0.1:$PORT/metrics" >"$tmp/metrics"
grep -q '^tally_runtime_utilization{namespace="default",runtime="python",resource="example.com/gpu"} ' "$tmp/metrics" \
  && ok || bad "tally_runtime_utilization missing"

echo "runs.sh: $pass passed, $fail failed"
[ $fail -eq 0 ]
