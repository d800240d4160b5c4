#!/usr/bin/env bash
# The gating controller and /mutate/pods end to end (contract sections 3 and 9, docs/controllers.md),
# run by ctest from the repository root:
#   bash tests/cli/gating.sh path/to/tally
# Against the test API server (tests/kube/apiserver.py), which calls tally's /mutate/pods through a
# MutatingWebhookConfiguration as a real API server would, with kubectl playing the users:
#   - a pod created by kubectl gets the gate from the webhook; other gates stay;
#   - gated pods within the queue's limit are ungated (a JSON patch with a test op, the admitted
#     timestamp, QueueAdmitted True, an Admitted event); the one over it is held with KAI's message,
#     QueueAdmitted False and exactly one QueueAdmissionHeld event however many cycles run;
#   - a limit raised with kubectl patch admits the next workload; a freed limit (a pod deleted) too;
#   - a gang is admitted all together or not at all, its subGroups and minSubGroup read as simulate
#     reads them (a subgroup below its minMember holds its pods, and the gang when it is required);
#     a foreign gate is never touched; a queue that opts out is ungated at once; a pod of a
#     missing queue stays gated (QueueDoesNotExist);
#   - an admission cut short (no gate, the admitted timestamp, no condition) is finished once;
#   - the Reserved bucket expires after --reservation-timeout;
#   - a limit that depends on placement holds a pod only where it binds on every node class the pod
#     could use, as `tally simulate` says on the same objects (compared pod by pod);
#   - two replicas: only the lease holder writes; the leader is killed, the other takes over within
#     lease duration + 2 x retry period, and no gate is removed twice (one Admitted event per pod).
# Every wait is bounded; every process is killed on exit.
set -u
TALLY=$(realpath "${1:?usage: gating.sh path/to/tally}")
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
for tool in curl openssl jq python3 kubectl; do
  command -v "$tool" >/dev/null || { echo "gating.sh: $tool is missing (scripts/deps.sh test)"; exit 1; }
done

python3 tests/kube/apiserver.py --dir "$tmp/api" >"$tmp/api.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/api/ready.json" ] && break; sleep 0.1; done
[ -s "$tmp/api/ready.json" ] || { echo "gating.sh: the test API server did not start"; cat "$tmp/api.log"; exit 1; }
KC="$tmp/api/kubeconfig"
source tests/cli/lib/kubectl.sh
KUBECTL_BIN=$(tally_kubectl "$tmp/api/ready.json")
k() { "$KUBECTL_BIN" --kubeconfig "$KC" "$@"; }
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=tally-gating" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$tmp/tls.key" -out "$tmp/tls.crt" 2>/dev/null

