#!/usr/bin/env bash
# The status controller and the queue gauges end to end (contract section 9, docs/controllers.md),
# run by ctest from the repository root:
#   bash tests/cli/status.sh path/to/tally
# Against the test API server (tests/kube/apiserver.py: server-side apply with managedFields, the
# status subresource, pruning against the CRD's structural schema):
#   - with KAI's Queue CRD as it is, the controller refuses: the log names the patch and the command,
#     no Queue status is written, the server stays ready;
#   - deploy/patches/queue-status.yaml applied with kubectl patch (so the patch works on a structural
#     schema): the status appears without a restart, the same figures as simulate -o json;
#   - a bound pod changes `used` on its queue and the ancestors within a second or two, without moving
#     lastTransitionTime; /metrics has used, limit, headroom (none for unlimited) and allocated;
#   - nothing is written while nothing changes; a burst of pods writes a queue at most once a second;
#   - another field manager's status fields and conditions are kept;
#   - an AccountedResource a queue references is deleted: False, AccountedResourceNotFound, its entry
#     gone everywhere;
#   - a restarted tally writes nothing that the server already holds.
# Every wait is bounded; every process is killed on exit.
set -u
source tests/cli/lib/logwait.sh
TALLY=$(realpath "${1:?usage: status.sh path/to/tally}")
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null; done
  [ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
for tool in curl openssl jq python3 kubectl; do
  command -v "$tool" >/dev/null || { echo "status.sh: $tool is missing (scripts/deps.sh test)"; exit 1; }
done

# The cluster: a node, two AccountedResources (one unlimited by default), a queue tree root -> team-a, team-b.
res='"resources":{"cpu":{"quota":-1,"limit":-1},"memory":{"quota":-1,"limit":-1},"gpu":{"quota":-1,"limit":-1}}'
# team-b's own quotas and limits, in KAI's units (cpu millicores, memory MB), for tally_queue_limit/quota.
resb='"resources":{"cpu":{"quota":2500,"limit":40000},"memory":{"quota":1000,"limit":-1},"gpu":{"quota":-1,"limit":8}}'
cat >"$tmp/seed.json" <<EOF
{"apiVersion":"v1","kind":"List","items":[
{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"64","memory":"512Gi","nvidia.com/gpu":"8","pods":"110"},"conditions":[{"type":"Ready","status":"True"}]}},
{"apiVersion":"scheduling.run.ai/v1alpha1","kind":"AccountedResource","metadata":{"name":"gpu"},"spec":{"defaults":{"limit":"-1"},"sources":[{"resourceName":"nvidia.com/gpu"}]}},
{"apiVersion":"scheduling.run.ai/v1alpha1","kind":"AccountedResource","metadata":{"name":"scratch"},"spec":{"defaults":{"limit":"4"},"sources":[{"resourceName":"cpu"}]}},
{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"root"},"spec":{$res}},
{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"team-a"},"spec":{"parentQueue":"root",$res,"accountedResources":[{"resourceRef":"gpu","limit":"16"}]}},
{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"team-b"},"spec":{"parentQueue":"root",$resb,"accountedResources":[{"resourceRef":"scratch","limit":"8"}]}}
]}
EOF
python3 tests/kube/apiserver.py --dir "$tmp/api" --seed "$tmp/seed.json" >"$tmp/api.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/api/ready.json" ] && break; sleep 0.1; done
[ -s "$tmp/api/ready.json" ] || { echo "status.sh: the test API server did not start"; cat "$tmp/api.log"; exit 1; }
KC="$tmp/api/kubeconfig"
API_URL=$(jq -r .url "$tmp/api/ready.json")
API_CA=$(jq -r .ca "$tmp/api/ready.json")
TOKEN=$(jq -r .token "$tmp/api/ready.json")
source tests/cli/lib/kubectl.sh
KUBECTL_BIN=$(tally_kubectl "$tmp/api/ready.json")
k() { "$KUBECTL_BIN" --kubeconfig "$KC" "$@"; }
control() { curl -sf --cacert "$API_CA" -X POST -H 'Content-Type: application/json' "$API_URL/_test/$1" -d "${2:-{\}}" >/dev/null; }
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=tally-status" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$tmp/tls.key" -out "$tmp/tls.crt" 2>/dev/null

