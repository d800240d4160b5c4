#!/usr/bin/env bash
# The test API server (tests/kube/apiserver.py) against the real kubectl, then the server's own
# tests (tests/kube/run_tests.py, started first, in the background). Run by ctest from the
# repository root:
#   bash tests/cli/kube_apiserver.sh [path/to/tally]     (the tally argument is not used)
# KUBECTL=/path/to/kubectl picks another kubectl (scripts/kubectl-matrix.sh runs every version);
# KUBE_UNIT=0 skips the server's own tests; KUBE_FULL=1 adds the slower kubectl checks (contexts,
# replace, cordon, explain, more patches) that scripts/kubectl-matrix.sh runs. Every wait is bounded; every process this script
# starts is killed on exit. Prints a PASS/FAIL count and exits 1 on any failure.
set -u
cd "$(dirname "$0")/../.." || exit 1
KUBECTL_GIVEN=${KUBECTL:-}
KUBECTL=${KUBECTL:-kubectl}
KUBE_UNIT=${KUBE_UNIT:-1}
KUBE_FULL=${KUBE_FULL:-0}
full() { [ "$KUBE_FULL" = 1 ]; }
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

for tool in python3 openssl "$KUBECTL" curl jq; do
  command -v "$tool" >/dev/null || { echo "kube_apiserver.sh: $tool is missing"; exit 1; }
done

if [ "$KUBE_UNIT" = 1 ]; then
  timeout 150 python3 tests/kube/run_tests.py -j 3 >"$tmp/unit.log" 2>&1 &
  unit_pid=$!
  pids+=("$unit_pid")
fi

# ---- the server --------------------------------------------------------------------------
mkdir -p "$tmp/m"
cat >"$tmp/m/seed.json" <<'EOF'
{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a",
  "labels": {"nvidia.com/gpu.product": "H200", "node-role.kubernetes.io/worker": ""}},
  "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"},
   "conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1.33.0"}}},
 {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}, "status": {"phase": "Active"}},
 {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "seeded", "namespace": "team-a"},
  "spec": {"nodeName": "node-a", "containers": [{"name": "main", "image": "busybox"}]},
  "status": {"phase": "Running", "containerStatuses": [{"name": "main", "ready": true,
   "restartCount": 2, "image": "busybox", "imageID": "", "state": {"running": {}}}]}}
]}
EOF
python3 tests/kube/apiserver.py --dir "$tmp/srv" --seed "$tmp/m/seed.json" \
  --bookmark-interval 0.5 >"$tmp/server.log" 2>&1 &
pids+=("$!")
for _ in $(seq 200); do
  [ -f "$tmp/srv/ready.json" ] && break
  sleep 0.1
done
if [ ! -f "$tmp/srv/ready.json" ]; then
  echo "FAIL: the API server did not start: $(cat "$tmp/server.log")"
  exit 1
fi
URL=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$tmp/srv/ready.json")
export KUBECONFIG="$tmp/srv/kubeconfig"
# /usr/bin/kubectl on this machine is a dispatcher: it asks the server for /version on every run,
# then runs the kubectl.MAJOR.MINOR next to it. Unless KUBECTL is given, call that binary directly
# (the same kubectl, one request and one process less per call).
if [ -z "${KUBECTL_GIVEN:-}" ]; then
  real=$(readlink -f "$(command -v "$KUBECTL")")
  mm=$(jq -r '.major + "." + .minor' <<<"$(curl -sS --max-time 10 -k "$URL/version")")
  [ -x "$(dirname "$real")/kubectl.$mm" ] && KUBECTL="$(dirname "$real")/kubectl.$mm"
fi
K() { timeout 30 "$KUBECTL" --cache-dir "$tmp/cache" "$@"; }
control() { curl -sS --max-time 10 -k -X POST "$URL/_test/$1" -d "${2:-{\}}" >/dev/null; }
TOKEN=$(jq -r .token "$tmp/srv/ready.json")
# jget PATH FILTER: a jq filter over GET PATH (the server's state, read without kubectl).
jget() { curl -sS --max-time 10 --cacert "$tmp/srv/ca.crt" -H "Authorization: Bearer $TOKEN" "$URL$1" | jq -r "$2"; }
# api METHOD PATH [CONTENT-TYPE BODY]: a write without kubectl.
api() {
  curl -sS --max-time 10 --cacert "$tmp/srv/ca.crt" -H "Authorization: Bearer $TOKEN" -X "$1" \
    -H "Content-Type: ${3:-application/json}" ${4:+--data-binary "$4"} "$URL$2" >/dev/null
}
requests() { curl -sS --max-time 10 -k "$URL/_test/requests"; }