# serve NAME ARGS...: a replica with the gating controller and short lease timings; sets PORT_<NAME>.
serve() {
  local name=$1
  shift
  "$TALLY" serve --listen 127.0.0.1:0 --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key" --kubeconfig "$KC" \
    --controllers gating --lease-duration 2s --renew-deadline 1500ms --retry-period 200ms \
    --watch-stale-after 5s "$@" >"$tmp/$name.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  eval "PID_$name=$pid"
  for _ in $(seq 100); do grep -q 'event=listening' "$tmp/$name.log" 2>/dev/null && break; sleep 0.05; done
  local port
  port=$(sed -n 's/.*event=listening.* port=\([0-9]*\).*/\1/p' "$tmp/$name.log" | head -1)
  eval "PORT_$name=$port"
  # Until it has listed every kind it answers 503 and the API server applies failurePolicy.
  for _ in $(seq 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$tmp/tls.crt" "https://127.0.0.1:$port/readyz")" = 200 ] && break
    sleep 0.05
  done
}
# gates POD: the pod's scheduling gates, comma-separated.
# The checks read with curl (users act with kubectl): they poll, and a kubectl process each time
# would cost the suite more CPU than everything else in it.
GATE=kai.scheduler/queue-admission
API_URL=$(jq -r .url "$tmp/api/ready.json")
API_CA=$(jq -r .ca "$tmp/api/ready.json")
TOKEN=$(jq -r .token "$tmp/api/ready.json")
get() { curl -sf --cacert "$API_CA" -H "Authorization: Bearer $TOKEN" "$API_URL/api/v1/namespaces/default/$1"; }
gates() { get "pods/$1" | jq -r '[.spec.schedulingGates // [] | .[].name] | join(",")'; }
cond() { get "pods/$1" | jq -r '.status.conditions // [] | map(select(.type == "QueueAdmitted")) | .[0] | "\(.status) \(.reason)"'; }
events() { get events | jq -r --arg p "$1" --arg r "$2" '[.items[] | select(.involvedObject.name == $p and .reason == $r)] | length'; }
# until_gates POD WANT: waits up to 5 s for the pod's gates to be WANT.
until_gates() { for _ in $(seq 50); do [ "$(gates "$1")" = "$2" ] && return 0; sleep 0.1; done; return 1; }
queue() {
  cat <<EOF
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: $1
  labels: {kai.scheduler/queue-admission-gating: "${3:-true}"}
spec:
  resources:
    cpu: {quota: -1, limit: $2, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
    gpu: {quota: -1, limit: -1, overQuotaWeight: 1}
EOF
}
# pod NAME QUEUE CPU [GATES-YAML] [ANNOTATIONS-YAML]
pod() {
  cat <<EOF
---
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: default
  labels: {kai.scheduler/queue: $2}
  annotations: {${5:-}}
spec:
  schedulerName: kai-scheduler
  schedulingGates: [${4:-}]
  containers: [{name: c, image: x, resources: {requests: {cpu: "$3"}}}]
EOF
}

{ queue q1 4000; echo ---; queue free 1000 false; } | k apply -f - >/dev/null
serve a
[ -n "$PORT_a" ] && ok || { bad "serve did not start"; cat "$tmp/a.log"; exit 1; }
CA=$(base64 -w0 "$tmp/tls.crt")
cat <<EOF | k apply -f - >/dev/null && ok || bad "the MutatingWebhookConfiguration was refused"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: tally-gate
webhooks:
- name: gate.tally.dev
  clientConfig:
    url: https://127.0.0.1:$PORT_a/mutate/pods
    caBundle: $CA
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 5
EOF

# The webhook gates what kubectl creates; the controller then decides.
{ pod p1 q1 2; pod p2 q1 2; pod p3 q1 2; } | k apply -f - >/dev/null
until_gates p1 "" && until_gates p2 "" && ok || bad "p1 and p2 fit the limit and should be ungated: $(gates p1) / $(gates p2)"
[ "$(gates p3)" = kai.scheduler/queue-admission ] && ok || bad "p3 is over the limit and must stay gated: '$(gates p3)'"
for _ in $(seq 30); do [ "$(cond p3)" = "False OverLimit" ] && break; sleep 0.1; done
[ "$(cond p3)" = "False OverLimit" ] && ok || bad "p3 should carry QueueAdmitted False OverLimit: $(cond p3)"
[ "$(cond p1)" = "True Admitted" ] && ok || bad "p1 should carry QueueAdmitted True Admitted: $(cond p1)"
k get pod p1 -o json | jq -e '.metadata.annotations["kai.scheduler/queue-admitted-timestamp"] | test("Z$")' >/dev/null \
  && ok || bad "p1 lacks the admitted timestamp"
msg=$(k get pod p3 -o json | jq -r '.status.conditions[] | select(.type == "QueueAdmitted") | .message')
[ "$msg" = "q1 quota has reached the allowable limit of CPU cores. Limit is 4 cores, currently 4 cores allocated and workload requested 2 cores" ] \
  && ok || bad "p3's message: $msg"
sleep 1.5  # several more cycles: still one event
[ "$(events p3 QueueAdmissionHeld)" = 1 ] && ok || bad "one QueueAdmissionHeld event, not $(events p3 QueueAdmissionHeld)"
[ "$(events p1 Admitted)" = 1 ] && ok || bad "one Admitted event for p1"

# A limit raised with kubectl patch admits the next workload.
k patch queues.scheduling.run.ai q1 --type merge -p '{"spec":{"resources":{"cpu":{"limit":6000}}}}' >/dev/null
until_gates p3 "" && ok || bad "a raised limit should admit p3"
[ "$(cond p3)" = "True Admitted" ] && ok || bad "p3 should be True Admitted now: $(cond p3)"

# A freed limit admits the next: delete p1, then p4 (2 cores) fits.
pod p4 q1 2 | k apply -f - >/dev/null
sleep 0.5
[ "$(gates p4)" = kai.scheduler/queue-admission ] && ok || bad "p4 should wait for room"
k delete pod p1 --wait=false >/dev/null
until_gates p4 "" && ok || bad "deleting p1 should admit p4"

# A foreign gate: the pod is never touched (no condition either), its gates stay as they are.
pod f1 q1 1 '{name: example.com/other}' | k apply -f - >/dev/null
sleep 1
[ "$(gates f1)" = "example.com/other,kai.scheduler/queue-admission" ] && ok || bad "f1's gates: '$(gates f1)'"
[ "$(cond f1)" = "null null" ] && ok || bad "a pod with a foreign gate gets no condition: $(cond f1)"

# A queue that opts out: its pods are ungated at once, whatever they ask.
pod o1 free 5 | k apply -f - >/dev/null
until_gates o1 "" && ok || bad "a pod of a queue that is not gated should be ungated: '$(gates o1)'"
# A queue that does not exist: gated, with the reason.
pod m1 nowhere 1 | k apply -f - >/dev/null
for _ in $(seq 30); do [ "$(cond m1)" = "False QueueDoesNotExist" ] && break; sleep 0.1; done
[ "$(cond m1)" = "False QueueDoesNotExist" ] && ok || bad "m1: $(cond m1)"

# An admission cut short (a leader killed between its ungate patch and its follow-ups): no gate, the
# admitted timestamp, no QueueAdmitted. The leader finishes it, once: the condition and one event.
pod half free 0.1 '' "kai.scheduler/queue-admitted-timestamp: \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"" \
  | k apply -f - >/dev/null
for _ in $(seq 30); do [ "$(cond half)" = "True Admitted" ] && break; sleep 0.1; done
sleep 1  # more cycles: still one event
[ "$(cond half),$(events half Admitted)" = "True Admitted,1" ] && ok \
  || bad "an admission cut short should be finished once: $(cond half), $(events half Admitted) events"

# A gang (minMember 2) in a queue with room for one pod: neither is admitted; with room, both.
queue g1 1000 | k apply -f - >/dev/null
cat <<EOF | k apply -f - >/dev/null
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: gang, namespace: default}
spec: {queue: g1, minMember: 2}
EOF
{ pod w1 g1 1 '' 'pod-group-name: gang'; pod w2 g1 1 '' 'pod-group-name: gang'; } | k apply -f - >/dev/null
sleep 1
[ "$(gates w1),$(gates w2)" = "kai.scheduler/queue-admission,kai.scheduler/queue-admission" ] && ok \
  || bad "a gang over the limit is admitted all or nothing: $(gates w1) / $(gates w2)"
k patch queues.scheduling.run.ai g1 --type merge -p '{"spec":{"resources":{"cpu":{"limit":2000}}}}' >/dev/null
until_gates w1 "" && until_gates w2 "" && ok || bad "the gang should be admitted together once it fits"

# Subgroups (KAI's hierarchical PodGroups, src/gang.c), read as simulate reads them. "tree": every
# subgroup is required and "a" needs 3 pods: with 2 of them there the whole gang waits, although
# its own minMember (2) is met; the third pod admits all four together.
queue sg1 100000 | k apply -f - >/dev/null
# podgroup NAME SPEC: a PodGroup of sg1 (SPEC: more of its spec, in flow style).
podgroup() {
  printf 'apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata: {name: %s, namespace: default}\nspec: {queue: sg1, %s}\n' "$1" "$2"
}
podgroup tree 'minMember: 2, subGroups: [{name: a, minMember: 3}, {name: b, minMember: 1}]' | k apply -f - >/dev/null
podgroup pick 'minSubGroup: 1, subGroups: [{name: one, minMember: 2}, {name: two, minMember: 2}]' | k apply -f - >/dev/null
# sgpod NAME PODGROUP SUBGROUP: a gated pod of sg1 in that subgroup.
sgpod() {
  pod "$1" sg1 0.1 '{name: kai.scheduler/queue-admission}' "pod-group-name: $2" \
    | sed "s|labels: {kai.scheduler/queue: sg1}|labels: {kai.scheduler/queue: sg1, kai.scheduler/subgroup-name: $3}|"
}
{ sgpod ta1 tree a; sgpod ta2 tree a; sgpod tb1 tree b; } | k apply -f - >/dev/null
# "pick" needs one of its subgroups: "one" is complete and goes; "two" has one pod of its 2 and
# waits, gated.
{ sgpod px1 pick one; sgpod px2 pick one; sgpod py1 pick two; } | k apply -f - >/dev/null
until_gates px1 "" && until_gates px2 "" && ok || bad "pick: subgroup one is complete and should be admitted: $(gates px1) / $(gates px2)"
sleep 1  # several cycles
[ "$(gates ta1),$(gates ta2),$(gates tb1)" = "$GATE,$GATE,$GATE" ] && ok \
  || bad "tree: subgroup a has 2 of its 3 pods, so nothing of the gang may go: $(gates ta1) / $(gates ta2) / $(gates tb1)"
[ "$(cond ta1)" = "null null" ] && ok || bad "a gang waiting for its pods gets no condition: $(cond ta1)"
[ "$(gates py1)" = "$GATE" ] && ok || bad "pick: subgroup two is below its minMember and its pod must wait: '$(gates py1)'"
sgpod ta3 tree a | k apply -f - >/dev/null
for p in ta1 ta2 ta3 tb1; do until_gates $p "" || break; done
[ "$(gates ta1)$(gates ta2)$(gates ta3)$(gates tb1)" = "" ] && ok || bad "tree: complete now, all four should be admitted"
sgpod py2 pick two | k apply -f - >/dev/null
until_gates py1 "" && until_gates py2 "" && ok || bad "pick: subgroup two is complete now: $(gates py1) / $(gates py2)"

# Two replicas: b follows; a is killed; b takes over and goes on, and nothing is ungated twice.
serve b
sleep 1
grep -q 'event=leader-elected' "$tmp/b.log" && bad "b must not lead while a holds the lease" || ok
kill -9 "$PID_a"
t0=$(date +%s.%N)
for _ in $(seq 100); do grep -q 'event=leader-elected' "$tmp/b.log" && break; sleep 0.05; done
t1=$(date +%s.%N)
grep -q 'event=leader-elected' "$tmp/b.log" && ok || bad "b did not take over"
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a <= 2.0 + 2 * 0.2 + 0.5) }' && ok \
  || bad "b took over after $(awk -v a="$t0" -v b="$t1" 'BEGIN{print b - a}') s, over lease duration + 2 x retry period"