# serve NAME: tally with the status controller and short lease timings; sets PORT and PID.
serve() {
  "$TALLY" serve --listen 127.0.0.1:0 --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key" --kubeconfig "$KC" \
    --controllers status --lease-duration 2s --renew-deadline 1500ms --retry-period 200ms \
    --watch-stale-after 5s >"$tmp/$1.log" 2>&1 &
  PID=$!
  pids+=("$PID")
  for _ in $(seq 100); do grep -q 'event=listening' "$tmp/$1.log" 2>/dev/null && break; sleep 0.05; done
  PORT=$(sed -n 's/.*event=listening.* port=\([0-9]*\).*/\1/p' "$tmp/$1.log" | head -1)
  for _ in $(seq 100); do [ "$(readyz)" = 200 ] && break; sleep 0.05; done
}
readyz() { curl -s -o /dev/null -w '%{http_code}' --cacert "$tmp/tls.crt" "https://127.0.0.1:$PORT/readyz"; }
metrics() { curl -s --cacert "$tmp/tls.crt" "https://127.0.0.1:$PORT/metrics"; }
# pod NAME QUEUE GPUS: a pod bound to n1 and running, stored as a kubelet would leave it.
pod() {
  control put "{\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$1\",\"namespace\":\"default\",\"labels\":{\"kai.scheduler/queue\":\"$2\"}},\"spec\":{\"schedulerName\":\"kai-scheduler\",\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"$3\"},\"limits\":{\"nvidia.com/gpu\":\"$3\"}}}]},\"status\":{\"phase\":\"Running\"}}}"
}
# queue NAME: the Queue as the API server holds it (curl: kubectl takes a few hundred ms a call).
queue() { curl -sf --cacert "$API_CA" -H "Authorization: Bearer $TOKEN" "$API_URL/apis/scheduling.run.ai/v2/queues/$1"; }
status() { queue "$1" | jq -c .status; }
# entry QUEUE REF: "used/limit" of the queue's accountedResources entry for REF.
entry() { queue "$1" | jq -r --arg r "$2" '.status.accountedResources // [] | map(select(.resourceRef == $r)) | if length == 0 then "none" else "\(.[0].used)/\(.[0].limit)" end'; }
cond() { queue "$1" | jq -r '.status.conditions // [] | map(select(.type == "AccountedResourcesResolved")) | if length == 0 then "none" else .[0] | "\(.status) \(.reason)" end'; }
ltt() { queue "$1" | jq -r '.status.conditions // [] | map(select(.type == "AccountedResourcesResolved")) | .[0].lastTransitionTime'; }
# until_eq WANT CMD...: waits up to 5 s for CMD to print WANT.
until_eq() { local want=$1; shift; for _ in $(seq 50); do [ "$("$@")" = "$want" ] && return 0; sleep 0.1; done; return 1; }
# writes [QUEUE]: the Queue status writes in the request log (of QUEUE, else of any queue).
writes() {
  curl -sf --cacert "$API_CA" "$API_URL/_test/requests" |
    jq --arg q "${1:-}" '[.requests[] | select(.method == "PATCH" and (.path | test("^/apis/scheduling.run.ai/v2/queues/[^/]+/status$")) and ($q == "" or .path == "/apis/scheduling.run.ai/v2/queues/\($q)/status"))] | length'
}

# ---- KAI's CRD as it is: refused -----------------------------------------------------------
serve a
[ "$(readyz)" = 200 ] && ok || { bad "serve did not become ready"; cat "$tmp/a.log"; exit 1; }
for _ in $(seq 50); do grep -q 'event=queue-status-refused' "$tmp/a.log" && break; sleep 0.1; done
grep 'event=queue-status-refused' "$tmp/a.log" | grep -q 'apply deploy/patches/queue-status.yaml (kubectl patch crd queues.scheduling.run.ai --type=json --patch-file deploy/patches/queue-status.yaml)' \
  && ok || { bad "no refusal naming the patch and the command in the log"; cat "$tmp/a.log"; }
grep 'event=queue-status-refused' "$tmp/a.log" | grep -q 'has no status.accountedResources list-map keyed by resourceRef and has status.conditions that is not a list-map keyed by type' \
  && ok || bad "the refusal should say what the CRD lacks: $(grep queue-status-refused "$tmp/a.log")"
sleep 1
[ "$(writes)" = 0 ] && ok || bad "nothing may be written to Queue status while the CRD lacks the fields: $(writes) writes"
[ "$(readyz)" = 200 ] && kill -0 "$PID" 2>/dev/null && ok || bad "the refusal must not stop the server"
[ "$(grep -c 'event=queue-status-refused' "$tmp/a.log")" = 1 ] && ok || bad "the refusal is logged once, not per check"

# ---- the patch, applied as an operator would: the status appears without a restart -----------
k patch crd queues.scheduling.run.ai --type json --patch-file deploy/patches/queue-status.yaml >"$tmp/patch.out" 2>&1 \
  && ok || { bad "kubectl patch with deploy/patches/queue-status.yaml failed"; cat "$tmp/patch.out"; }