# expect NAME PATTERN CMD...: CMD succeeds and its output (stdout+stderr) matches PATTERN (grep -E).
expect() {
  local name=$1 pat=$2
  shift 2
  local out
  if out=$("$@" 2>&1) && grep -Eq -- "$pat" <<<"$out"; then ok; else bad "$name: $* -> $out"; fi
}
# expect_fail NAME PATTERN CMD...: CMD fails and its output matches PATTERN.
expect_fail() {
  local name=$1 pat=$2
  shift 2
  local out
  if out=$("$@" 2>&1); then bad "$name: $* succeeded: $out"
  elif grep -Eq -- "$pat" <<<"$out"; then ok; else bad "$name: $* -> $out"; fi
}

# ---- version, contexts, discovery ----------------------------------------------------------
kver=$(K version --client -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])')
echo "kubectl $kver ($KUBECTL) against $URL"
expect "version/token" '"gitVersion": "v1.33.0"' K version -o json
expect "version/cert" '"gitVersion": "v1.33.0"' K --context cert version -o json
for ctx in cert-data tokenfile exec insecure; do
  full && expect "version/$ctx" '"gitVersion": "v1.33.0"' K --context "$ctx" version -o json
done
full && { [ -s "$tmp/srv/exec.log" ] && ok || bad "exec plugin did not run (no exec.log)"; }
expect_fail "limited" 'pods is forbidden: User "limited" cannot list resource "pods" in API group "" at the cluster scope' \
  K --context limited get pods -A
full && expect_fail "bad token" 'Unauthorized|must be logged in' K --token nope get pods
expect "api-resources" '^pods +po +v1 +true +Pod' K api-resources
full && expect "api-resources crd" '^queues +scheduling.run.ai/v2 +false +Queue' K api-resources --api-group=scheduling.run.ai
full && expect "api-resources runs" '^runs +rn +kruntimes.io/v1alpha1 +true +Run' K api-resources --api-group=kruntimes.io
full && expect "api-versions" 'resource.k8s.io/v1beta2' K api-versions
full && expect "get --raw" '"gitVersion":"v1.33.0"' K get --raw /version

# ---- reads -------------------------------------------------------------------------------------
expect "get pods -A table" '^team-a +seeded +1/1 +Running +2 ' K get pods -A
expect "get pods -A -o json" '"name": "seeded"' K get pods -A -o json
expect "get nodes" '^node-a +Ready +worker +[0-9]+s +v1.33.0' K get nodes
full && expect "get nodes -o wide" 'INTERNAL-IP' K get nodes -o wide
expect "jsonpath" '^node-a H200$' K get nodes -o 'jsonpath={.items[0].metadata.name} {.items[0].metadata.labels.nvidia\.com/gpu\.product}'
full && expect "get ns" '^team-a +Active' K get ns
full && expect "get pc" '^system-node-critical +2000001000 +false' K get priorityclasses

# ---- writes: create, apply (client side), replace, label, delete ---------------------------
cat >"$tmp/m/pod.json" <<'EOF'
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "team-a", "labels": {"app": "web"}},
 "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "main", "image": "nginx:1.27",
  "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]}}
EOF
cat >"$tmp/m/queue.json" <<'EOF'
{"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "team-a"},
 "spec": {"parentQueue": "root", "priority": 10, "resources": {"gpu": {"quota": 4, "limit": 8, "overQuotaWeight": 1}}}}
EOF
cat >"$tmp/m/run.json" <<'EOF'
{"apiVersion": "kruntimes.io/v1alpha1", "kind": "Run", "metadata": {"name": "r1", "namespace": "team-a"},
 "spec": {"runtime": "python", "resources": {"requests": {"runs": 1}}}}
