#!/usr/bin/env bash
# End-to-end checks of `tally serve` (contract section 7, docs/serve.md), run by ctest from the
# repository root:
#   bash tests/cli/serve.sh path/to/tally
# A throwaway certificate (openssl) in a temp dir, the server on 127.0.0.1 with a port the kernel
# picks (read back from the `listening` log line), curl --cacert as the client (Python's ssl +
# http.client as a second one, for keep-alive across a certificate swap). Every answer is compared
# with `tally admit` on the same review and state. Every wait is bounded; the servers are killed on
# exit whatever happens.
set -u
source tests/cli/lib/logwait.sh
TALLY=$(realpath "${1:?usage: serve.sh path/to/tally}")
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

for tool in curl openssl jq; do
  command -v "$tool" >/dev/null || { echo "serve.sh: $tool is missing (scripts/deps.sh test)"; exit 1; }
done

# cert NAME: a self-signed P-256 certificate for 127.0.0.1 in $tmp/NAME.{crt,key}.
cert() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=tally-test-$1" -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$tmp/$1.key" -out "$tmp/$1.crt" 2>/dev/null
}
cert a
cert b
cp "$tmp/a.crt" "$tmp/tls.crt"
cp "$tmp/a.key" "$tmp/tls.key"

# start NAME ARGS...: starts a server logging to $tmp/NAME.log; sets PORT and PID; waits for /readyz.
start() {
  local name=$1
  shift
  "$TALLY" serve --listen 127.0.0.1:0 --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key" "$@" \
    2>"$tmp/$name.log" &
  PID=$!
  pids+=("$PID")
  PORT=
  for _ in $(seq 100); do
    PORT=$(sed -n 's/.*event=listening .*port=\([0-9]*\).*/\1/p' "$tmp/$name.log" | head -1)
    [ -n "$PORT" ] && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$PORT" ]; then
    bad "$name: server did not start: $(cat "$tmp/$name.log")"
    return 1
  fi
  for _ in $(seq 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$tmp/tls.crt" "https://127.0.0.1:$PORT/readyz")" == 200 ] && return 0
    sleep 0.1
  done
  bad "$name: /readyz never answered 200"
  return 1
}

C=(curl -sS --max-time 10 --cacert "$tmp/tls.crt")
url() { echo "https://127.0.0.1:$PORT$1"; }

# post PATH FILE: POSTs FILE; the body to $tmp/out, the status code on stdout.
post() {
  "${C[@]}" -o "$tmp/out" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary @"$2" "$(url "$1")"
}

# same NAME PATH REVIEW STATE...: serve's answer equals `tally admit`'s (uid, allowed, status, warnings).
same() {
  local name=$1 path=$2 review=$3
  shift 3
  local code
  code=$(post "$path" "$review")
  [ "$code" == 200 ] || { bad "$name: HTTP $code ($(head -c 300 "$tmp/out"))"; return; }
  "$TALLY" admit "$@" <"$review" >"$tmp/admit.json" 2>/dev/null || { bad "$name: tally admit failed"; return; }
  local want got
  want=$(jq -cS '.response | {uid, allowed, status, warnings}' "$tmp/admit.json")
  got=$(jq -cS '.response | {uid, allowed, status, warnings}' "$tmp/out" 2>/dev/null)
  [ "$got" == "$want" ] && ok || bad "$name: serve and admit differ
     serve: $got
     admit: $want"
  jq -e '.apiVersion == "admission.k8s.io/v1" and .kind == "AdmissionReview"' "$tmp/out" >/dev/null \
    && ok || bad "$name: not an AdmissionReview response"
}

# metric NAME-WITH-LABELS: its value in /metrics.
metric() {
  "${C[@]}" "$(url /metrics)" | awk -v k="$1" '$1 == k { print $2 }'
}

# hup: SIGHUP and wait (5 s at most) until the reload shows in /metrics.
hup() {
  local before after
  before=$(( $(metric tally_state_reloads_total) + $(metric tally_state_reload_failures_total) ))
  kill -HUP "$PID"
  for _ in $(seq 50); do
    after=$(( $(metric tally_state_reloads_total) + $(metric tally_state_reload_failures_total) ))
    [ "$after" -gt "$before" ] && return 0
    sleep 0.1
  done
  bad "SIGHUP: no reload within 5 s"
}

# review KIND GROUP/VERSION OPERATION OBJECT [OLDOBJECT] [DRYRUN] > file
review() {
  local kind=$1 gv=$2 op=$3 obj=$4 old=${5:-null} dry=${6:-false}
  printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"uid-%s-%s","kind":{"group":"%s","version":"%s","kind":"%s"},"operation":"%s","dryRun":%s,"object":%s,"oldObject":%s}}' \
    "$kind" "$op" "${gv%/*}" "${gv#*/}" "$kind" "$op" "$dry" "$obj" "$old"
}

