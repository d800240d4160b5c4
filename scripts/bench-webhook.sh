#!/usr/bin/env bash
# The webhook benchmark (issue 6): wrk on loopback, 64 connections, POSTing a pods/resize
# AdmissionReview to `tally serve` deciding against a deep queue tree, and, side by side in the
# same run, the same load against nginx (Debian package) serving a static 200 JSON over TLS with
# the same certificate. Prints three rows in scripts/bench.sh's table format (requests per second,
# p99 latency, the server's CPU microseconds per request) and is called from the end of bench.sh; it can also be run alone:
#   scripts/bench-webhook.sh            (WEBBENCH_SECONDS=10, WEBBENCH_PODS=10000)
#   WEBBENCH_VERBOSE=1 prints both wrk reports; WEBBENCH_MANAGED=1 posts the review with managedFields; WEBBENCH_PERF=FILE records a perf profile of tally.
# Then, against both servers, a load that holds a fixed rate (bench/bench_rate.c, WEBBENCH_RATE
# reviews/s, default 1000, over 8 connections; latency from when each review was due), for the
# p99 at a fixed rate (issues 13 and 16). WEBBENCH_RATE=0 leaves that part out.
#
# State and review come from bench-resize (bench/bench_resize.c): a queue tree 4 levels deep
# (2 x 5 x 10 x 20 queues), WEBBENCH_PODS Running kai-scheduler pods over the 2,000 leaves, and a
# review raising one pod from 1 to 2 cpu (allowed; every level is checked). The certificate is a
# throwaway CA and a P-256 server certificate for 127.0.0.1 made with openssl in a temp dir.
# nginx runs with its own config in that dir (`nginx -c ... -p ...`, never the system one).
# Everything listens on 127.0.0.1 only; each wrk run is bounded (WEBBENCH_SECONDS, and `timeout`);
# both servers are stopped on exit whatever happens. wrk and the servers share the machine's cores.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${WEBBENCH_SECONDS:-10}
PODS=${WEBBENCH_PODS:-10000}
CONNS=64
RATE=${WEBBENCH_RATE:-1000}

scripts/deps.sh webbench
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DTALLY_TESTS=OFF >/dev/null
cmake --build build-bench -j 2 --target tally bench-resize bench-rate >/dev/null
TALLY=$(realpath build-bench/tally)

tmp=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

# A throwaway CA and a server certificate for 127.0.0.1 signed by it; the chain is leaf, then CA.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj "/CN=tally-bench-ca" -keyout "$tmp/ca.key" -out "$tmp/ca.crt" 2>/dev/null
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -subj "/CN=127.0.0.1" -keyout "$tmp/tls.key" -out "$tmp/tls.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$tmp/ext"
openssl x509 -req -in "$tmp/tls.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial \
  -days 2 -extfile "$tmp/ext" -out "$tmp/leaf.crt" 2>/dev/null
cat "$tmp/leaf.crt" "$tmp/ca.crt" >"$tmp/tls.crt"

mkdir "$tmp/state"
build-bench/bench-resize --state "$PODS" >"$tmp/state/state.yaml"
# WEBBENCH_MANAGED=1: the review as the API server sends it, managedFields in both pods.
if [ "${WEBBENCH_MANAGED:-0}" = 1 ]; then
  build-bench/bench-resize --managed --review >"$tmp/review.json"
else
  build-bench/bench-resize --review >"$tmp/review.json"
fi

# wrk's Lua script: POST the review as JSON (the body is inlined in a long string).
{
  echo 'wrk.method = "POST"'
  echo 'wrk.headers["Content-Type"] = "application/json"'
  printf 'wrk.body = [==[%s]==]\n' "$(cat "$tmp/review.json")"
} >"$tmp/post.lua"

# start_serve LOG ARGS...: tally serve ARGS on a port the kernel picks, read back from the
# `listening` line of LOG into SERVE_PORT (run in this shell, so that its pid goes into pids).
start_serve() {
  local log=$1 pid
  shift
  "$TALLY" serve --listen 127.0.0.1:0 --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key" "$@" 2>"$log" &
  pid=$!
  pids+=("$pid")
  SERVE_PORT=
  for _ in $(seq 300); do
    SERVE_PORT=$(sed -n 's/.*event=listening .*port=\([0-9]*\).*/\1/p' "$log" | head -1)
    [ -n "$SERVE_PORT" ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "bench-webhook: tally serve $* did not start: $(tail -5 "$log")" >&2
  exit 1
}
start_serve "$tmp/tally.log" --state "$tmp/state"
TPORT=$SERVE_PORT

# nginx: its own config and prefix in $tmp, a static 200 AdmissionReview answer.
NPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
        || echo $((20000 + $$ % 20000)))