# The webhook was a's (failurePolicy Ignore): p5 comes with the gate, as a real webhook would add it.
pod p5 q1 2 '{name: kai.scheduler/queue-admission}' | k apply -f - >/dev/null
k delete pod p2 --wait=false >/dev/null
until_gates p5 "" && ok || bad "the new leader did not admit p5"
for p in p2 p3 p4 o1 w1 w2; do
  [ "$(events $p Admitted)" -le 1 ] || bad "$p was admitted twice"
done
ok

# The Reserved bucket expires: an admitted pod that never binds holds its queue only so long.
kill "$PID_b"
serve c --reservation-timeout 8s
queue r1 1000 | k apply -f - >/dev/null
pod r-first r1 1 '{name: kai.scheduler/queue-admission}' | k apply -f - >/dev/null
until_gates r-first "" && ok || bad "r-first should be admitted"
[ "$(events r-first Admitted)" = 1 ] && ok || bad "r-first was admitted by the controller"
pod r-second r1 1 '{name: kai.scheduler/queue-admission}' | k apply -f - >/dev/null
sleep 1
[ "$(gates r-second)" = kai.scheduler/queue-admission ] && ok || bad "r-first's reservation should hold r-second back"
for _ in $(seq 150); do [ "$(gates r-second)" = "" ] && break; sleep 0.1; done
[ "$(gates r-second)" = "" ] && ok || bad "after the reservation timeout r-second should be admitted"