########################################################################################
# 1. Object validators against the example cluster.
mkdir -p "$tmp/state"
cp -r examples/cluster/. "$tmp/state/"
# Section 5 swaps in whole states with fewer kinds on purpose: --allow-state-shrink (reload.sh
# checks the refusal without it).
start main --state "$tmp/state" --allow-state-shrink || exit 1
MAIN_PID=$PID

RUN='{"apiVersion":"kruntimes.io/v1alpha1","kind":"Run","metadata":{"name":"r1","namespace":"default"},"spec":{"runtime":"python","resources":{"requests":{"runs":"%s"}},"mode":{"task":{"args":["x"]}}}}'
Q='{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"team-z"},"spec":{"parentQueue":"research","resources":{"cpu":{"quota":-1,"limit":-1},"memory":{"quota":-1,"limit":-1},"gpu":{"quota":-1,"limit":-1}},"accountedResources":%s}}'
AR='{"apiVersion":"scheduling.run.ai/v1alpha1","kind":"AccountedResource","metadata":{"name":"x"},"spec":{"sources":[%s]}}'
n=0
while IFS='|' read -r name path kind gv op obj old dry; do
  n=$((n + 1))
  review "$kind" "$gv" "$op" "$obj" "${old:-null}" "${dry:-false}" >"$tmp/r$n.json"
  same "$name" "$path" "$tmp/r$n.json" "$tmp/state"
done <<EOF
run-valid|/validate/runs|Run|kruntimes.io/v1alpha1|CREATE|$(printf "$RUN" 1)
run-milli|/validate/runs|Run|kruntimes.io/v1alpha1|CREATE|$(printf "$RUN" 2000m)
run-immutable|/validate/runs|Run|kruntimes.io/v1alpha1|UPDATE|$(printf "$RUN" 2)|$(printf "$RUN" 1)
run-dry-run-denied|/validate/runs|Run|kruntimes.io/v1alpha1|UPDATE|$(printf "$RUN" 2)|$(printf "$RUN" 1)|true
queue-valid|/validate/queues|Queue|scheduling.run.ai/v2|CREATE|$(printf "$Q" '[{"resourceRef":"gpu-h200","limit":"4"}]')
queue-missing-accres|/validate/queues|Queue|scheduling.run.ai/v2|CREATE|$(printf "$Q" '[{"resourceRef":"gpu-b300","limit":"4"}]')
queue-duplicate-ref|/validate/queues|Queue|scheduling.run.ai/v2|CREATE|$(printf "$Q" '[{"resourceRef":"gpu","limit":"4"},{"resourceRef":"gpu","limit":"8"}]')
queue-no-resources|/validate/queues|Queue|scheduling.run.ai/v2|CREATE|{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"bare"},"spec":{}}
accres-valid|/validate/accountedresources|AccountedResource|scheduling.run.ai/v1alpha1|CREATE|$(printf "$AR" '{"resourceName":"nvidia.com/gpu","match":{"nodeLabels":{"nvidia.com/gpu.product":"B300"}}}')
accres-two-sources|/validate/accountedresources|AccountedResource|scheduling.run.ai/v1alpha1|CREATE|$(printf "$AR" '{"resourceName":"nvidia.com/gpu","dra":{"deviceClassName":"gpu.nvidia.com"}}')
other-kind|/validate/queues|Deployment|apps/v1|CREATE|{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}}
EOF
jq -e '.response.uid == "uid-Run-CREATE" or .response.uid != null' "$tmp/out" >/dev/null && ok || bad "uid not echoed"