EOF
expect "create pod" 'pod/web created' K create -f "$tmp/m/pod.json"
expect "defaults" '^2 1Gi kai-scheduler Pending$' jget /api/v1/namespaces/team-a/pods/web '"\(.spec.containers[0].resources.requests.cpu) \(.spec.containers[0].resources.requests.memory) \(.spec.schedulerName) \(.status.phase)"'
full && expect_fail "create again" 'AlreadyExists|already exists' K create -f "$tmp/m/pod.json"
expect "apply pod (creates annotation)" 'pod/web configured' K apply -f "$tmp/m/pod.json"
sed 's/"app": "web"/"app": "web", "tier": "fe"/' "$tmp/m/pod.json" >"$tmp/m/pod2.json"
control requests/clear
expect "apply pod again" 'pod/web configured' K apply -f "$tmp/m/pod2.json"
expect "apply sent a strategic merge patch" 'application/strategic-merge-patch\+json' requests
full && expect "labels" 'app=web,tier=fe' K get pod web -n team-a --show-labels
expect "last-applied" '"tier":"fe"' jget /api/v1/namespaces/team-a/pods/web '.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]'
expect "apply queue" 'queue.scheduling.run.ai/team-a created' K apply -f "$tmp/m/queue.json"
sed 's/"quota": 4/"quota": 6/' "$tmp/m/queue.json" >"$tmp/m/queue2.json"
control requests/clear
expect "apply queue again" 'queue.scheduling.run.ai/team-a configured' K apply -f "$tmp/m/queue2.json"
expect "apply CR sent a merge patch" '"PATCH","path":"/apis/scheduling.run.ai/v2/queues/team-a"[^}]*merge-patch' requests
expect "get queues" '^team-a +10 +root' K get queues.scheduling.run.ai -A
expect "queue quota" '^6$' jget /apis/scheduling.run.ai/v2/queues/team-a .spec.resources.gpu.quota
expect_fail "strict validation" 'strict decoding error: unknown field "spec.bogus"' \
  K apply -f <(sed 's/"priority": 10/"priority": 10, "bogus": 1/' "$tmp/m/queue.json")
expect "create run" 'run.kruntimes.io/r1 created' K create -f "$tmp/m/run.json"
expect "get runs -o yaml" 'kind: Run' K get runs -A -o yaml
full && expect "run columns" '^team-a +r1 +python' K get runs -A -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name,RT:.spec.runtime --no-headers
full && expect "label" 'configmap/c1 labeled' sh -c "timeout 30 $KUBECTL --cache-dir $tmp/cache create configmap c1 -n team-a --from-literal=a=b >/dev/null && timeout 30 $KUBECTL --cache-dir $tmp/cache label configmap c1 -n team-a x=y"
full && expect "replace" 'configmap/c1 replaced' sh -c "timeout 30 $KUBECTL --cache-dir $tmp/cache get cm c1 -n team-a -o json | sed 's/\"a\": \"b\"/\"a\": \"c\"/' | timeout 30 $KUBECTL --cache-dir $tmp/cache replace -f -"
full && expect "replaced data" '^c$' jget /api/v1/namespaces/team-a/configmaps/c1 .data.a
expect "create namespace (protobuf)" 'namespace/extra created' K create namespace extra
full && expect "create priorityclass (protobuf)" 'priorityclass.scheduling.k8s.io/high created' K create priorityclass high --value=1000
full && expect "cordon" 'node/node-a cordoned' K cordon node-a
full && expect "cordoned" 'Ready,SchedulingDisabled' K get nodes
full && expect "uncordon" 'node/node-a uncordoned' K uncordon node-a

# ---- server-side apply -----------------------------------------------------------------------
cat >"$tmp/m/q-ssa.json" <<'EOF'
{"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "team-b"},
 "spec": {"parentQueue": "root", "priority": 1, "accountedResources": [{"resourceRef": "gpu", "limit": "16"}]}}
EOF
sed 's/"priority": 1,/"priority": 2,/' "$tmp/m/q-ssa.json" >"$tmp/m/q-ssa2.json"
expect "apply --server-side" 'queue.scheduling.run.ai/team-b serverside-applied' K apply --server-side -f "$tmp/m/q-ssa.json"
expect "managedFields" '^kubectl Apply$' jget /apis/scheduling.run.ai/v2/queues/team-b '.metadata.managedFields[0] | "\(.manager) \(.operation)"'
expect_fail "ssa conflict" 'Apply failed with 1 conflict: conflict with "kubectl": .spec.priority' \
  K apply --server-side --field-manager=other -f "$tmp/m/q-ssa2.json"
expect "ssa force" 'serverside-applied' K apply --server-side --field-manager=other --force-conflicts -f "$tmp/m/q-ssa2.json"
expect "ssa forced value" '^2 other$' jget /apis/scheduling.run.ai/v2/queues/team-b '"\(.spec.priority) \([.metadata.managedFields[] | select(.fieldsV1["f:spec"]["f:priority"]) | .manager] | join(","))"'
full && expect "ssa pod" 'pod/web serverside-applied' K apply --server-side --force-conflicts -f "$tmp/m/pod2.json"