# A limit that depends on placement (an AccountedResource on node labels), decided by the controller
# as simulate decides it (contract section 3), and compared with `tally simulate` on the same
# objects. Queue pl may use 4 H200 GPUs and uses 4 (pl-run on h200-1); h200-1 and a100-1 have room.
#   pl-h200  selects H200: the limit binds on every node it could use -> Gated, OverLimit;
#   pl-any   no selector: an A100 spares it -> not queue policy, ungated (simulate binds it);
#   pl-full  only the nodes of pool "full" (h200-2, and a100-2 whose GPU is taken): the limit binds
#            on h200-2 and a100-2 has no room -> Unschedulable in simulate, ungated here.
kapply() { echo "$1" | k apply -f - >/dev/null; }
put() { curl -sf --cacert "$API_CA" -H "Authorization: Bearer $TOKEN" -X POST -H 'Content-Type: application/json' \
  "$API_URL/_test/put" -d "{\"object\":$1}" >/dev/null; }
# node NAME PRODUCT MIB GPUS [POOL]
node() {
  local taint='' label=''
  [ -n "${5:-}" ] && taint=",\"spec\":{\"taints\":[{\"key\":\"pool\",\"value\":\"$5\",\"effect\":\"NoSchedule\"}]}" \
    && label=",\"pool\":\"$5\""
  put "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$1\",\"labels\":{\"nvidia.com/gpu.product\":\"$2\",\"nvidia.com/gpu.memory\":\"$3\"$label}}$taint,\"status\":{\"allocatable\":{\"cpu\":\"64\",\"memory\":\"256Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"$4\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"
}
# gpupod NAME QUEUE GPUS NODE|"" [SELECTOR-JSON] [TOLERATIONS-JSON]: a pod running on NODE, stored
# as a kubelet leaves it; else a gated one, created with kubectl (the server defaults it, or the
# ungate patch would be refused as a change of the defaulted fields).
gpupod() {
  local bind='' gate=',"schedulingGates":[{"name":"kai.scheduler/queue-admission"}]' phase=Pending how=put
  [ -n "$4" ] && bind=",\"nodeName\":\"$4\"" && gate='' && phase=Running
  [ -z "$4" ] && how=kapply
  $how "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$1\",\"namespace\":\"default\",\"labels\":{\"kai.scheduler/queue\":\"$2\"}},\"spec\":{\"schedulerName\":\"kai-scheduler\"$bind$gate,\"nodeSelector\":${5:-{\}},\"tolerations\":${6:-[]},\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"$3\"},\"limits\":{\"nvidia.com/gpu\":\"$3\"}}}]},\"status\":{\"phase\":\"$phase\"}}"
}
cat <<EOF | k apply -f - >/dev/null
apiVersion: scheduling.run.ai/v1alpha1
kind: AccountedResource
metadata: {name: gpu-h200}
spec:
  defaults: {limit: '-1'}
  sources: [{resourceName: nvidia.com/gpu, match: {nodeLabels: {nvidia.com/gpu.product: H200}}}]
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: pl
  labels: {kai.scheduler/queue-admission-gating: "true"}