########################################################################################
# 2. Hostile and malformed requests.
head -c $((7 * 1024 * 1024)) /dev/zero | tr '\0' ' ' >"$tmp/big.json"
code=$(post /validate/queues "$tmp/big.json")
[ "$code" == 413 ] && ok || bad "oversized body (Content-Length): HTTP $code, want 413"
code=$("${C[@]}" -o "$tmp/out" -w '%{http_code}' -H 'Transfer-Encoding: chunked' --data-binary @"$tmp/big.json" "$(url /validate/queues)")
[ "$code" == 413 ] && ok || bad "oversized body (chunked): HTTP $code, want 413"
printf 'not json at all: [' >"$tmp/garbage"
code=$(post /validate/runs "$tmp/garbage")
[ "$code" == 400 ] && grep -q 'not a JSON or YAML object' "$tmp/out" && ok || bad "garbage: HTTP $code $(cat "$tmp/out")"
printf '{"kind":"Pod","apiVersion":"v1"}' >"$tmp/wrongkind"
code=$(post /validate/pods-resize "$tmp/wrongkind")
[ "$code" == 400 ] && grep -q 'AdmissionReview' "$tmp/out" && ok || bad "wrong kind: HTTP $code $(cat "$tmp/out")"
printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}' >"$tmp/norequest"
code=$(post /validate/runs "$tmp/norequest")
[ "$code" == 400 ] && grep -q 'no request with a uid' "$tmp/out" && ok || bad "no request: HTTP $code $(cat "$tmp/out")"
: >"$tmp/empty"
code=$(post /validate/runs "$tmp/empty")
[ "$code" == 400 ] && ok || bad "empty body: HTTP $code"
code=$("${C[@]}" -o /dev/null -w '%{http_code}' "$(url /validate/queues)")
[ "$code" == 405 ] && ok || bad "GET on a validator: HTTP $code, want 405"
code=$("${C[@]}" -o /dev/null -w '%{http_code}' "$(url /nowhere)")
[ "$code" == 404 ] && ok || bad "unknown path: HTTP $code, want 404"
code=$("${C[@]}" -o /dev/null -w '%{http_code}' "$(url /healthz)")
[ "$code" == 200 ] && ok || bad "/healthz: HTTP $code"
# A client that sends headers and then nothing must not hurt the others.
if command -v python3 >/dev/null; then
  python3 - "$PORT" <<'PY' &
import socket, sys, time
s = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(20)]
time.sleep(3)
PY
  slow=$!
  sleep 0.3
  code=$("${C[@]}" -o /dev/null -w '%{http_code}' "$(url /healthz)")
  [ "$code" == 200 ] && ok || bad "/healthz with 20 idle sockets open: HTTP $code"
  wait "$slow"
fi

########################################################################################
# 3. TLS: 1.2 and 1.3 accepted, older refused; keep-alive.
for v in 1.2 1.3; do
  code=$("${C[@]}" --tlsv$v --tls-max $v -o /dev/null -w '%{http_code}' "$(url /healthz)" 2>/dev/null)
  [ "$code" == 200 ] && ok || bad "TLS $v: HTTP $code"
done
if "${C[@]}" --tlsv1.1 --tls-max 1.1 -o /dev/null "$(url /healthz)" 2>/dev/null; then
  bad "TLS 1.1 accepted"
else
  ok
fi
conns=$("${C[@]}" -o /dev/null -o /dev/null -w '%{num_connects} ' "$(url /healthz)" "$(url /readyz)")
[ "$conns" == "1 0 " ] && ok || bad "keep-alive: connects per request '$conns', want '1 0 '"

########################################################################################
# 4. Concurrent clients: 8 curls of 25 requests each, all answered, all equal.
for c in $(seq 8); do
  (
    args=()
    for _ in $(seq 25); do args+=("$(url /validate/runs)"); done
    "${C[@]}" -H 'Content-Type: application/json' --data-binary @"$tmp/r2.json" "${args[@]}" \
      | jq -c '.response.allowed' | sort | uniq -c
  ) >"$tmp/conc$c" &