# ---- patch ------------------------------------------------------------------------------------
expect "patch merge queue" 'patched' K patch queue team-a --type merge -p '{"spec":{"priority":5}}'
expect "patch json queue" 'patched' K patch queue team-a --type json -p '[{"op":"test","path":"/spec/priority","value":5},{"op":"replace","path":"/spec/priority","value":7}]'
expect_fail "patch json test fails" 'the server rejected our request due to an error in our request' \
  K patch queue team-a --type json -p '[{"op":"test","path":"/spec/priority","value":99},{"op":"replace","path":"/spec/priority","value":8}]'
expect_fail "patch strategic CR" 'not supported by scheduling.run.ai/v2, Kind=Queue' \
  K patch queue team-a --type strategic -p '{"spec":{"priority":9}}'
expect "patch strategic pod" 'pod/web patched' K patch pod web -n team-a --type strategic -p '{"metadata":{"labels":{"patched":"yes"}},"spec":{"containers":[{"name":"main","image":"nginx:1.28"}]}}'
full && expect "patch merge pod" 'pod/web patched' K patch pod web -n team-a --type merge -p '{"metadata":{"annotations":{"a":"b"}}}'
expect "patch json node" 'node/node-a patched' K patch node node-a --type json -p '[{"op":"add","path":"/metadata/labels/zone","value":"z1"}]'
expect "patch strategic node" 'node/node-a patched' K patch node node-a -p '{"spec":{"taints":[{"key":"gpu","value":"yes","effect":"NoSchedule"}]}}'
expect "patched pod" '^nginx:1.28 yes$' jget /api/v1/namespaces/team-a/pods/web '"\(.spec.containers[0].image) \(.metadata.labels.patched)"'
expect "patched node" '^z1 gpu$' jget /api/v1/nodes/node-a '"\(.metadata.labels.zone) \(.spec.taints[0].key)"'
full && expect_fail "pod spec immutable" 'pod updates may not change fields other than' \
  K patch pod web -n team-a --type merge -p '{"spec":{"restartPolicy":"Never"}}'
expect "patch status run" 'run.kruntimes.io/r1 patched' K patch run r1 -n team-a --subresource status --type merge -p '{"status":{"phase":"Scheduled","assignedPod":"rt-0"}}'
expect "run phase" '^Scheduled rt-0 python$' jget /apis/kruntimes.io/v1alpha1/namespaces/team-a/runs/r1 '"\(.status.phase) \(.status.assignedPod) \(.spec.runtime)"'
expect "patch status queue (pruned)" 'patched' K patch queue team-a --subresource status --type merge -p '{"status":{"childQueues":["x"],"accountedResources":[{"resourceRef":"gpu"}]}}'
expect "queue status pruned" '^\{"childQueues":\["x"\]\}$' jget /apis/scheduling.run.ai/v2/queues/team-a '.status | tojson'
full && expect "patch status pod" 'pod/web patched' K patch pod web -n team-a --subresource status --type merge -p '{"status":{"phase":"Running"}}'
full && expect "pod status" '^Running$' jget /api/v1/namespaces/team-a/pods/web .status.phase

# ---- pagination ----------------------------------------------------------------------------------
for i in 1 2 3 4 5; do control put "{\"object\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"page-$i\",\"namespace\":\"extra\"}}}"; done
control requests/clear
expect "chunk-size" 'page-5' K get cm -n extra --chunk-size=2
expect "chunk requests" '"query":"continue=[^"]*limit=2"' requests

# ---- watches ---------------------------------------------------------------------------------------
K get cm -n extra -w --output-watch-events >"$tmp/w1.txt" 2>&1 &
pids+=("$!")
K get cm -n extra --watch-only -o jsonpath='{.type} {.object.metadata.name}{"\n"}' --output-watch-events >"$tmp/w2.txt" 2>&1 &
pids+=("$!")
nwatch=2
if full; then
  K get cm -n extra -w -o name >"$tmp/w3.txt" 2>&1 &
  pids+=("$!")
  nwatch=3
fi
for _ in $(seq 100); do
  n=$(requests | python3 -c 'import json,sys; print(sum(1 for r in json.load(sys.stdin)["requests"] if r.get("stream") and "/namespaces/extra/configmaps" in r["path"]))')
  [ "$n" -ge "$nwatch" ] && break
  sleep 0.1
done
api POST /api/v1/namespaces/extra/configmaps application/json '{"metadata":{"name":"w1"}}'
api PATCH /api/v1/namespaces/extra/configmaps/w1 application/merge-patch+json '{"metadata":{"labels":{"seen":"yes"}}}'
api DELETE /api/v1/namespaces/extra/configmaps/w1
for _ in $(seq 100); do
  grep -q 'DELETED w1' "$tmp/w2.txt" && grep -q '^DELETED' "$tmp/w1.txt" && break
  sleep 0.1