until_eq "True Resolved" cond team-a && ok || { bad "team-a has no AccountedResourcesResolved True: $(status team-a)"; cat "$tmp/a.log"; }
log_has "$tmp/a.log" 'event=queue-status-enabled' && ok || bad "no queue-status-enabled line once the patch is there"
until_eq "0/16" entry team-a gpu && [ "$(entry team-a scratch)" = "0/4" ] && [ "$(entry root gpu)" = "0/-1" ] \
  && [ "$(entry team-b scratch)" = "0/8" ] && ok || bad "accountedResources at start: team-a $(status team-a), root $(status root)"
# The same set and figures as simulate -o json's `accounted` of each queue.
"$TALLY" simulate -o json --kubeconfig "$KC" 2>/dev/null | jq -S '[.queues[] | {name, accounted}]' >"$tmp/sim.json"
k get queues.scheduling.run.ai -o json | jq -S '[.items[] | {name: .metadata.name, accounted: ([.status.accountedResources[] | {key: .resourceRef, value: {used, limit}}] | from_entries)}] | sort_by(.name)' >"$tmp/st.json"
cmp -s "$tmp/sim.json" "$tmp/st.json" && ok || { bad "status differs from simulate -o json"; diff "$tmp/sim.json" "$tmp/st.json"; }
queue team-a | jq -e '.metadata.managedFields[] | select(.manager == "tally" and .operation == "Apply" and .subresource == "status")' >/dev/null \
  && ok || bad "tally's fields should be owned by manager tally (Apply, status)"

# ---- a bound pod: used moves on the queue and its ancestors, lastTransitionTime does not ---------
t0=$(ltt team-a)
pod a1 team-a 2
until_eq "2/16" entry team-a gpu && ok || bad "team-a gpu after a1: $(entry team-a gpu)"
[ "$(entry root gpu)" = "2/-1" ] && [ "$(entry team-a scratch)" = "1/4" ] && [ "$(entry team-b gpu)" = "0/-1" ] \
  && ok || bad "after a1: root gpu $(entry root gpu), team-a scratch $(entry team-a scratch), team-b gpu $(entry team-b gpu)"
[ "$(ltt team-a)" = "$t0" ] && ok || bad "lastTransitionTime moved without a transition: $t0 -> $(ltt team-a)"
metrics >"$tmp/m.txt"
grep -qx 'tally_queue_accounted_used{queue="team-a",resource="gpu"} 2' "$tmp/m.txt" &&
  grep -qx 'tally_queue_accounted_limit{queue="team-a",resource="gpu"} 16' "$tmp/m.txt" &&
  grep -qx 'tally_queue_accounted_headroom{queue="team-a",resource="gpu"} 14' "$tmp/m.txt" &&
  grep -qx 'tally_queue_accounted_used{queue="root",resource="gpu"} 2' "$tmp/m.txt" &&
  grep -qx 'tally_queue_allocated{queue="team-a",resource="nvidia.com/gpu"} 2' "$tmp/m.txt" &&
  grep -qx 'tally_queue_allocated{queue="root",resource="cpu"} 1' "$tmp/m.txt" &&
  grep -qx 'tally_queue_allocated{queue="team-b",resource="nvidia.com/gpu"} 0' "$tmp/m.txt" &&
  ok || { bad "queue gauges"; grep tally_queue "$tmp/m.txt"; }
grep -qx 'tally_queue_limit{queue="team-b",resource="cpu"} 40' "$tmp/m.txt" &&
  grep -qx 'tally_queue_quota{queue="team-b",resource="cpu"} 2.5' "$tmp/m.txt" &&
  grep -qx 'tally_queue_quota{queue="team-b",resource="memory"} 1000000000' "$tmp/m.txt" &&
  grep -qx 'tally_queue_limit{queue="team-b",resource="nvidia.com/gpu"} 8' "$tmp/m.txt" &&
  ! grep -q 'tally_queue_limit{queue="team-b",resource="memory"}' "$tmp/m.txt" &&
  ! grep -q 'tally_queue_\(limit\|quota\){queue="root"' "$tmp/m.txt" &&
  ok || { bad "spec.resources gauges (limit and quota in cores, bytes, devices; none when unlimited)"; grep 'tally_queue_\(limit\|quota\)' "$tmp/m.txt"; }
! grep -q 'tally_queue_accounted_limit{queue="root",resource="gpu"}' "$tmp/m.txt" &&
  ! grep -q 'tally_queue_accounted_headroom{queue="root",resource="gpu"}' "$tmp/m.txt" &&
  ok || bad "no limit or headroom series for an unlimited AccountedResource"

# A name no API server would take (stored directly): its label value escaped as the text format wants.
control put '{"object":{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"odd\"q\\x"},"spec":{"parentQueue":"root"}}}' \
  || bad "/_test/put of a queue with an odd name"