done
wait $(jobs -p | grep -v "^$MAIN_PID$") 2>/dev/null
for c in $(seq 8); do
  [ "$(tr -s ' ' <"$tmp/conc$c")" == " 25 false" ] && ok || bad "concurrent client $c: $(cat "$tmp/conc$c")"
done

########################################################################################
# 5. Resize reviews: each case's state swapped in by SIGHUP, then serve == admit.
for c in none-over-limit none-equal-limit dry-run-denied dry-run-admitted strict-finite-limit \
         hierarchy-ancestor-limit quota-memory infeasible-over podgroup-missing not-kai-scheduler \
         redistribute-full-queue gpu-change; do
  [ -f "tests/resize/$c/review.json" ] || { bad "no case $c"; continue; }
  rm -rf "$tmp/state" && mkdir "$tmp/state" && cp "tests/resize/$c/state.yaml" "$tmp/state/"
  hup
  same "resize-$c" /validate/pods-resize "tests/resize/$c/review.json" "$tmp/state"
done

# The same review, a different state, a different decision.
rm -rf "$tmp/state" && mkdir "$tmp/state" && cp tests/resize/none-over-limit/state.yaml "$tmp/state/"
hup
post /validate/pods-resize tests/resize/none-over-limit/review.json >/dev/null
[ "$(jq -r .response.allowed "$tmp/out")" == false ] && ok || bad "before reload: not denied"
sed -i 's/limit: 2000$/limit: 4000/' "$tmp/state/state.yaml"
hup
post /validate/pods-resize tests/resize/none-over-limit/review.json >/dev/null
[ "$(jq -r .response.allowed "$tmp/out")" == true ] && ok || bad "after reload: not allowed ($(cat "$tmp/out"))"
# A state that cannot be read is refused; the old one stays.
echo 'key: [unclosed' >"$tmp/state/broken.yaml"
hup
[ "$(metric tally_state_reload_failures_total)" == 1 ] && ok || bad "broken state: no reload failure counted"
post /validate/pods-resize tests/resize/none-over-limit/review.json >/dev/null
[ "$(jq -r .response.allowed "$tmp/out")" == true ] && ok || bad "broken state: the old state did not stay"
log_has "$tmp/main.log" 'event=state-reload-failed' && ok || bad "broken state: not logged"
rm "$tmp/state/broken.yaml"

########################################################################################
# 6. /metrics and the decision log.
"${C[@]}" "$(url /metrics)" >"$tmp/metrics"
grep -q '^# TYPE tally_admission_requests_total counter$' "$tmp/metrics" && ok || bad "metrics: no TYPE line"
v=$(awk '$1 == "tally_admission_requests_total{endpoint=\"runs\",outcome=\"denied\"}" {print $2}' "$tmp/metrics")
[ "${v:-0}" -ge 200 ] && ok || bad "metrics: runs denied = '$v'"
v=$(awk '$1 == "tally_admission_requests_total{endpoint=\"queues\",outcome=\"too_large\"}" {print $2}' "$tmp/metrics")
[ "$v" == 2 ] && ok || bad "metrics: queues too_large = '$v', want 2"
grep -q '^tally_admission_duration_seconds_bucket{endpoint="pods-resize",le="+Inf"} [1-9]' "$tmp/metrics" && ok || bad "metrics: no resize histogram"
grep -q '^tally_admission_duration_seconds_count{endpoint="runs"} [1-9]' "$tmp/metrics" && ok || bad "metrics: no histogram count"
grep -q '^tally_state_objects{kind="Queue"} 1$' "$tmp/metrics" && ok || bad "metrics: state objects"
[ "$(awk '$1 == "tally_state_reloads_total" {print $2}' "$tmp/metrics")" -ge 14 ] && ok || bad "metrics: reloads"
log_has "$tmp/main.log" 'event=decision endpoint=pods-resize uid=resize-none-over-limit kind=Pod op=UPDATE verdict=denied dry_run=false latency_us=[0-9]' \
  && ok || bad "no decision log line: $(grep -m1 event=decision "$tmp/main.log")"