spec:
  resources:
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
    gpu: {quota: -1, limit: -1, overQuotaWeight: 1}
  accountedResources: [{resourceRef: gpu-h200, limit: '4'}]
EOF
node h200-1 H200 143771 8
node a100-1 A100-SXM4-80GB 81920 8
node h200-2 H200 143771 8 full
node a100-2 A100-SXM4-80GB 81920 1 full
full_sel='{"pool":"full"}'
full_tol='[{"key":"pool","value":"full","effect":"NoSchedule"}]'
gpupod pl-run pl 4 h200-1
gpupod other-run r1 1 a100-2 "$full_sel" "$full_tol"
sleep 0.5  # the running pods first: the controller must see the limit used
gpupod pl-h200 pl 1 '' '{"nvidia.com/gpu.product":"H200"}'
gpupod pl-any pl 1 ''
gpupod pl-full pl 1 '' "$full_sel" "$full_tol"
until_gates pl-any "" && ok || bad "pl-any: an A100 is spared by the gpu-h200 limit, so it should be ungated: '$(gates pl-any)'"
until_gates pl-full "" && ok || bad "pl-full: the limit spares a100-2, which is only full, so it should be ungated: '$(gates pl-full)'"
for _ in $(seq 30); do [ "$(cond pl-h200)" = "False OverLimit" ] && break; sleep 0.1; done
[ "$(gates pl-h200),$(cond pl-h200)" = "$GATE,False OverLimit" ] && ok \
  || bad "pl-h200: gpu-h200 binds on every node it could use, so it should stay gated: '$(gates pl-h200)', $(cond pl-h200)"