done
expect "watch table" '^ADDED +w1 +0' cat "$tmp/w1.txt"
expect "watch table modified" '^MODIFIED +w1' cat "$tmp/w1.txt"
expect "watch table deleted" '^DELETED +w1' cat "$tmp/w1.txt"
expect "watch-only events" '^ADDED w1$' cat "$tmp/w2.txt"
expect "watch-only order" '^ADDED w1\|MODIFIED w1\|DELETED w1\|$' sh -c "tr '\n' '|' <$tmp/w2.txt"
full && expect "watch -o name" 'configmap/w1' cat "$tmp/w3.txt"
if [ "$(grep -c . "$tmp/w2.txt")" = 3 ]; then ok; else bad "watch-only printed $(cat "$tmp/w2.txt")"; fi
# A watch answered with 410 (compacted history): kubectl get -w reports the Status.
control fault '{"action":"gone-watch","resource":"configmaps"}'
expect "get -w 410" 'Expired +too old resource version' K get cm -n extra -w --request-timeout=10s
# kubectl wait relists after a 410 and still sees the condition.
K wait --for=condition=Scheduled run/r1 -n team-a --timeout=15s >"$tmp/wait.txt" 2>&1 &
wait_pid=$!
pids+=("$wait_pid")
for _ in $(seq 100); do
  requests | grep -q '"path":"/apis/kruntimes.io/v1alpha1/namespaces/team-a/runs"[^}]*watch=true' && break
  sleep 0.1
done
control fault '{"action":"gone-watch","resource":"runs"}'
control fault '{"action":"close-watch","resource":"runs"}'
sleep 0.3
api PATCH /apis/kruntimes.io/v1alpha1/namespaces/team-a/runs/r1/status application/merge-patch+json \
  '{"status":{"conditions":[{"type":"Scheduled","status":"True","reason":"Assigned","message":"assigned to runtime pod rt-0","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}'
for _ in $(seq 150); do kill -0 "$wait_pid" 2>/dev/null || break; sleep 0.1; done
expect "wait condition" 'run.kruntimes.io/r1 condition met' cat "$tmp/wait.txt"

# ---- a group served later, CRDs created later ------------------------------------------------------
control omit-group '{"group":"kruntimes.io"}'
expect_fail "omitted group" "doesn't have a resource type \"runs\"|the server could not find the requested resource" K get runs -A
control serve-group '{"group":"kruntimes.io"}'
expect "served again" 'r1' K get runs -A
cat >"$tmp/m/crd.json" <<'EOF'
{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"},
 "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
  "versions": [{"name": "v1", "served": true, "storage": true,
   "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
   "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}}
EOF
expect "create crd" 'customresourcedefinition.apiextensions.k8s.io/widgets.example.com created' K apply -f "$tmp/m/crd.json"
expect "new kind" 'widget.example.com/w1 created' sh -c "echo '{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w1\",\"namespace\":\"extra\"},\"spec\":{\"size\":3}}' | timeout 30 $KUBECTL --cache-dir $tmp/cache create -f -"
expect "new kind columns" '^w1 +3' K get wd -n extra
full && expect "explain crd" 'size' K explain widgets.spec
expect "delete crd" 'deleted' K delete crd widgets.example.com
expect_fail "kind gone" "doesn't have a resource type|could not find" K get widgets -A

# ---- delete -------------------------------------------------------------------------------------------
expect "delete pod" 'pod "web" deleted' K delete pod web -n team-a
expect "deleted" '^NotFound$' jget /api/v1/namespaces/team-a/pods/web .reason
full && expect "delete -f" 'deleted' K delete -f "$tmp/m/queue.json"
expect "delete ns" 'namespace "extra" deleted' K delete ns extra
expect "ns content gone" '^0$' jget /api/v1/configmaps '[.items[] | select(.metadata.namespace == "extra")] | length'

# ---- the server's own tests ------------------------------------------------------------------
if [ "$KUBE_UNIT" = 1 ]; then
  if wait "$unit_pid"; then ok; else bad "server tests:"; cat "$tmp/unit.log"; fi
  tail -1 "$tmp/unit.log"
fi
if [ "$fail" != 0 ]; then
  echo "--- server log (last 30 lines)"
  tail -30 "$tmp/server.log"
fi
echo "kube_apiserver: PASS $pass FAIL $fail"
[ "$fail" = 0 ]