########################################################################################
# 7. Certificate rotation: new connections get the new certificate, an open one keeps going.
if command -v python3 >/dev/null; then
  python3 - "$PORT" "$tmp" <<'PY' >"$tmp/py.out" 2>&1 &
import http.client, os, ssl, sys, time
port, tmp = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile=os.path.join(tmp, "a.crt"))
c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
for i in range(2):
    c.request("GET", "/healthz"); r = c.getresponse(); r.read()
    print("before", r.status, flush=True)
open(os.path.join(tmp, "py.ready"), "w").close()
while not os.path.exists(os.path.join(tmp, "py.go")):
    time.sleep(0.05)
sock = c.sock
for i in range(2):
    c.request("GET", "/healthz"); r = c.getresponse(); r.read()
    print("after", r.status, "same-socket" if c.sock is sock else "reconnected", flush=True)
PY
  py=$!
  for _ in $(seq 100); do [ -f "$tmp/py.ready" ] && break; sleep 0.05; done
fi
sleep 1.1  # the files are looked at most once a second
cp "$tmp/b.key" "$tmp/tls.key.new" && cp "$tmp/b.crt" "$tmp/tls.crt.new"
mv "$tmp/tls.key.new" "$tmp/tls.key" && mv "$tmp/tls.crt.new" "$tmp/tls.crt"
sleep 1.2
code=$(curl -sS --max-time 10 --cacert "$tmp/b.crt" -o /dev/null -w '%{http_code}' "$(url /healthz)")
[ "$code" == 200 ] && ok || bad "after rotation: the new certificate is not served (HTTP $code)"
if curl -sS --max-time 10 --cacert "$tmp/a.crt" -o /dev/null "$(url /healthz)" 2>/dev/null; then
  bad "after rotation: the old certificate is still served"
else
  ok
fi
[ "$(metric tally_tls_reloads_total)" == 1 ] && ok || bad "tls reload not counted"
C=(curl -sS --max-time 10 --cacert "$tmp/b.crt")
if [ -n "${py:-}" ]; then
  touch "$tmp/py.go"
  wait "$py"
  [ "$(grep -c '^after 200 same-socket$' "$tmp/py.out")" == 2 ] && ok || bad "open connection across rotation: $(cat "$tmp/py.out")"
fi
# A key that does not match the certificate is refused; the pair in use stays.
cp "$tmp/a.key" "$tmp/tls.key"
sleep 1.2
code=$("${C[@]}" -o /dev/null -w '%{http_code}' "$(url /healthz)")
[ "$code" == 200 ] && ok || bad "mismatched key: the server stopped serving (HTTP $code)"
[ "$(metric tally_tls_reload_failures_total)" -ge 1 ] && ok || bad "mismatched key: no failure counted"
cp "$tmp/b.key" "$tmp/tls.key"

########################################################################################
# 8. SIGTERM: graceful stop, exit 0.
kill -TERM "$MAIN_PID"
rc=124
for _ in $(seq 100); do
  if ! kill -0 "$MAIN_PID" 2>/dev/null; then wait "$MAIN_PID"; rc=$?; break; fi
  sleep 0.1
done
[ "$rc" -eq 0 ] && ok || bad "SIGTERM: exit $rc, want 0"
grep -q 'event=shutdown signal=SIGTERM' "$tmp/main.log" && ok || bad "SIGTERM: not logged"

########################################################################################
# 9. --reserve-upsizes: two upsizes that fit one at a time but not together.
rm -rf "$tmp/rstate" && mkdir "$tmp/rstate"
# Queue limit 4000m, trainer and trainer2 at 1 cpu each: 2000m of room. trainer +1000m fits alone,
# trainer2 +1500m fits alone, both together (2500m) do not.
sed 's/limit: 2000$/limit: 4000/' tests/resize/none-over-limit/state.yaml >"$tmp/rstate/state.yaml"
{ echo '---'; echo 'apiVersion: v1'; awk '/^kind: Pod$/,0' tests/resize/none-over-limit/state.yaml | sed 's/name: trainer$/name: trainer2/; s/uid: uid-trainer$/uid: uid-trainer2/; s/containerID: "containerd:\/\/trainer-main"/containerID: "containerd:\/\/trainer2-main"/'; } >>"$tmp/rstate/state.yaml"
jq '.request.uid = "up-1" | .request.object.spec.containers[0].resources.requests.cpu = "2"' \
  tests/resize/none-over-limit/review.json >"$tmp/up1.json"