for _ in $(seq 30); do metrics | grep -q 'queue="odd' && break; sleep 0.1; done
metrics | grep -qxF 'tally_queue_accounted_used{queue="odd\"q\\x",resource="gpu"} 0' && ok || { bad "label values unescaped"; metrics | grep odd; }
control delete '{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","name":"odd\"q\\x"}'

# ---- nothing changes: nothing is written ---------------------------------------------------------
control requests/clear
sleep 3
[ "$(writes)" = 0 ] && ok || bad "$(writes) Queue status writes in 3 s without a change"

# ---- a burst: at most one write per queue per second ----------------------------------------------
control requests/clear
for i in 1 2 3 4 5 6 7 8; do pod b$i team-a 0; sleep 0.12; done
until_eq "9/4" entry team-a scratch && ok || bad "team-a scratch after the burst: $(entry team-a scratch)"
gap=$(curl -sf --cacert "$API_CA" "$API_URL/_test/requests" | jq '[.requests[] | select(.method == "PATCH" and .path == "/apis/scheduling.run.ai/v2/queues/team-a/status")
  | .time | split(".") as [$s, $ms] | ($s + "Z" | fromdateiso8601) * 1000 + ($ms | rtrimstr("Z") | tonumber)]
  | sort | if length < 2 then 100000 else [range(1; length) as $i | .[$i] - .[$i - 1]] | min end')
n=$(writes team-a)
[ "$n" -ge 2 ] && [ "$gap" -ge 900 ] && ok || bad "team-a written $n times in the burst, closest two $gap ms apart (want >= 2 writes, >= 1 s apart)"

# ---- another field manager's status is kept ---------------------------------------------------------
curl -sf --cacert "$API_CA" -H "Authorization: Bearer $TOKEN" -X PATCH -H 'Content-Type: application/apply-patch+yaml' \
  "$API_URL/apis/scheduling.run.ai/v2/queues/team-a/status?fieldManager=kai-scheduler" \
  -d '{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"team-a"},"status":{"allocated":{"cpu":"9"},"conditions":[{"type":"KaiHealthy","status":"True","reason":"Ok","message":"fine"}]}}' \
  >/dev/null && ok || bad "another manager's apply to team-a status was refused"
[ "$(cond team-a)" = "True Resolved" ] && ok || bad "another manager's conditions replaced tally's: $(status team-a)"
pod c1 team-a 1
until_eq "3/16" entry team-a gpu && ok || bad "team-a gpu after c1: $(entry team-a gpu)"
st=$(status team-a)
echo "$st" | jq -e '.allocated.cpu == "9" and ([.conditions[] | select(.type == "KaiHealthy" and .reason == "Ok")] | length) == 1' >/dev/null \
  && ok || bad "tally's apply dropped the other manager's fields: $st"

# ---- an AccountedResource is deleted: the condition turns False, the entry goes ----------------------
t0=$(ltt team-b)
k delete accountedresources.scheduling.run.ai scratch >/dev/null
until_eq "False AccountedResourceNotFound" cond team-b && ok || bad "team-b after scratch was deleted: $(status team-b)"
msg=$(queue team-b | jq -r '.status.conditions[] | select(.type == "AccountedResourcesResolved") | .message')
[ "$msg" = 'AccountedResource "scratch" referenced by spec.accountedResources does not exist' ] && ok || bad "team-b's message: $msg"
[ "$(ltt team-b)" != "$t0" ] && ok || bad "a transition should move lastTransitionTime"
until_eq none entry team-a scratch && [ "$(entry team-b scratch)" = none ] && [ "$(entry root scratch)" = none ] \
  && [ "$(cond team-a)" = "True Resolved" ] && ok || bad "the deleted AccountedResource's entries should go: $(status team-a)"

# ---- a restart writes nothing the server already holds ----------------------------------------------
kill "$PID"
for _ in $(seq 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
control requests/clear
serve b
for _ in $(seq 50); do grep -q 'event=queue-status-enabled' "$tmp/b.log" && break; sleep 0.1; done
sleep 2
[ "$(writes)" = 0 ] && grep -q 'event=queue-status-enabled' "$tmp/b.log" && ok || { bad "a restarted tally wrote $(writes) statuses the server already held"; cat "$tmp/b.log"; }
pod d1 team-b 1
until_eq "1/-1" entry team-b gpu && ok || bad "the restarted tally should still write changes: team-b gpu $(entry team-b gpu)"

# Both replicas stopped cleanly (under ASan+UBSan a leak or undefined behaviour is in their logs).
kill "$PID"
for _ in $(seq 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
! grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error' "$tmp/a.log" "$tmp/b.log" && ok || bad "sanitizer reports in serve's logs"

echo "status: $pass passed, $fail failed"
[ "$fail" = 0 ]