# simulate on the same objects: each pod's gate and condition against simulate's state and reason.
"$TALLY" simulate --kubeconfig "$KC" -o json >"$tmp/sim.json" 2>"$tmp/sim.err" || bad "simulate --kubeconfig: $(cat "$tmp/sim.err")"
for p in pl-h200 pl-any pl-full; do
  want=$(jq -r --arg p "$p" '.pods[] | select(.name == $p) | "\(.state) \(.reason)"' "$tmp/sim.json")
  case "$want" in
    "Gated OverLimit") [ "$(gates $p),$(cond $p)" = "$GATE,False OverLimit" ] ;;
    Bound*|Unschedulable*) [ "$(gates $p)" = "" ] ;;
    *) false ;;
  esac && ok || bad "$p: simulate says '$want', the controller left gates '$(gates $p)' and $(cond $p)"
done
[ "$(jq -r '.pods[] | select(.name == "pl-full") | .state' "$tmp/sim.json")" = Unschedulable ] && ok \
  || bad "the case meant: simulate should find pl-full Unschedulable: $(jq -c '.pods[] | select(.name == "pl-full")' "$tmp/sim.json")"
simmsg=$(jq -r '.pods[] | select(.name == "pl-h200") | .message' "$tmp/sim.json")
ctlmsg=$(get pods/pl-h200 | jq -r '.status.conditions[] | select(.type == "QueueAdmitted") | .message')
[ "$ctlmsg" = "$simmsg" ] && ok || bad "pl-h200's message: the controller's '$ctlmsg', simulate's '$simmsg'"

# Ungates go out in parallel (src/ctrl/gatectl.c, UNGATE_BATCH): 8 pods held in queue par, then
# room for all of them while the server takes 150 ms a request. The ungate patches of the one
# cycle that admits them overlap at the server (one after another, each would see only itself).
queue par 0 | k apply -f - >/dev/null
for i in 1 2 3 4 5 6 7 8; do pod "par-$i" par 0.1 '{name: kai.scheduler/queue-admission}'; done | k apply -f - >/dev/null
for _ in $(seq 50); do
  held=0
  for i in 1 2 3 4 5 6 7 8; do [ "$(cond "par-$i")" = "False OverLimit" ] && held=$((held + 1)); done
  [ $held = 8 ] && break
  sleep 0.1
done
[ $held = 8 ] && ok || bad "the 8 par pods should be held first: $held are"
fault() { curl -sf --cacert "$API_CA" -X POST -H 'Content-Type: application/json' "$API_URL/_test/fault" -d "$1" >/dev/null; }
fault '{"action":"latency","ms":150}'
k patch queues.scheduling.run.ai par --type merge -p '{"spec":{"resources":{"cpu":{"limit":1000}}}}' >/dev/null
for i in 1 2 3 4 5 6 7 8; do until_gates "par-$i" "" || break; done
fault '{"action":"clear"}'
ungated=0
for i in 1 2 3 4 5 6 7 8; do [ "$(gates "par-$i")" = "" ] && ungated=$((ungated + 1)); done
[ $ungated = 8 ] && ok || bad "a limit for all 8 par pods should admit them: $ungated are ungated"
most=$(curl -sf --cacert "$API_CA" "$API_URL/_test/requests" \
  | jq '[.requests[] | select(.method == "PATCH" and (.path | test("/pods/par-[0-9]+$"))) | .inflight] | max')
[ "${most:-0}" -ge 2 ] 2>/dev/null && ok || bad "the ungate patches should overlap at the server; at most $most did"
twice=0
for i in 1 2 3 4 5 6 7 8; do [ "$(events "par-$i" Admitted)" = 1 ] || twice=$((twice + 1)); done
[ $twice = 0 ] && ok || bad "each par pod should have one Admitted event; $twice do not"

echo "gating.sh: $pass passed, $fail failed"
[ $fail -eq 0 ]