jq '.request.uid = "up-2" | .request.object.metadata.name = "trainer2" | .request.oldObject.metadata.name = "trainer2"
    | .request.object.metadata.uid = "uid-trainer2" | .request.oldObject.metadata.uid = "uid-trainer2"
    | .request.object.spec.containers[0].resources.requests.cpu = "2500m"' \
  tests/resize/none-over-limit/review.json >"$tmp/up2.json"
# tally admit (no reservations): both allowed against the state.
for r in up1 up2; do
  [ "$("$TALLY" admit "$tmp/rstate" <"$tmp/$r.json" 2>/dev/null | jq -r .response.allowed)" == true ] && ok || bad "admit $r: not allowed"
done
start reserve --state "$tmp/rstate" --reserve-upsizes=30s || exit 1
R_PID=$PID
C=(curl -sS --max-time 10 --cacert "$tmp/tls.crt")
post /validate/pods-resize "$tmp/up1.json" >/dev/null
[ "$(jq -r .response.allowed "$tmp/out")" == true ] && ok || bad "reserve: first upsize not allowed ($(cat "$tmp/out"))"
[ "$(metric tally_upsize_reservations)" == 1 ] && ok || bad "reserve: no reservation shown"
post /validate/pods-resize "$tmp/up2.json" >/dev/null
[ "$(jq -r .response.allowed "$tmp/out")" == false ] && ok || bad "reserve: second upsize allowed over the limit"
jq -r .response.status.message "$tmp/out" | grep -q 'Allocated (3000m + 1500m) over limit (4000m)' && ok \
  || bad "reserve: message $(jq -r .response.status.message "$tmp/out")"
# A reload whose state still shows trainer at 1 cpu: the resize never landed, the reservation goes.
PID=$R_PID
hup
[ "$(metric tally_upsize_reservations)" == 0 ] && ok || bad "reserve: reservation not released on reload"
post /validate/pods-resize "$tmp/up2.json" >/dev/null
[ "$(jq -r .response.allowed "$tmp/out")" == true ] && ok || bad "reserve: second upsize still denied after release"
# Dry run: decided, never reserved.
jq '.request.uid = "up-1-dry" | .request.dryRun = true' "$tmp/up1.json" >"$tmp/up1dry.json"
post /validate/pods-resize "$tmp/up1dry.json" >/dev/null
[ "$(metric tally_upsize_reservations)" == 1 ] && ok || bad "reserve: dry run reserved"
kill -TERM "$R_PID"
wait "$R_PID"
rc=$?
[ "$rc" -eq 0 ] && ok || bad "reserve server: exit $rc"

########################################################################################
# 10. Usage errors.
"$TALLY" serve --state examples/cluster >/dev/null 2>&1
[ $? -eq 2 ] && ok || bad "no --tls-cert: not a usage error"
"$TALLY" serve --tls-cert "$tmp/b.crt" --tls-key "$tmp/b.key" --state /nonexistent --listen 127.0.0.1:0 2>/dev/null
[ $? -eq 1 ] && ok || bad "missing state path: not exit 1"
"$TALLY" serve --tls-cert "$tmp/b.crt" --tls-key "$tmp/a.key" --state examples/cluster --listen 127.0.0.1:0 2>"$tmp/err"
[ $? -eq 1 ] && grep -q 'does not match' "$tmp/err" && ok || bad "mismatched key at start: $(cat "$tmp/err")"
"$TALLY" serve --tls-cert "$tmp/b.crt" --tls-key "$tmp/b.key" --state examples/cluster --reserve-upsizes=soon 2>/dev/null
[ $? -eq 2 ] && ok || bad "bad --reserve-upsizes: not a usage error"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