mkdir -p "$tmp/nginx/logs"
{
  [ "$(id -u)" -eq 0 ] && echo 'user root;'
  cat <<EOF
worker_processes auto;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $tmp/nginx/body;
  proxy_temp_path $tmp/nginx/proxy;
  fastcgi_temp_path $tmp/nginx/fastcgi;
  uwsgi_temp_path $tmp/nginx/uwsgi;
  scgi_temp_path $tmp/nginx/scgi;
  server {
    listen 127.0.0.1:$NPORT ssl;
    ssl_certificate $tmp/tls.crt;
    ssl_certificate_key $tmp/tls.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    keepalive_requests 10000000;
    keepalive_timeout 120s;
    client_max_body_size 6m;
    location / {
      default_type application/json;
      return 200 '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"bench-resize-1","allowed":true}}';
    }
  }
}
EOF
} >"$tmp/nginx/nginx.conf"
nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" 2>"$tmp/nginx/stderr" &
pids+=("$!")

# Both ready, and the review decided as expected (allowed) before any timing.
ready() {
  for _ in $(seq 300); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$tmp/ca.crt" "$1")" == 200 ] && return 0
    sleep 0.1
  done
  echo "bench-webhook: $1 never answered 200 ($(cat "$tmp/tally.log" "$tmp/nginx/stderr" "$tmp/nginx/logs/error.log" 2>/dev/null | tail -5))" >&2
  exit 1
}
# allowed PORT: the review is answered allowed there, before any timing.
allowed() {
  local out
  out=$(curl -sS --max-time 10 --cacert "$tmp/ca.crt" -H 'Content-Type: application/json' \
    --data-binary @"$tmp/review.json" "https://127.0.0.1:$1/validate/pods-resize")
  grep -q '"allowed": *true' <<<"$out" || { echo "bench-webhook: unexpected answer on $1: $out" >&2; exit 1; }
}
ready "https://127.0.0.1:$TPORT/readyz"
ready "https://127.0.0.1:$NPORT/"
allowed "$TPORT"
allowed "$NPORT"

# run PORT: wrk's report on stdout. --timeout 10s so that slow answers are measured, not dropped.
run() {
  timeout $((SECS + 30)) wrk -t1 -c"$CONNS" -d"${SECS}s" --timeout 10s --latency -s "$tmp/post.lua" \
    "https://127.0.0.1:$1/validate/pods-resize"
}
# rps / p99 (ms) / errors from wrk's report.
rps() { awk '/^Requests\/sec:/ { print $2 }' <<<"$1"; }
p99() {
  awk '$1 == "99%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
                     f = (u == "us") ? 0.001 : (u == "s") ? 1000 : (u == "m") ? 60000 : 1;
                     printf "%.2f", v * f }' <<<"$1"
}
errors() { grep -E 'Socket errors|Non-2xx' <<<"$1" | tr -s ' ' | paste -sd ';' - || true; }

# WEBBENCH_PERF=FILE: also record tally serve's profile (perf record -g) during its wrk run.
if [ -n "${WEBBENCH_PERF:-}" ] && command -v perf >/dev/null; then
  perf record -q -g -o "$WEBBENCH_PERF" -p "${pids[0]}" -- sleep "$SECS" >/dev/null 2>&1 &
  perfpid=$!
fi
# cpu_ticks PID: CPU time (user + system, clock ticks) of PID and of its child processes (nginx's
# workers), all threads included; read before and after each wrk run for the server's CPU per
# request, a figure that does not depend on how the two cores were shared with wrk.
cpu_ticks() {
  local p sum=0 v
  for p in "$1" $(pgrep -P "$1" 2>/dev/null || true); do
    v=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$p/stat" 2>/dev/null || echo 0)
    sum=$((sum + v))
  done
  echo "$sum"
}
# us_per_req TICKS0 TICKS1 WRK_REPORT: the server's CPU microseconds per request served.
us_per_req() {
  local reqs
  reqs=$(awk '/requests in/ { print $1 }' <<<"$3")
  awk -v a="$1" -v b="$2" -v n="$reqs" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.1f", (n > 0 ? (b - a) * 1e6 / hz / n : 0) }'
}
c0=$(cpu_ticks "${pids[0]}")
t=$(run "$TPORT")
c1=$(cpu_ticks "${pids[0]}")
[ -z "${perfpid:-}" ] || wait "$perfpid" || true
n0=$(cpu_ticks "${pids[1]}")
n=$(run "$NPORT")
n1=$(cpu_ticks "${pids[1]}")
tcpu=$(us_per_req "$c0" "$c1" "$t"); ncpu=$(us_per_req "$n0" "$n1" "$n")
for w in tally:"$t" nginx:"$n"; do
  e=$(errors "${w#*:}")
  [ -z "$e" ] || echo "bench-webhook: ${w%%:*}: $e" >&2
done
if [ -n "${WEBBENCH_VERBOSE:-}" ]; then
  printf '== tally ==\n%s\n== nginx ==\n%s\n' "$t" "$n" >&2
fi
# Server-side decision time from tally's own histogram (complete body to encoded answer).
m=$(curl -sS --max-time 10 --cacert "$tmp/ca.crt" "https://127.0.0.1:$TPORT/metrics")
awk '$1 == "tally_admission_duration_seconds_sum{endpoint=\"pods-resize\"}" { s = $2 }
     $1 == "tally_admission_duration_seconds_count{endpoint=\"pods-resize\"}" { c = $2 }
     END { if (c > 0) printf "bench-webhook: tally server-side decision time: %.2f ms mean over %d reviews\n", s * 1000 / c, c }' \
  <<<"$m" >&2

# row LABEL SIZE TALLY NGINX DIGITS: one line in bench.sh's table format, with TALLY / NGINX.
row() {
  printf '%-34s %10s %14s %14s %8s\n' "$1" "$2" "$3" "$4" \
    "$(awk -v a="$3" -v b="$4" -v d="$5" 'BEGIN { printf "%." d "f", (b > 0 ? a / b : 0) }')"
}
tr=$(rps "$t"); nr=$(rps "$n"); tp=$(p99 "$t"); np=$(p99 "$n")
size="${PODS}p/${CONNS}c"
row "webhook resize reviews (req/s, vs nginx static 200)" "$size" "$tr" "$nr" 3
row "webhook p99 latency (ms, vs nginx)" "$size" "$tp" "$np" 1
row "webhook server CPU per request (us, vs nginx)" "$size" "$tcpu" "$ncpu" 2

# The fixed-rate load: bench-rate's line for each server, and the p99 row.
fixed() {
  timeout $((SECS + 40)) build-bench/bench-rate --cacert "$tmp/ca.crt" \
    "https://127.0.0.1:$1/validate/pods-resize" "$tmp/review.json" "$RATE" "$SECS"
}
if [ "$RATE" != 0 ]; then
  ft=$(fixed "$TPORT") || echo "bench-webhook: bench-rate against tally: $ft" >&2
  fn=$(fixed "$NPORT") || echo "bench-webhook: bench-rate against nginx: $fn" >&2
  echo "bench-webhook: fixed rate, tally: $ft" >&2
  echo "bench-webhook: fixed rate, nginx: $fn" >&2
fi
q() { sed -n "s/.* $2=\([0-9.]*\).*/\1/p" <<<"$1"; }
if [ "$RATE" != 0 ]; then
  for f in p50_ms p99_ms; do
    row "webhook ${f%_ms} at ${RATE}/s (ms, vs nginx)" "${PODS}p/8c" "$(q "$ft" "$f")" "$(q "$fn" "$f")" 1
  done
fi

# WEBBENCH_LIVE=1 (the default; 0 leaves it out): the same reviews against `tally serve --kubeconfig`,
# the state held by the test API server (tests/kube/apiserver.py) and followed by watches: a review
# then decides on a fork of the live state (docs/live.md). Its rows compare with nginx's of this run.
[ "${WEBBENCH_LIVE:-1}" != 0 ] || exit 0
mkdir "$tmp/api"
python3 tests/kube/apiserver.py --dir "$tmp/api" >"$tmp/api.log" 2>&1 &
pids+=("$!")
for _ in $(seq 100); do [ -s "$tmp/api/ready.json" ] && break; sleep 0.1; done
[ -s "$tmp/api/ready.json" ] || { echo "bench-webhook: the test API server did not start: $(cat "$tmp/api.log")" >&2; exit 1; }
API_URL=$(jq -r .url "$tmp/api/ready.json")
API_CA=$(jq -r .ca "$tmp/api/ready.json")
KC="$tmp/api/kubeconfig"
# kubectl parses the YAML state (as a user's `kubectl apply` would); the objects go in with one put.
kubectl --kubeconfig "$KC" create --validate=false --dry-run=client -o json -f "$tmp/state/state.yaml" |
  jq -s '{objects: [.[] | if .kind == "List" then .items[] else . end]}' >"$tmp/put.json"
curl -sf --max-time 120 --cacert "$API_CA" -X POST -H 'Content-Type: application/json' \
  --data-binary @"$tmp/put.json" "$API_URL/_test/put" >/dev/null ||
  { echo "bench-webhook: could not put the state into the test API server" >&2; exit 1; }
start_serve "$tmp/live.log" --kubeconfig "$KC"
LPORT=$SERVE_PORT
ready "https://127.0.0.1:$LPORT/readyz"
allowed "$LPORT"
l=$(run "$LPORT")
e=$(errors "$l")
[ -z "$e" ] || echo "bench-webhook: tally (live): $e" >&2
row "webhook resize reviews, live state (req/s, vs nginx)" "$size" "$(rps "$l")" "$nr" 3
row "webhook p99 latency, live state (ms, vs nginx)" "$size" "$(p99 "$l")" "$np" 1
if [ "$RATE" != 0 ]; then
  fl=$(fixed "$LPORT") || echo "bench-webhook: bench-rate against tally (live): $fl" >&2
  echo "bench-webhook: fixed rate, tally (live): $fl" >&2
  row "webhook p99 at ${RATE}/s, live state (ms, vs nginx)" "${PODS}p/8c" "$(q "$fl" p99_ms)" "$(q "$fn" p99_ms)" 1
fi
